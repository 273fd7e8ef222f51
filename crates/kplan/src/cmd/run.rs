//! `kplan verify` and `kplan bench`: run the reference kernels (or a user's copy of one) on the
//! CPU backend or a CUDA GPU, against the CPU reference and the roofline.

use super::{write_output, Ctx};
use anyhow::{bail, Context};
use kplan_run::bench::{
    bench_case, bench_configs, copy_bandwidth, default_cases, kb_peak, BenchRecord, BenchReport,
};
use kplan_run::cpu::HostExecutor;
use kplan_run::cuda::CudaExecutor;
use kplan_run::exec::Executor;
use kplan_run::kernels::{find_header, source_file, KernelSources, Shape};
use kplan_run::reference::{DType, Op};
use kplan_run::verify::{parse_sizes, verify as run_verify, Status, VerifyPlan, VerifyReport};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunBackend {
    /// The kernel source compiled by the host C++ compiler (one lane per warp).
    Cpu,
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
    /// Kernel: reduce_sum, softmax, rmsnorm, add, quantize_fp8, `all`, a path to one of their .cu files (a
    /// modified copy keeping the entry points), or a Triton kernel (.py)
    pub kernel: String,
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: RunBackend,
    /// Comma-separated sizes: N for reduce_sum/add, ROWSxCOLS (or COLS, three rows) for
    /// softmax/rmsnorm; expressions like 2^20+7 are accepted. Default: the edge-case set
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
    let start = if from_file {
        path.parent().map(Path::to_path_buf)
    } else {
        kernels_dir.clone()
    };
    let (header, _) = find_header(start.as_deref())?;
    let mut sources = match kernels_dir {
        Some(d) => {
            if !d.is_dir() {
                bail!("--kernels {}: not a directory", d.display());
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
            r.skip_reason.as_deref().unwrap_or("")
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

pub fn verify(_ctx: &Ctx, args: VerifyArgs) -> anyhow::Result<u8> {
    if args.kernel.ends_with(".py") {
        return verify_triton(&args);
    }
    let (ops, sources) = resolve_kernel(&args.kernel, &args.kernels)?;
    let tiles = sources.tiles()?;
    let dtypes = parse_dtypes(&args.dtype)?.unwrap_or_else(|| DType::ALL.to_vec());
    let backend_name = match args.backend {
        RunBackend::Cpu => "cpu",
        RunBackend::Cuda => "cuda",
    };
    let mut exec: Result<Box<dyn Executor>, String> = match args.backend {
        RunBackend::Cpu => match HostExecutor::new(&sources)? {
            Some(h) => Ok(Box::new(h)),
            None => Err(
                "no C++ compiler found (set KPLAN_CXX or CXX, or install g++ or clang++)".into(),
            ),
        },
        RunBackend::Cuda => CudaExecutor::open(&sources)?.map(|c| Box::new(c) as Box<dyn Executor>),
    };
    let mut reports = Vec::new();
    for op in ops {
        let shapes = match &args.sizes {
            Some(s) => Some(parse_sizes(op, s)?),
            None => None,
        };
        let r = match &mut exec {
            Err(reason) => VerifyReport::skipped(op.as_str(), backend_name, reason.clone()),
            Ok(e) => {
                let plan = VerifyPlan {
                    op,
                    dtypes: dtypes.clone(),
                    shapes,
                    seed: args.seed,
                    eps: 1e-6,
                };
                run_verify(e.as_mut(), &tiles, op.as_str(), &plan, &mut |_| {})
            }
        };
        reports.push(r);
    }
    let failed = reports.iter().any(|r| r.status == Status::Failed);
    let text = match args.format {
        Format::Json => {
            let v = if reports.len() == 1 {
                serde_json::to_value(&reports[0])?
            } else {
                serde_json::to_value(&reports)?
            };
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Format::Human => reports.iter().map(human_verify).collect(),
    };
    write_output(args.output.as_deref(), &text)?;
    Ok(failed as u8)
}

fn verify_triton(args: &VerifyArgs) -> anyhow::Result<u8> {
    use kplan_run::triton::{verify as tv, TritonBackend, TritonVerifyRequest};
    let backend = match args.backend {
        RunBackend::Cpu => TritonBackend::Cpu,
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
    let r = tv(&req)?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&r)? + "\n",
        Format::Human => match &r.skipped {
            Some(why) => format!("{} on {}: skipped: {why}\n", args.kernel, backend.as_str()),
            None => {
                let bad = r.cases.iter().filter(|c| !c.ok).count();
                format!(
                    "{} ({}, {}) on {}: {}: {} cases, {} failed\n",
                    args.kernel,
                    r.op,
                    r.entry,
                    backend.as_str(),
                    if r.ok() { "passed" } else { "FAILED" },
                    r.cases.len(),
                    bad
                )
            }
        },
    };
    write_output(args.output.as_deref(), &text)?;
    Ok((r.skipped.is_none() && !r.ok()) as u8)
}

fn human_bench(r: &BenchReport) -> String {
    let mut s = format!(
        "{} (sm_{}, {} SMs, driver {}); copy {:.0} GB/s; peak {}\n",
        r.device,
        r.compute_capability,
        r.sm_count,
        r.driver,
        r.copy_gbs,
        match (&r.kb_device, r.peak_gbs) {
            (Some(d), Some(p)) => format!("{p:.0} GB/s ({d}, KB)"),
            _ => "unknown (device not in the KB)".into(),
        }
    );
    s.push_str(&format!(
        "{:<11} {:<5} {:<14} {:<18} {:>10} {:>9} {:>7} {:>7} {}\n",
        "kernel", "dtype", "shape", "config", "median ms", "GB/s", "%peak", "%copy", "check"
    ));
    for x in &r.records {
        s.push_str(&format!(
            "{:<11} {:<5} {:<14} {:<18} {:>10.4} {:>9.1} {:>7} {:>7.1} {}\n",
            x.kernel,
            x.dtype,
            x.shape,
            if x.default {
                x.config.clone()
            } else {
                format!("({})", x.config)
            },
            x.median_ms,
            x.gbs,
            x.frac_peak
                .map(|f| format!("{:.1}", f * 100.0))
                .unwrap_or_else(|| "-".into()),
            x.frac_copy * 100.0,
            if x.output_checked {
                "ok".to_string()
            } else {
                format!("FAILED: {}", x.check_error.clone().unwrap_or_default())
            }
        ));
    }
    s
}

pub fn bench(ctx: &Ctx, args: BenchArgs) -> anyhow::Result<u8> {
    if args.backend != RunBackend::Cuda {
        bail!("kplan bench times GPU kernels: only --backend cuda is supported");
    }
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let (ops, sources) = resolve_kernel(&args.kernel, &args.kernels)?;
    let tiles = sources.tiles()?;
    let dtypes = parse_dtypes(&args.dtype)?;
    let mut cases: Vec<(Op, DType, Shape)> = Vec::new();
    for &op in &ops {
        match &args.sizes {
            Some(s) => {
                for shape in parse_sizes(op, s)? {
                    for &d in dtypes.as_deref().unwrap_or(&[DType::Bf16]) {
                        cases.push((op, d, shape));
                    }
                }
            }
            None => {
                for (d, shape) in default_cases(op) {
                    if dtypes.as_ref().map_or(true, |v| v.contains(&d)) {
                        cases.push((op, d, shape));
                    }
                }
            }
        }
    }
    let mut exec = match CudaExecutor::open(&sources)? {
        Ok(e) => e,
        Err(reason) => {
            let text = match args.format {
                Format::Json => {
                    serde_json::to_string_pretty(
                        &serde_json::json!({"status": "skipped", "skip_reason": reason}),
                    )? + "\n"
                }
                Format::Human => format!("bench skipped: {reason}\n"),
            };
            write_output(args.output.as_deref(), &text)?;
            return Ok(0);
        }
    };
    let peak = kb_peak(ctx.kb(), &exec.name);
    let copy_bytes: usize = 1 << 30;
    let copy_gbs = copy_bandwidth(&mut exec, copy_bytes, args.reps.max(10))?;
    let mut records: Vec<BenchRecord> = Vec::new();
    let mut failed = false;
    for (op, dtype, shape) in cases {
        let configs = bench_configs(&tiles, op, dtype, shape, args.alternatives);
        let rs = bench_case(
            &mut exec,
            op,
            dtype,
            shape,
            &configs,
            args.warmup,
            args.reps,
            copy_gbs,
            peak.as_ref().map(|p| p.1),
        )
        .with_context(|| {
            format!(
                "benchmarking {} {} {}",
                op.as_str(),
                dtype.as_str(),
                shape.label()
            )
        })?;
        for (i, mut r) in rs.into_iter().enumerate() {
            r.default = i == 0;
            failed |= !r.output_checked;
            records.push(r);
        }
    }
    let report = BenchReport {
        device: exec.name.clone(),
        compute_capability: format!("{}{}", exec.cc.0, exec.cc.1),
        sm_count: exec.sm_count,
        l2_bytes: exec.l2_bytes,
        driver: exec.driver_version(),
        kb_device: peak.as_ref().map(|p| p.0.clone()),
        peak_gbs: peak.as_ref().map(|p| p.1),
        peak_source: peak.as_ref().map(|p| p.2.clone()),
        copy_gbs,
        copy_bytes: 2 * copy_bytes as u64,
        flush_bytes: (exec.l2_bytes * 4).max(256 << 20),
        warmup: args.warmup,
        reps: args.reps,
        records,
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        Format::Human => human_bench(&report),
    };
    write_output(args.output.as_deref(), &text)?;
    Ok(failed as u8)
}
