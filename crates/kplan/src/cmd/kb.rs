//! `kplan targets` and `kplan features`: the knowledge base, listed or shown one entry at a
//! time, as text or JSON. Rendering lives in `kplan_kb::render`.

use super::{write_output, Ctx};
use kplan_kb::render;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    #[default]
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct TargetsArgs {
    #[command(subcommand)]
    pub command: Option<TargetsCommand>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
    pub format: Format,
}

#[derive(clap::Subcommand)]
pub enum TargetsCommand {
    /// Every fact of one architecture or device (id or alias, e.g. gfx942, h200, rx-7900-xtx)
    /// with its source, its devices or architecture, and feature availability.
    Show {
        /// Architecture id, device id, or alias.
        name: String,
    },
}

#[derive(clap::Args)]
pub struct FeaturesArgs {
    #[command(subcommand)]
    pub command: Option<FeaturesCommand>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
    pub format: Format,
}

#[derive(clap::Subcommand)]
pub enum FeaturesCommand {
    /// Availability of one feature on every architecture, with minimum toolchain, caveats,
    /// sources and the software fallback.
    Show {
        /// Feature id, e.g. wgmma, fp8-matrix, warp-reduce.
        id: String,
    },
}

#[derive(clap::Args)]
pub struct OpsArgs {
    #[command(subcommand)]
    pub command: Option<OpsCommand>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
    pub format: Format,
}

#[derive(clap::Subcommand)]
pub enum OpsCommand {
    /// One op class: libraries per backend (with minimum versions where known), algorithm
    /// families and when each is right, op-specific risks, each with its source.
    Show {
        /// Op class, e.g. scan, spmv, attention.
        name: String,
    },
}

pub fn ops(ctx: &Ctx, args: OpsArgs) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    match args.command {
        None => emit(
            args.format,
            || render::ops_human(kb),
            || render::ops_json(kb),
        ),
        Some(OpsCommand::Show { name }) => {
            let n = name.trim().to_ascii_lowercase();
            let o = kb.op_info(&n).ok_or_else(|| {
                let hint = kplan_kb::closest(&n, kb.ops.iter().map(|o| o.id.as_str()))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                anyhow::anyhow!("unknown op class `{name}`{hint}; `kplan ops` lists them")
            })?;
            emit(
                args.format,
                || render::op_show_human(kb, o),
                || render::op_show_json(o),
            )
        }
    }
}

fn emit(
    format: Format,
    human: impl FnOnce() -> String,
    json: impl FnOnce() -> serde_json::Value,
) -> anyhow::Result<u8> {
    let text = match format {
        Format::Human => human(),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json())?;
            s.push('\n');
            s
        }
    };
    write_output(None, &text)?;
    Ok(0)
}

pub fn targets(ctx: &Ctx, args: TargetsArgs) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    match args.command {
        None => emit(
            args.format,
            || render::targets_human(kb),
            || render::targets_json(kb),
        ),
        Some(TargetsCommand::Show { name }) => {
            let r = kb.resolve(&name)?;
            emit(
                args.format,
                || render::target_show_human(kb, &r),
                || render::target_show_json(kb, &r),
            )
        }
    }
}

pub fn features(ctx: &Ctx, args: FeaturesArgs) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    match args.command {
        None => emit(
            args.format,
            || render::features_human(kb),
            || render::features_json(kb),
        ),
        Some(FeaturesCommand::Show { id }) => {
            let f = kb.feature(id.trim()).ok_or_else(|| {
                let hint = kb
                    .suggest_feature(&id)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                anyhow::anyhow!("unknown feature `{id}`{hint}; `kplan features` lists them")
            })?;
            emit(
                args.format,
                || render::feature_show_human(kb, f),
                || render::feature_show_json(kb, f),
            )
        }
    }
}
