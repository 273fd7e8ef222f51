//! `kplan ci SPEC.toml [-o FILE] [--runner KIND=LABEL]...`: the plan's CI matrix (section 7) as
//! a GitHub Actions workflow.

use super::{read_spec, write_output, Ctx};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The kernel spec (TOML); docs/plan.md documents every key.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Write the workflow to FILE (atomically) instead of stdout, e.g.
    /// `.github/workflows/kplan.yml`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Self-hosted runner label(s) for the run legs of one kind: an architecture (`gfx942`), a
    /// spec target name (`mi300x`) or a vendor (`amd`); LABEL may list several, comma-separated.
    /// Repeatable; overrides the spec's `[ci] runners`. Default label: `self-hosted, linux, ARCH`.
    #[arg(long, value_name = "KIND=LABEL")]
    pub runner: Vec<String>,
    /// The kplan git revision (40 hex digits) the workflow builds and runs. Default: the commit
    /// this kplan was built from, where known; else the workflow reads the repository variable
    /// `KPLAN_REV`.
    #[arg(long, value_name = "REV")]
    pub kplan_rev: Option<String>,
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    let spec = match read_spec(kb, &args.spec)? {
        Ok((_, spec)) => spec,
        Err(code) => return Ok(code),
    };
    let shown = args.spec.display().to_string();
    let mut runners: BTreeMap<String, String> = spec.ci_runners.clone();
    for r in &args.runner {
        match r.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                runners.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => anyhow::bail!("--runner {r}: expected KIND=LABEL (e.g. gfx942=mi300x)"),
        }
    }
    let plan = kplan_plan::build_plan(&spec, kb, &kplan_plan::PlanInputs::default());
    let unused = kplan_plan::render::workflow::unused_runner_keys(&plan, &runners);
    if !unused.is_empty() {
        let kinds: Vec<String> = kplan_plan::render::workflow::runner_kinds(&plan)
            .into_iter()
            .flatten()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        anyhow::bail!(
            "runner kind {} matches no leg that needs a self-hosted runner; expected one of: {}",
            unused
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if kinds.is_empty() {
                "(none: every leg runs on hosted runners)".to_string()
            } else {
                kinds.join(", ")
            }
        );
    }
    let kplan_rev = match args.kplan_rev {
        Some(r) if r.len() == 40 && r.chars().all(|c| c.is_ascii_hexdigit()) => {
            Some(r.to_ascii_lowercase())
        }
        Some(r) => anyhow::bail!("--kplan-rev {r}: expected a full git commit id (40 hex digits)"),
        None => option_env!("KPLAN_GIT_REV").map(str::to_string),
    };
    let opts = kplan_plan::render::WorkflowOptions {
        spec_path: shown,
        runners,
        kplan_version: env!("CARGO_PKG_VERSION").to_string(),
        kplan_rev,
    };
    write_output(
        args.output.as_deref(),
        &kplan_plan::render::workflow(&plan, &opts),
    )?;
    Ok(0)
}
