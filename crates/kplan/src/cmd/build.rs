//! `kplan build`: compiles a kernel file for every target with the real compilers.

use super::Ctx;
use anyhow::Context;
use kplan_build::{BuildOptions, BuildTarget, Status, TargetResult};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// CUDA/HIP single-source file (.cu, .hip, .cpp) or Triton file (.py).
    pub file: PathBuf,
    /// Comma-separated targets (sm_80, sm_90a, gfx90a, gfx942, gfx1100, cpu-x86_64-avx2, or a
    /// device such as h100); default: `targets` of the nearest kplan.toml, else this host's CPU
    /// architectures and every GPU architecture whose compiler is installed.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "spec",
        value_name = "LIST"
    )]
    pub targets: Vec<String>,
    /// Take the targets from a kernel spec's `[backends] targets`.
    #[arg(long, value_name = "SPEC.toml")]
    pub spec: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Preprocessor definition for every compile (repeatable); for .py files, a Triton override.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// Extra include directory (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Per-compile time limit in seconds; a compiler still running then is killed.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub timeout: u64,
    /// Keep each target's object and device assembly under DIR/<target>/.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also list each kernel's numbers under its target (human format).
    #[arg(long)]
    pub kernels: bool,
    /// Threads per block assumed by the occupancy estimate.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub block_threads: u32,
    /// Exit with code 1 when any target is skipped (its compiler is absent), as KPLAN_STRICT=1
    /// does.
    #[arg(long)]
    pub strict: bool,
}

/// Targets when none are given: `targets` of the nearest `kplan.toml`, else the host's CPU
/// architecture and every GPU architecture whose compiler is installed.
fn default_targets<'k>(
    ctx: &'k Ctx,
    file: &std::path::Path,
) -> anyhow::Result<Vec<&'k kplan_kb::Arch>> {
    let kb = ctx.kb();
    if let Some(cfg_path) = kplan_scan::find_config(&[file.to_path_buf()]) {
        let cfg = kplan_scan::load_config(&cfg_path)?;
        if let Some(names) = cfg.targets {
            let mut out: Vec<&kplan_kb::Arch> = Vec::new();
            for n in &names {
                let r = kb.resolve(n).map_err(|e| {
                    let at = cfg.target_locations.iter().find(|t| &t.name == n);
                    anyhow::anyhow!(
                        "{}:{}:{}: unknown target `{}` in `targets`{}",
                        cfg_path.display(),
                        at.map_or(1, |t| t.line),
                        at.map_or(1, |t| t.column),
                        e.name,
                        e.suggestion
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default()
                    )
                })?;
                if !out.iter().any(|a| a.id == r.arch.id) {
                    out.push(r.arch);
                }
            }
            return Ok(out);
        }
    }
    let host = match std::env::consts::ARCH {
        "x86_64" => "cpu-x86_64",
        "aarch64" => "cpu-aarch64",
        _ => "",
    };
    let nvidia = matches!(kplan_build::toolchain::find_nvcc(), Ok(Some(_)));
    let amd = matches!(kplan_build::toolchain::find_hip_clang(), Ok(Some(_)));
    Ok(kb
        .archs
        .iter()
        .filter(|a| match a.vendor {
            kplan_kb::Vendor::Cpu => !host.is_empty() && a.id.starts_with(host),
            kplan_kb::Vendor::Nvidia => nvidia,
            kplan_kb::Vendor::Amd => amd,
            _ => false,
        })
        .collect())
}

/// Compiler output lines shown per target in the human report.
const DIAGNOSTIC_LINES: usize = 20;

/// A CUDA file that includes neither a HIP runtime header nor kplan's portability header
/// cannot compile for HIP or the CPU as it is: the reason, said before any compiler output.
fn portability_note(
    file: &std::path::Path,
    head: &[u8],
    archs: &[&kplan_kb::Arch],
) -> Option<String> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(ext, "cu" | "cuh") {
        return None;
    }
    let non_nvidia = archs
        .iter()
        .any(|a| !matches!(a.vendor, kplan_kb::Vendor::Nvidia));
    let text = std::str::from_utf8(head).unwrap_or("");
    let portable = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#')
            && l.contains("include")
            && (l.contains("hip_runtime") || l.contains("kplan"))
    });
    (non_nvidia && !portable).then(|| {
        format!(
            "note: {} includes neither a HIP runtime header (<hip/hip_runtime.h>) nor kplan's portability header, so the AMD and CPU targets cannot compile it as it is; include the header `kplan header --targets ...` writes (or port it to HIP), or build only NVIDIA targets with --targets sm_90a",
            file.display()
        )
    })
}

fn parse_define(s: &str) -> anyhow::Result<(String, Option<String>)> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (s, None),
    };
    let ok = !name.is_empty()
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    anyhow::ensure!(
        ok,
        "-D {s}: expected NAME or NAME=VALUE with NAME a C identifier"
    );
    Ok((name.to_string(), value))
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    if args.file.is_dir() {
        anyhow::bail!(
            "{}: is a directory; expected one kernel source file (.cu, .hip, .cpp, .py)",
            args.file.display()
        );
    }
    if !args.file.is_file() {
        anyhow::bail!("{}: no such file", args.file.display());
    }
    let head = {
        use std::io::Read;
        let mut buf = Vec::with_capacity(8192);
        std::fs::File::open(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?
            .take(8192)
            .read_to_end(&mut buf)
            .with_context(|| format!("cannot read {}", args.file.display()))?;
        buf
    };
    if head.contains(&0) || std::str::from_utf8(&head[..head.len().saturating_sub(4)]).is_err() {
        anyhow::bail!(
            "{}: not a text file (binary content); expected one kernel source file (.cu, .hip, .cpp, .py)",
            args.file.display()
        );
    }
    anyhow::ensure!(args.timeout > 0, "--timeout must be at least 1 second");
    anyhow::ensure!(args.block_threads > 0, "--block-threads must be at least 1");
    let mut archs = super::header::resolve_targets(ctx, &args.targets, args.spec.as_deref())?;
    if archs.is_empty() {
        archs = default_targets(ctx, &args.file)?;
    }
    if let Some(n) = portability_note(&args.file, &head, &archs) {
        eprintln!("{n}");
    }
    let mut opts = BuildOptions::new(archs.iter().map(|a| BuildTarget::from_arch(a)).collect());
    opts.defines = args
        .define
        .iter()
        .map(|d| parse_define(d))
        .collect::<anyhow::Result<_>>()?;
    opts.include_dirs = args.include.clone();
    opts.timeout = Duration::from_secs(args.timeout);
    opts.out_dir = args.out_dir.clone();
    opts.header = kplan_gen::HeaderConfig::from_archs(&archs);
    opts.block_threads = args.block_threads;
    if let Some(d) = &opts.out_dir {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let progress = ctx.out.progress_bar(
        "building targets".into(),
        opts.targets.len(),
        args.format == Format::Json,
    );
    let results = kplan_build::build_with_progress(&args.file, &opts, ctx.kb(), &|done, total| {
        progress.set(done, total)
    })?;
    drop(progress);
    // a kernel file that cannot even be loaded (a Python syntax error) is bad input, the same for
    // every target: one error, exit 2, not one failure per target
    if let Some(first) = results.first() {
        let load_error = |r: &TargetResult| {
            r.status == Status::Failed && r.diagnostics.contains("cannot load the kernel file")
        };
        if load_error(first)
            && results
                .iter()
                .all(|r| load_error(r) && r.diagnostics == first.diagnostics)
        {
            anyhow::bail!("{}", first.diagnostics.trim_end());
        }
    }
    let text = match args.format {
        Format::Json => kplan_build::results_json(&results),
        Format::Human => render_human(&args.file, &results, args.kernels),
    };
    super::write_output(None, &text)?;
    let skipped = results
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    let failed = results.iter().any(|r| r.status == Status::Failed);
    if skipped > 0 && !failed && super::strict(args.strict) {
        eprintln!("error: {skipped} targets were skipped and --strict (or KPLAN_STRICT=1) is set");
        return Ok(1);
    }
    Ok(if failed { 1 } else { 0 })
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// A table (one row per target), then each target's diagnostics.
fn render_human(file: &std::path::Path, results: &[TargetResult], kernels: bool) -> String {
    let head = [
        "target",
        "status",
        "compiler",
        "regs",
        "sgprs",
        "shared",
        "spill",
        "wave",
        "occupancy",
        "seconds",
    ];
    let rows: Vec<[String; 10]> = results
        .iter()
        .map(|r| {
            [
                r.target.clone(),
                r.status.as_str().to_string(),
                r.compiler.clone().unwrap_or_else(|| "-".into()),
                opt(r.registers),
                opt(r.sgprs),
                opt(r.shared_bytes),
                opt(r.spill_bytes),
                opt(r.wave_size),
                r.occupancy
                    .map(|o| format!("{:.0}%", o * 100.0))
                    .unwrap_or_else(|| "-".into()),
                format!("{:.2}", r.seconds),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row.iter()) {
            *w = (*w).max(c.len());
        }
    }
    let mut s = format!("kplan build {}\n", file.display());
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(&format!("{:<w$}", c, w = width[i]));
        }
        l.trim_end().to_string() + "\n"
    };
    s.push_str(&line(head.to_vec()));
    for row in &rows {
        s.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    if kernels {
        for r in results.iter().filter(|r| !r.kernels.is_empty()) {
            s.push_str(&format!("\n{} kernels:\n", r.target));
            for k in &r.kernels {
                s.push_str(&format!(
                    "  {}  regs {}  sgprs {}  shared {}  spill {}  wave {}\n",
                    k.name,
                    opt(k.registers),
                    opt(k.sgprs),
                    opt(k.shared_bytes),
                    opt(k.spill_bytes),
                    opt(k.wave_size)
                ));
            }
        }
    }
    for r in results {
        if !r.diagnostics.is_empty() {
            s.push_str(&format!("\n{} ({}):\n", r.target, r.status.as_str()));
            // the first lines say what went wrong; the rest is in --format json
            let total = r.diagnostics.lines().count();
            for l in r.diagnostics.lines().take(DIAGNOSTIC_LINES) {
                s.push_str(&format!("  {l}\n"));
            }
            if total > DIAGNOSTIC_LINES {
                s.push_str(&format!(
                    "  ... {} more lines (--format json has the full compiler output)\n",
                    total - DIAGNOSTIC_LINES
                ));
            }
        }
    }
    let failed = results
        .iter()
        .filter(|r| r.status == Status::Failed)
        .count();
    let skipped = results
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    let ok = results.len() - failed - skipped;
    s.push_str(&format!("\n{ok} ok, {failed} failed, {skipped} skipped\n"));
    s
}
