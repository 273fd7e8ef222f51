use super::Ctx;

#[derive(clap::Args)]
pub struct TargetsArgs {}
#[derive(clap::Args)]
pub struct FeaturesArgs {}

pub fn targets(_ctx: &Ctx, _args: TargetsArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan targets` is not implemented yet")
}
pub fn features(_ctx: &Ctx, _args: FeaturesArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan features` is not implemented yet")
}
