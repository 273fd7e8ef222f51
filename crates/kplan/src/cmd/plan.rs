use super::Ctx;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_ctx: &Ctx, _args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan plan` is not implemented yet")
}
