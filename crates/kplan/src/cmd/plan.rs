//! `kplan plan SPEC.toml [--format human|json] [-o FILE] [--source DIR]`

use super::{read_spec, write_output, Ctx};
use anyhow::Context;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Markdown, for design reviews (also accepted as `md` and `markdown`).
    #[value(alias = "md", alias = "markdown")]
    Human,
    /// JSON (schema: docs/plan.schema.json).
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The kernel spec (TOML); docs/plan.md documents every key.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Write the plan to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Scan existing CUDA/HIP source and add what it uses to the risk register, with file:line.
    #[arg(long, value_name = "DIR")]
    pub source: Vec<PathBuf>,
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    let kb = ctx.kb();
    let (text, spec) = match read_spec(kb, &args.spec)? {
        Ok(read) => read,
        Err(code) => return Ok(code),
    };
    // Keys and devices kplan accepted but does not use: a warning each; the plan lists them too.
    for n in &spec.notes {
        eprint!("{}", n.render(&args.spec.display().to_string(), &text));
    }
    let mut inputs = kplan_plan::PlanInputs::default();
    if !args.source.is_empty() {
        for p in &args.source {
            if !p.exists() {
                anyhow::bail!("--source {}: no such file or directory", p.display());
            }
        }
        let inv = kplan_scan::inventory(&args.source, &spec.targets, kb).with_context(|| {
            format!(
                "cannot scan {}",
                args.source
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        inputs.findings = Some(
            inv.items
                .into_iter()
                .map(|i| kplan_plan::SourceFinding {
                    feature: i.feature,
                    rule: i.rule,
                    count: i.count,
                    locations: i
                        .locations
                        .iter()
                        .map(|l| format!("{}:{}:{}", l.path.display(), l.line, l.column))
                        .collect(),
                })
                .collect(),
        );
    }
    let plan = kplan_plan::build_plan(&spec, kb, &inputs);
    // `-o plan.md` also writes the roofline chart beside it (plan.svg), linked from section 8
    let chart = match (&args.output, args.format) {
        (Some(o), Format::Human) if o.extension().is_some_and(|e| e == "md") => {
            Some(o.with_extension("svg"))
        }
        _ => None,
    };
    let chart_name = chart
        .as_ref()
        .and_then(|c| c.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let out = match args.format {
        Format::Human => kplan_plan::render::markdown_with_chart(&plan, chart_name.as_deref()),
        Format::Json => kplan_plan::render::json(&plan),
    };
    if let Some(c) = &chart {
        write_output(Some(c), &kplan_plan::render::roofline_svg(&plan))?;
    }
    write_output(args.output.as_deref(), &out)?;
    if let (Some(o), false) = (&args.output, ctx.out.quiet) {
        // the plan went to a file: say what is in it
        let targets: Vec<&str> = plan
            .backend_matrix
            .iter()
            .map(|b| b.target.as_str())
            .collect();
        let high = plan.risks.iter().filter(|r| r.severity == "high").count();
        eprintln!(
            "wrote {}{}: {} ({}), verdict {}, {} targets ({}), {} risks ({high} high)",
            o.display(),
            chart
                .as_ref()
                .map(|c| format!(" and its roofline chart {}", c.display()))
                .unwrap_or_default(),
            plan.kernel.name,
            plan.kernel.op,
            plan.verdict.decision.as_str(),
            targets.len(),
            targets.join(", "),
            plan.risks.len(),
        );
    }
    Ok(0)
}
