//! `kplan new SPEC.toml DIR [--force]`, `kplan new --plan PLAN.json DIR`: a kernel project for
//! the plan's strategy (kplan-new).

use super::Ctx;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// `SPEC.toml DIR`: the kernel spec and the project directory to write; with `--plan`, only
    /// `DIR`.
    #[arg(value_name = "SPEC DIR", num_args = 1..=2, required = true)]
    pub paths: Vec<PathBuf>,
    /// Start from a plan written by `kplan plan --format json` instead of a spec.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// Replace the project's files where they already exist in DIR (other files are kept).
    #[arg(long)]
    pub force: bool,
    /// Self-hosted runner label(s) for the workflow's run legs, as `kplan ci --runner`.
    #[arg(long, value_name = "KIND=LABEL")]
    pub runner: Vec<String>,
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    let (plan, dir, shown, mut runners) = match (&args.plan, args.paths.as_slice()) {
        (Some(p), [dir]) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read plan {}", p.display()))?;
            let plan = kplan_new::plan_from_json(&text, &p.display().to_string())?;
            (plan, dir.clone(), p.display().to_string(), BTreeMap::new())
        }
        (Some(_), _) => anyhow::bail!(
            "with --plan, give only the project directory: kplan new --plan PLAN.json DIR"
        ),
        (None, [spec, dir]) => {
            let shown = spec.display().to_string();
            let (text, spec_v) = match super::read_spec(kb, spec)? {
                Ok(t) => t,
                Err(code) => return Ok(code),
            };
            if !ctx.out.quiet {
                for n in &spec_v.notes {
                    eprint!("{}", n.render(&shown, &text));
                }
            }
            let plan =
                kplan_plan::build_plan(&spec_v, kb, &kplan_plan::PlanInputs::default());
            (plan, dir.clone(), shown, spec_v.ci_runners.clone())
        }
        (None, _) => anyhow::bail!("expected a spec and a project directory: kplan new SPEC.toml DIR (or kplan new --plan PLAN.json DIR)"),
    };
    for r in &args.runner {
        match r.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                runners.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => anyhow::bail!("--runner {r}: expected KIND=LABEL (e.g. gfx942=mi300x)"),
        }
    }
    let opts = kplan_new::Options {
        source_path: shown,
        runners,
        kplan_version: env!("CARGO_PKG_VERSION").to_string(),
        kplan_rev: option_env!("KPLAN_GIT_REV").map(str::to_string),
    };
    let project = kplan_new::generate(&plan, kb, &opts)?;
    let written = kplan_new::write_project(&project, &dir, args.force)?;
    if !ctx.out.quiet {
        eprintln!(
            "wrote {}: {} files, a {} project for `{}` ({}, verdict {}, strategy {})",
            dir.display(),
            written.len(),
            project.kind,
            plan.kernel.name,
            project.family,
            plan.verdict.decision.as_str(),
            plan.strategy.chosen
        );
        for n in &project.notes {
            eprintln!("note: {n}");
        }
    }
    Ok(0)
}
