//! `kplan verify` and `kplan bench`: run the reference kernels (or a user's copy of one) on the
//! CPU backend or a CUDA GPU, against the CPU reference and the roofline.

use super::{write_output, Ctx};
use anyhow::{bail, Context};
use kplan_run::cpu::HostExecutor;
use kplan_run::cuda::CudaExecutor;
use kplan_run::exec::Executor;
use kplan_run::kernels::{portability_header, source_file, KernelSources, Shape};
use kplan_run::reference::{DType, Op};
use kplan_run::verify::{parse_sizes, verify as run_verify, Status, VerifyPlan, VerifyReport};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunBackend {
    /// The kernel source compiled by the host C++ compiler (one lane per warp).
    Cpu,
    /// A harness's kernel on the CPU with W-lane warps (`--warp`), every GPU thread a fiber.
    CpuSimt,
    /// An NVIDIA GPU through libcuda + NVRTC (dynamic loading).
    Cuda,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// A harness file (HARNESS.toml: any kernel against its CPU reference; docs/verify.md), or
    /// kplan's kernels by name: reduce_sum, softmax, rmsnorm, add, quantize_fp8, `all`, a path to
    /// one of their .cu files (a modified copy keeping the entry points), or a Triton kernel (.py)
    pub kernel: String,
    /// Warp widths for --backend cpu-simt, comma-separated (1, 2, 4, 8, 16, 32, 64); every case
    /// runs at each. Default: 32,64
    #[arg(long)]
    pub warp: Option<String>,
    /// Default: cpu-simt for a harness file, cpu otherwise
    #[arg(long, value_enum)]
    pub backend: Option<RunBackend>,
    /// Comma-separated sizes: N for reduce_sum/add, ROWSxCOLS (or COLS, three rows) for
    /// softmax/rmsnorm; expressions like 2^20+7 are accepted. Default: the edge-case set. For a
    /// harness: NAME=V1,V2[;NAME=...] replaces those [params] (a bare list when it has one)
    #[arg(long)]
    pub sizes: Option<String>,
    /// Storage type to check (default: both fp32 and bf16)
    #[arg(long)]
    pub dtype: Option<String>,
    /// Directory holding kernel sources and tiles.toml to use instead of the built-in ones
    #[arg(long)]
    pub kernels: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Write the report here instead of stdout
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when the check is skipped (no compiler, no GPU), as KPLAN_STRICT=1 does.
    #[arg(long)]
    pub strict: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Kernel: reduce_sum, softmax, rmsnorm, add, quantize_fp8 or `all`
    pub kernel: String,
    #[arg(long, value_enum, default_value = "cuda")]
    pub backend: RunBackend,
    /// Comma-separated sizes (as for verify). Default: the goal shapes
    #[arg(long)]
    pub sizes: Option<String>,
    /// Storage type (default: per shape, as the goals name them)
    #[arg(long)]
    pub dtype: Option<String>,
    /// Timed runs per case (median reported)
    #[arg(long, default_value_t = 50)]
    pub reps: usize,
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
    /// Also time the alternative configurations listed under [[bench.*]] in tiles.toml
    #[arg(long)]
    pub alternatives: bool,
    #[arg(long)]
    pub kernels: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when the benchmark is skipped (no GPU), as KPLAN_STRICT=1 does.
    #[arg(long)]
    pub strict: bool,
}

fn parse_dtypes(d: &Option<String>) -> anyhow::Result<Option<Vec<DType>>> {
    match d {
        None => Ok(None),
        Some(s) => {
            let mut v = Vec::new();
            for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                v.push(
                    DType::parse(part).with_context(|| {
                        format!("unknown dtype `{part}` (expected fp32 or bf16)")
                    })?,
                );
            }
            if v.is_empty() {
                bail!("--dtype given without a value (expected fp32 or bf16)");
            }
            Ok(Some(v))
        }
    }
}

/// Resolves KERNEL to (op, sources). A path to a .cu file replaces that kernel's source.
fn resolve_kernel(
    kernel: &str,
    kernels_dir: &Option<PathBuf>,
) -> anyhow::Result<(Vec<Op>, KernelSources)> {
    let path = Path::new(kernel);
    let from_file = kernel.ends_with(".cu");
    let (header, _) = portability_header()?;
    let mut sources = match kernels_dir {
        Some(d) => {
            if !d.is_dir() {
                bail!("--kernels {}: not a directory", d.display());
            }
            let known: Vec<&str> = kplan_run::kernels::SOURCES
                .iter()
                .map(|(n, _)| *n)
                .collect();
            if !known.iter().any(|n| d.join(n).is_file()) {
                bail!(
                    "--kernels {}: holds none of the kernel files ({}); the built-in kernels are not used in its place",
                    d.display(),
                    known.join(", ")
                );
            }
            KernelSources::from_dir(d, header)?
        }
        None => KernelSources::builtin(header),
    };
    if from_file {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let op = Op::parse(stem).with_context(|| {
            format!(
                "{kernel}: cannot tell which kernel this is (the file name must be reduce_sum.cu, softmax.cu, rmsnorm.cu, add.cu or quantize_fp8.cu, with the same entry points)"
            )
        })?;
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {kernel}"))?;
        sources.set(source_file(op), text);
        if let Some(helpers) = path
            .parent()
            .map(|p| p.join("kplan_kernels.h"))
            .filter(|p| p.is_file())
        {
            sources.set("kplan_kernels.h", std::fs::read_to_string(&helpers)?);
        }
        return Ok((vec![op], sources));
    }
    if kernel == "all" {
        return Ok((Op::ALL.to_vec(), sources));
    }
    let op =
        Op::parse(kernel).ok_or_else(|| kplan_run::RunError::UnknownKernel(kernel.to_string()))?;
    Ok((vec![op], sources))
}

fn human_verify(r: &VerifyReport) -> String {
    let mut s = String::new();
    if r.status == Status::Skipped {
        s.push_str(&format!(
            "{} on {}: skipped: {}\n",
            r.kernel,
            r.backend,
            r.skip.as_ref().map_or("", |k| k.reason.as_str())
        ));
        return s;
    }
    s.push_str(&format!("{} on {} ({})\n", r.kernel, r.backend, r.device));
    s.push_str(&format!("  configurations: {}\n", r.configs.join(", ")));
    let mut worst: Option<&kplan_run::verify::CaseResult> = None;
    for c in r.cases.iter().filter(|c| c.passed) {
        if worst.map_or(true, |w| {
            c.max_rel_err > w.max_rel_err && c.max_rel_err.is_finite()
        }) {
            worst = Some(c);
        }
    }
    for c in r.cases.iter().filter(|c| !c.passed).take(20) {
        s.push_str(&format!(
            "  FAIL {} {} {} [{}]: {}\n",
            c.dtype,
            c.shape,
            c.data,
            c.config,
            c.error
                .clone()
                .or_else(|| c
                    .first_bad
                    .clone()
                    .map(|f| format!("{} mismatches, {f}", c.mismatches)))
                .unwrap_or_default()
        ));
    }
    if r.failures > 20 {
        s.push_str(&format!("  ... {} more failures\n", r.failures - 20));
    }
    if !r.not_applicable.is_empty() {
        s.push_str(&format!(
            "  {} (shape, configuration) pairs not applicable (see --format json)\n",
            r.not_applicable.len()
        ));
    }
    s.push_str(&format!(
        "  {}: {} runs, {} failed",
        if r.status == Status::Passed {
            "passed"
        } else {
            "FAILED"
        },
        r.runs,
        r.failures
    ));
    if let Some(w) = worst {
        s.push_str(&format!(
            "; largest relative error {:.2e} ({} {} {})",
            w.max_rel_err, w.dtype, w.shape, w.data
        ));
    }
    s.push('\n');
    s
}

pub fn verify(ctx: &Ctx, args: VerifyArgs) -> anyhow::Result<u8> {
    if args.kernel.ends_with(".toml") {
        return verify_harness_file(&args);
    }
    let backend = args.backend.unwrap_or(RunBackend::Cpu);
    if backend == RunBackend::CpuSimt {
        bail!("--backend cpu-simt runs a harness file (kplan verify HARNESS.toml --backend cpu-simt); kplan's kernels have theirs in kernels/*.toml");
    }
    if args.warp.is_some() {
        bail!("--warp applies to a harness file with --backend cpu-simt");
    }
    if args.kernel.ends_with(".py") {
        return verify_triton(ctx, &args);
    }
    let (ops, sources) = resolve_kernel(&args.kernel, &args.kernels)?;
    let tiles = sources.tiles()?;
    let dtypes = parse_dtypes(&args.dtype)?.unwrap_or_else(|| DType::ALL.to_vec());
    let backend_name = match backend {
        RunBackend::Cpu | RunBackend::CpuSimt => "cpu",
        RunBackend::Cuda => "cuda",
    };
    let mut exec: Result<Box<dyn Executor>, kplan_run::Skip> = match backend {
        RunBackend::Cpu | RunBackend::CpuSimt => {
            HostExecutor::new(&sources)?.map(|h| Box::new(h) as Box<dyn Executor>)
        }
        RunBackend::Cuda => CudaExecutor::open(&sources)?.map(|c| Box::new(c) as Box<dyn Executor>),
    };
    let mut reports = Vec::new();
    for op in ops {
        let shapes = match &args.sizes {
            Some(s) => Some(parse_sizes(op, s)?),
            None => None,
        };
        let r = match &mut exec {
            Err(skip) => VerifyReport::skipped(op.as_str(), backend_name, skip.clone()),
            Ok(e) => {
                let plan = VerifyPlan {
                    op,
                    dtypes: dtypes.clone(),
                    shapes,
                    seed: args.seed,
                    eps: 1e-6,
                };
                let progress = ctx.out.progress_bar(
                    format!("verifying {}", op.as_str()),
                    0,
                    args.format == Format::Json,
                );
                run_verify(
                    e.as_mut(),
                    &tiles,
                    op.as_str(),
                    &plan,
                    &mut |_, done, total| {
                        progress.set(done, total);
                    },
                )
            }
        };
        reports.push(r);
    }
    write_verify(&args, &reports)
}

/// Writes verify reports (one, or a JSON array of several) as `--format` asks and gives the
/// exit code.
fn write_verify(args: &VerifyArgs, reports: &[VerifyReport]) -> anyhow::Result<u8> {
    let failed = reports.iter().any(|r| r.status == Status::Failed);
    let text = match args.format {
        Format::Json => {
            let v = if reports.len() == 1 {
                serde_json::to_value(&reports[0])?
            } else {
                serde_json::to_value(reports)?
            };
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Format::Human => reports.iter().map(human_verify).collect(),
    };
    // compiler messages name the copy compiled in a temporary directory: show the user's file
    let text = match (args.kernel.ends_with(".cu"), reports.first()) {
        (true, Some(_)) => match Op::parse(
            Path::new(&args.kernel)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(""),
        ) {
            Some(op) => user_paths(&text, source_file(op), Path::new(&args.kernel)),
            None => text,
        },
        _ => text,
    };
    write_output(args.output.as_deref(), &text)?;
    let skipped = reports
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    Ok(exit_code(
        failed,
        skipped,
        reports.len(),
        "checks",
        args.strict,
    ))
}

/// The exit code of a run of `total` checks (or benchmarks) of which `skipped` could not run
/// here: 1 when one failed, or when one was skipped under `--strict` / `KPLAN_STRICT=1`, else 0.
/// Any skip is said on stderr, so that it is visible whatever the output format and `-o`.
fn exit_code(failed: bool, skipped: usize, total: usize, what: &str, strict_flag: bool) -> u8 {
    if skipped > 0 {
        eprintln!("warning: {skipped} of {total} {what} skipped");
        if !failed && super::strict(strict_flag) {
            eprintln!("error: {what} were skipped and --strict (or KPLAN_STRICT=1) is set");
            return 1;
        }
    }
    u8::from(failed)
}

/// Parses `--warp`: comma-separated powers of two from 1 to 64.
fn parse_warps(text: &str) -> anyhow::Result<Vec<u32>> {
    let mut v = Vec::new();
    for p in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match p.parse::<u32>() {
            Ok(w) if w.is_power_of_two() && w <= 64 => {
                if !v.contains(&w) {
                    v.push(w)
                }
            }
            _ => bail!(
                "--warp {p:?}: expected lane counts 1, 2, 4, 8, 16, 32 or 64 (e.g. --warp 32,64)"
            ),
        }
    }
    if v.is_empty() {
        bail!("--warp given without a value (e.g. --warp 32,64)");
    }
    v.sort_unstable();
    Ok(v)
}

fn verify_harness_file(args: &VerifyArgs) -> anyhow::Result<u8> {
    use kplan_run::harness::Harness;
    use kplan_run::harness_verify::{
        parse_harness_sizes, run_harness, HarnessBackend, HarnessPlan, HarnessStatus,
    };
    if args.dtype.is_some() || args.kernels.is_some() {
        bail!(
            "--dtype and --kernels do not apply to a harness file (its [[args]] give the dtypes)"
        );
    }
    let h = Harness::load(Path::new(&args.kernel))?;
    let backend = match args.backend.unwrap_or(RunBackend::CpuSimt) {
        RunBackend::CpuSimt => HarnessBackend::CpuSimt,
        RunBackend::Cpu => HarnessBackend::Cpu,
        RunBackend::Cuda => HarnessBackend::Cuda,
    };
    let warps = match &args.warp {
        Some(w) => {
            if backend != HarnessBackend::CpuSimt {
                bail!("--warp applies to --backend cpu-simt (cpu runs one lane per warp, cuda the device's warp)");
            }
            parse_warps(w)?
        }
        None => vec![32, 64],
    };
    let sizes = match &args.sizes {
        Some(s) => parse_harness_sizes(&h, s).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    let plan = HarnessPlan {
        backend,
        warps,
        sizes,
        seed: (args.seed != 1).then_some(args.seed),
    };
    let r = run_harness(&h, &plan, &mut |_| {})?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&r)? + "\n",
        Format::Human => r.render_human(),
    };
    write_output(args.output.as_deref(), &text)?;
    Ok(exit_code(
        r.status == HarnessStatus::Failed,
        usize::from(r.status == HarnessStatus::Skipped),
        1,
        "checks",
        args.strict,
    ))
}

/// `text` with every path to `name` inside the temporary directory replaced by `user`.
fn user_paths(text: &str, name: &str, user: &Path) -> String {
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_string_lossy();
    let needle = format!("/{name}");
    let shown = user.display().to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        let end = i + needle.len();
        let start = rest[..i]
            .rfind(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | '`'))
            .map_or(0, |p| p + 1);
        let boundary = !rest[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if boundary && rest[start..i].starts_with(&*tmp) {
            out.push_str(&rest[..start]);
            out.push_str(&shown);
        } else {
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn verify_triton(ctx: &Ctx, args: &VerifyArgs) -> anyhow::Result<u8> {
    use kplan_run::triton::{verify as tv, TritonBackend, TritonVerifyRequest};
    let backend = match args.backend.unwrap_or(RunBackend::Cpu) {
        RunBackend::Cpu | RunBackend::CpuSimt => TritonBackend::Cpu,
        RunBackend::Cuda => TritonBackend::Cuda,
    };
    let mut req = TritonVerifyRequest::new(&args.kernel, backend);
    if let Some(d) = parse_dtypes(&args.dtype)? {
        req.dtypes = d;
    }
    req.seed = args.seed;
    if let Some(s) = &args.sizes {
        req.shapes = parse_sizes(Op::Softmax, s)?
            .into_iter()
            .filter_map(|s| match s {
                Shape::Rows { rows, cols } => Some((rows, cols)),
                Shape::Flat(_) => None,
            })
            .collect();
    }
    let r = {
        let progress = ctx.out.progress_bar(
            format!("verifying {}", args.kernel),
            0,
            args.format == Format::Json,
        );
        tv(&req, &mut |_, done, total| progress.set(done, total))?
    };
    write_verify(args, &[r])
}

pub fn bench(ctx: &Ctx, args: BenchArgs) -> anyhow::Result<u8> {
    use kplan_run::bench_run::{run_bench, BenchPlan};
    if args.backend != RunBackend::Cuda {
        bail!("kplan bench times GPU kernels: only --backend cuda is supported");
    }
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let (ops, sources) = resolve_kernel(&args.kernel, &args.kernels)?;
    let tiles = sources.tiles()?;
    let plan = BenchPlan {
        ops,
        sizes: args.sizes.clone(),
        dtypes: parse_dtypes(&args.dtype)?,
        reps: args.reps,
        warmup: args.warmup,
        alternatives: args.alternatives,
    };
    let outcome = run_bench(ctx.kb(), &sources, &tiles, &plan)?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&outcome.to_json())? + "\n",
        Format::Human => outcome.render_human(),
    };
    write_output(args.output.as_deref(), &text)?;
    let skipped = matches!(outcome, kplan_run::bench_run::BenchOutcome::Skipped(_));
    Ok(exit_code(
        outcome.failed(),
        usize::from(skipped),
        1,
        "benchmarks",
        args.strict,
    ))
}
