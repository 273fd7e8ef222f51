use super::Ctx;

#[derive(clap::Args)]
pub struct Args {}
#[derive(clap::Args)]
pub struct RulesArgs {}
#[derive(clap::Args)]
pub struct ExplainArgs {}

pub fn run(_ctx: &Ctx, _args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan scan` is not implemented yet")
}
pub fn rules(_ctx: &Ctx, _args: RulesArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan rules` is not implemented yet")
}
pub fn explain(_ctx: &Ctx, _args: ExplainArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`kplan explain` is not implemented yet")
}
