//! `kplan header`: writes the portability header for a target set.

use super::Ctx;
use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Comma-separated targets (architectures, devices or aliases: sm_90a, gfx942, h100,
    /// cpu-x86_64-avx2); default: every backend.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "spec",
        value_name = "LIST"
    )]
    pub targets: Vec<String>,
    /// Take the targets from a kernel spec's `[backends]` (`targets` and `devices`), read by the
    /// same parser as `kplan plan`.
    #[arg(long, value_name = "SPEC.toml")]
    pub spec: Option<PathBuf>,
    /// Write the header to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format: the header's C++ text (accepted for the same `--format human` as every
    /// verb).
    #[arg(long, value_enum, default_value_t)]
    pub format: super::TextFormat,
}

/// Resolves `--targets` / `--spec` to KB architectures (deduplicated, in order). Empty when
/// neither was given. Unknown names are errors that suggest the closest known name.
pub fn resolve_targets<'kb>(
    ctx: &'kb Ctx,
    targets: &[String],
    spec: Option<&std::path::Path>,
) -> anyhow::Result<Vec<&'kb kplan_kb::Arch>> {
    let kb = ctx.kb();
    let mut out: Vec<&kplan_kb::Arch> = Vec::new();
    let mut push = |a: &'kb kplan_kb::Arch| {
        if !out.iter().any(|b| b.id == a.id) {
            out.push(a);
        }
    };
    if let Some(spec) = spec {
        let text = std::fs::read_to_string(spec)
            .with_context(|| format!("cannot read spec {}", spec.display()))?;
        let names = kplan_plan::parse_spec_targets(&text, kb).map_err(|e| {
            let (line, col) = e.line_col(&text);
            let hint = e
                .suggestion
                .as_ref()
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            anyhow::anyhow!("{}:{line}:{col}: {}{hint}", spec.display(), e.message)
        })?;
        for t in names {
            let r = kb
                .resolve(&t)
                .map_err(|e| anyhow::anyhow!("{}: {e}", spec.display()))?;
            push(r.arch);
        }
    } else {
        for name in targets.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let r = kb.resolve(name).context("--targets")?;
            push(r.arch);
        }
    }
    Ok(out)
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    let archs = resolve_targets(ctx, &args.targets, args.spec.as_deref())?;
    let cfg = if archs.is_empty() {
        kplan_gen::HeaderConfig::all()
    } else {
        kplan_gen::HeaderConfig::from_archs(&archs)
    };
    anyhow::ensure!(
        cfg.cuda || cfg.hip() || cfg.host,
        "none of the targets ({}) has a backend in the header: it covers NVIDIA, AMD and CPU targets",
        cfg.targets.join(", ")
    );
    let text = match args.format {
        super::TextFormat::Human => kplan_gen::render_header(&cfg),
    };
    super::write_output(args.output.as_deref(), &text)?;
    Ok(0)
}
