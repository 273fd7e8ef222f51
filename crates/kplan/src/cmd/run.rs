use super::Ctx;

#[derive(clap::Args)]
pub struct VerifyArgs {}
#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn verify(_ctx: &Ctx, _args: VerifyArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan verify` is not implemented yet")
}
pub fn bench(_ctx: &Ctx, _args: BenchArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan bench` is not implemented yet")
}
