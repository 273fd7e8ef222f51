//! `kplan verify HARNESS.toml`: seeded inputs for every param point, data case and config, the
//! reference run once per case, the kernel run per backend and warp width with its outputs
//! poisoned, and the comparison with the dtype's tolerance. A failure names the size, data,
//! config, warp width, the first bad element, got and want; a case that passes at one warp width
//! and fails at a wider one is reported as a warp-size dependence.

use crate::data::Rng;
use crate::error::RunError;
use crate::harness::{Arg, ArgKind, DataKind, Dtype, Harness, Tol};
use crate::reference::{bf16_to_f32, f32_to_bf16};
use crate::simt::{split_outputs, Defines, Dims, RunInput, SimtBuild};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub use crate::skip::Skip;

/// Where the harness's kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum HarnessBackend {
    /// The SIMT runtime with W-lane warps (W from `--warp`).
    CpuSimt,
    /// The SIMT runtime with one lane per warp (the CPU fallback's semantics).
    Cpu,
    /// An NVIDIA GPU: NVRTC + driver API.
    Cuda,
}

impl HarnessBackend {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct HarnessPlan {
    pub backend: HarnessBackend,
    /// Warp widths (cpu-simt); ignored by the other backends (cpu: 1, cuda: the device's).
    pub warps: Vec<u32>,
    /// Replaces the values of the named params.
    pub sizes: Vec<(String, Vec<i64>)>,
    /// Replaces the harness's seed.
    pub seed: Option<u64>,
}

/// The first wrong element of one output.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    pub arg: String,
    pub index: usize,
    pub got: String,
    pub want: String,
    pub mismatches: usize,
}

/// One kernel run compared with the reference.
#[derive(Debug, Clone, Serialize)]
pub struct HarnessCase {
    pub warp: u32,
    pub params: String,
    pub config: String,
    pub data: String,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<Mismatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl HarnessCase {
    /// `n=33, BLOCK=128, data x=random, W=64: out[5] got 1.0e0, want 2.0e0 (3 mismatches)`.
    pub fn describe(&self) -> String {
        let mut s = self.params.clone();
        if !self.config.is_empty() {
            let _ = write!(s, ", {}", self.config);
        }
        let _ = write!(s, ", data {}, W={}", self.data, self.warp);
        if let Some(m) = &self.mismatch {
            let _ = write!(
                s,
                ": {}[{}] got {}, want {} ({} mismatch{})",
                m.arg,
                m.index,
                m.got,
                m.want,
                m.mismatches,
                if m.mismatches == 1 { "" } else { "es" }
            );
        }
        if let Some(e) = &self.error {
            let _ = write!(s, ": {e}");
        }
        s
    }
}

/// Per-width totals.
#[derive(Debug, Clone, Serialize)]
pub struct WarpSummary {
    pub warp: u32,
    pub runs: usize,
    pub failures: usize,
}

/// Passes at `passes`, fails at `fails`, with the first such case.
#[derive(Debug, Clone, Serialize)]
pub struct WarpDependence {
    pub passes: Vec<u32>,
    pub fails: Vec<u32>,
    pub cases: usize,
    pub first: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HarnessStatus {
    Passed,
    Failed,
    Skipped,
}

#[derive(Debug, Clone, Serialize)]
pub struct HarnessReport {
    pub harness: String,
    pub backend: String,
    pub device: String,
    pub status: HarnessStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip: Option<Skip>,
    pub runs: usize,
    pub failures: usize,
    pub warps: Vec<WarpSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp_dependence: Option<WarpDependence>,
    /// Compile errors, one per (config, warp) that did not build.
    pub compile_errors: Vec<String>,
    /// Seconds spent compiling (kernels and references, in parallel) and running the cases.
    pub compile_s: f64,
    pub run_s: f64,
    pub cases: Vec<HarnessCase>,
}

impl HarnessReport {
    pub fn skipped(h: &Harness, backend: HarnessBackend, skip: Skip) -> HarnessReport {
        HarnessReport {
            harness: h.path.display().to_string(),
            backend: backend.as_str().into(),
            device: String::new(),
            status: HarnessStatus::Skipped,
            skip: Some(skip),
            runs: 0,
            failures: 0,
            warps: vec![],
            warp_dependence: None,
            compile_errors: vec![],
            compile_s: 0.0,
            run_s: 0.0,
            cases: vec![],
        }
    }

    /// The human report (what `kplan verify` prints).
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        if let Some(k) = &self.skip {
            let _ = writeln!(
                s,
                "{} on {}: skipped: {}",
                self.harness, self.backend, k.reason
            );
            return s;
        }
        let _ = writeln!(s, "{} on {} ({})", self.harness, self.backend, self.device);
        for e in &self.compile_errors {
            let _ = writeln!(s, "  COMPILE ERROR {e}");
        }
        for c in self.cases.iter().filter(|c| !c.passed).take(20) {
            let _ = writeln!(s, "  FAIL {}", c.describe());
        }
        if self.failures > 20 {
            let _ = writeln!(s, "  ... {} more failures", self.failures - 20);
        }
        if let Some(d) = &self.warp_dependence {
            let _ = writeln!(
                s,
                "  warp-size dependence: passes at W={}, fails at W={} ({} case{}; first: {})",
                d.passes
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                d.fails
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                d.cases,
                if d.cases == 1 { "" } else { "s" },
                d.first
            );
        }
        for w in &self.warps {
            let _ = writeln!(s, "  W={}: {} runs, {} failed", w.warp, w.runs, w.failures);
        }
        let _ = writeln!(
            s,
            "  {}: {} runs, {} failed ({:.2} s compiling, {:.2} s running)",
            if self.status == HarnessStatus::Passed {
                "passed"
            } else {
                "FAILED"
            },
            self.runs,
            self.failures,
            self.compile_s,
            self.run_s
        );
        s
    }
}

// ---------------------------------------------------------------- data

/// IEEE half from f32, round to nearest even.
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let mag = x & 0x7fff_ffff;
    if mag > 0x7f80_0000 {
        return sign | 0x7e00;
    }
    if mag >= 0x477f_f000 {
        return sign | 0x7c00;
    }
    if mag < 0x3880_0000 {
        let a = f32::from_bits(mag);
        return sign | (a * 16_777_216.0).round_ties_even() as u16;
    }
    let r = mag - 0x3800_0000;
    sign | ((r + 0xfff + ((r >> 13) & 1)) >> 13) as u16
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let e = ((h >> 10) & 0x1f) as u32;
    let m = (h & 0x3ff) as u32;
    if e == 0 {
        let f = m as f32 / 16_777_216.0;
        return if sign != 0 { -f } else { f };
    }
    if e == 31 {
        return f32::from_bits(sign | 0x7f80_0000 | (m << 13));
    }
    f32::from_bits(sign | ((e + 112) << 23) | (m << 13))
}

/// A value decoded for comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Val {
    F(f64),
    I(i128),
}

fn decode_at(d: Dtype, b: &[u8], i: usize) -> Val {
    let s = &b[i * d.bytes()..(i + 1) * d.bytes()];
    match d {
        Dtype::Fp64 => Val::F(f64::from_le_bytes(s.try_into().unwrap_or([0; 8]))),
        Dtype::Fp32 => Val::F(f32::from_le_bytes(s.try_into().unwrap_or([0; 4])) as f64),
        Dtype::Fp16 => Val::F(f16_to_f32(u16::from_le_bytes([s[0], s[1]])) as f64),
        Dtype::Bf16 => Val::F(bf16_to_f32(u16::from_le_bytes([s[0], s[1]])) as f64),
        Dtype::Int64 => Val::I(i64::from_le_bytes(s.try_into().unwrap_or([0; 8])) as i128),
        Dtype::Int32 => Val::I(i32::from_le_bytes(s.try_into().unwrap_or([0; 4])) as i128),
        Dtype::Uint32 => Val::I(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])) as i128),
        Dtype::Int8 => Val::I(s[0] as i8 as i128),
        Dtype::Uint8 => Val::I(s[0] as i128),
    }
}

fn push_f(d: Dtype, v: f64, out: &mut Vec<u8>) {
    match d {
        Dtype::Fp64 => out.extend_from_slice(&v.to_le_bytes()),
        Dtype::Fp32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        Dtype::Fp16 => out.extend_from_slice(&f32_to_f16(v as f32).to_le_bytes()),
        Dtype::Bf16 => out.extend_from_slice(&f32_to_bf16(v as f32).to_le_bytes()),
        _ => push_i(d, v as i128, out),
    }
}

fn push_i(d: Dtype, v: i128, out: &mut Vec<u8>) {
    match d {
        Dtype::Int64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
        Dtype::Int32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
        Dtype::Uint32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
        Dtype::Int8 => out.push(v as i8 as u8),
        Dtype::Uint8 => out.push(v as u8),
        _ => push_f(d, v as f64, out),
    }
}

/// `len` elements of `kind` in `dtype`, seeded.
pub fn generate(d: Dtype, kind: DataKind, len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut out = Vec::with_capacity(len * d.bytes());
    let (imin, imax): (i128, i128) = match d {
        Dtype::Int8 => (-128, 127),
        Dtype::Uint8 => (0, 255),
        Dtype::Int32 => (i32::MIN as i128, i32::MAX as i128),
        Dtype::Uint32 => (0, u32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    };
    let large_f = match d {
        Dtype::Fp16 => 3.0e4,
        _ => 1.0e30,
    };
    for i in 0..len {
        if d.is_float() {
            let v = match kind {
                DataKind::Random => r.normal() as f64,
                DataKind::Ones => 1.0,
                DataKind::Zeros => 0.0,
                DataKind::Ramp => i as f64,
                DataKind::Large => r.uniform() as f64 * large_f,
                DataKind::MixedInf => match r.next_u64() % 16 {
                    0 => f64::INFINITY,
                    1 => f64::NEG_INFINITY,
                    _ => r.normal() as f64,
                },
            };
            push_f(d, v, &mut out);
        } else {
            let span = (imax - imin).min(200);
            let v: i128 = match kind {
                DataKind::Random | DataKind::MixedInf => {
                    let lo = if imin < 0 { -100 } else { 0 };
                    lo + (r.next_u64() % (span as u64 + 1)) as i128
                }
                DataKind::Ones => 1,
                DataKind::Zeros => 0,
                DataKind::Ramp => imin.max(0) + (i as i128 % (imax - imin.max(0) + 1)),
                DataKind::Large => {
                    let q = imax / 4;
                    let v = q + (r.next_u64() as i128 % q.max(1));
                    if imin < 0 && r.next_u64() % 2 == 0 {
                        -v
                    } else {
                        v
                    }
                }
            };
            push_i(d, v, &mut out);
        }
    }
    out
}

/// Poison for an output buffer: all-one bytes (NaN in every float type) for floats, 0xa5 bytes
/// for integers (a value no reasonable kernel writes by chance).
pub fn poison(d: Dtype, len: usize) -> Vec<u8> {
    vec![if d.is_float() { 0xff } else { 0xa5 }; len * d.bytes()]
}

fn show(d: Dtype, v: Val) -> String {
    match v {
        Val::F(f) if d == Dtype::Fp64 => format!("{f:e}"),
        Val::F(f) => format!("{:e}", f as f32),
        Val::I(i) => i.to_string(),
    }
}

/// Compares one output buffer; None when equal within `tol`.
pub fn compare_buffer(arg: &Arg, tol: Tol, got: &[u8], want: &[u8]) -> Option<Mismatch> {
    let n = want.len() / arg.dtype.bytes();
    if got.len() != want.len() {
        return Some(Mismatch {
            arg: arg.name.clone(),
            index: 0,
            got: format!("{} bytes", got.len()),
            want: format!("{} bytes", want.len()),
            mismatches: n.max(1),
        });
    }
    let mut first: Option<(usize, Val, Val)> = None;
    let mut count = 0;
    for i in 0..n {
        let (g, w) = (decode_at(arg.dtype, got, i), decode_at(arg.dtype, want, i));
        let bad = match (g, w) {
            (Val::F(g), Val::F(w)) => {
                if g.is_nan() || w.is_nan() {
                    !(g.is_nan() && w.is_nan())
                } else if g.is_infinite() || w.is_infinite() {
                    g != w
                } else {
                    (g - w).abs() > tol.abs + tol.rel * w.abs()
                }
            }
            (Val::I(g), Val::I(w)) => {
                let e = (g - w).abs() as f64;
                e > tol.abs + tol.rel * (w.abs() as f64)
            }
            _ => true,
        };
        if bad {
            count += 1;
            if first.is_none() {
                first = Some((i, g, w));
            }
        }
    }
    first.map(|(i, g, w)| Mismatch {
        arg: arg.name.clone(),
        index: i,
        got: show(arg.dtype, g),
        want: show(arg.dtype, w),
        mismatches: count,
    })
}

// ---------------------------------------------------------------- the run

/// A backend that runs a harness's kernels.
pub trait KernelRunner {
    fn device(&self) -> String;
    /// Compiles ahead for these configs and widths.
    fn prepare(&mut self, h: &Harness, configs: &[Defines], warps: &[u32]);
    /// A compile error for (config, warp), if it did not build.
    fn compile_error(&self, defs: &Defines, warp: u32) -> Option<String>;
    /// Runs the kernels; returns the output file: the compared buffers back to back.
    fn run(&mut self, defs: &Defines, warp: u32, input: &RunInput) -> Result<Vec<u8>, RunError>;
}

/// The SIMT runtime (cpu-simt and cpu).
pub struct SimtRunner {
    pub build: SimtBuild,
}

impl KernelRunner for SimtRunner {
    fn device(&self) -> String {
        format!(
            "host C++ ({}), {} threads",
            self.build.compiler().display(),
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        )
    }
    fn prepare(&mut self, h: &Harness, configs: &[Defines], warps: &[u32]) {
        self.build.prepare(h, configs, warps);
    }
    fn compile_error(&self, defs: &Defines, warp: u32) -> Option<String> {
        self.build.kernel(defs, warp).err()
    }
    fn run(&mut self, defs: &Defines, warp: u32, input: &RunInput) -> Result<Vec<u8>, RunError> {
        let exe = self
            .build
            .kernel(defs, warp)
            .map_err(|e| RunError::Exec {
                what: "kernel".into(),
                message: e,
            })?
            .to_path_buf();
        self.build.run(&exe, input, "kernel")
    }
}

fn label(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn eval(
    h: &Harness,
    e: &crate::expr::Expr,
    vars: &BTreeMap<String, i64>,
    what: &str,
) -> Result<i64, String> {
    e.eval(vars)
        .map_err(|x| format!("{}: {what} `{}`: {}", h.path.display(), e.text(), x.message))
}

/// The largest buffer a harness case may ask for (it is generated, written and read back).
pub const MAX_BUFFER_BYTES: usize = 4 << 30;

/// The input of one (params, config, data case): buffers generated or poisoned, scalars, dims.
fn build_input(
    h: &Harness,
    vars: &BTreeMap<String, i64>,
    data_case: usize,
    seed: u64,
) -> Result<(RunInput, Vec<usize>, String), String> {
    let mut args = Vec::new();
    let mut sizes = Vec::new();
    let mut data = Vec::new();
    for (ai, a) in h.args.iter().enumerate() {
        match a.kind {
            ArgKind::Scalar if a.fvalue.is_some() => {
                let mut b = Vec::new();
                push_f(a.dtype, a.fvalue.unwrap_or(0.0), &mut b);
                b.resize(8, 0);
                args.push(b);
            }
            ArgKind::Scalar => {
                let v = eval(
                    h,
                    a.value.as_ref().expect("checked"),
                    vars,
                    &format!("arg `{}` value", a.name),
                )?;
                let mut b = Vec::new();
                push_i(a.dtype, v as i128, &mut b);
                b.resize(8, 0);
                args.push(b);
            }
            _ => {
                let n = eval(
                    h,
                    a.len.as_ref().expect("checked"),
                    vars,
                    &format!("arg `{}` len", a.name),
                )?;
                if !(0..=(1i64 << 34)).contains(&n) {
                    return Err(format!(
                        "arg `{}`: len {n} is out of range (0 to 2^34 elements)",
                        a.name
                    ));
                }
                let n = n as usize;
                if n.saturating_mul(a.dtype.bytes()) > MAX_BUFFER_BYTES {
                    return Err(format!(
                        "arg `{}`: {n} elements of {} exceed the {} GiB a buffer may take",
                        a.name,
                        a.dtype.as_str(),
                        MAX_BUFFER_BYTES >> 30
                    ));
                }
                if a.kind.generated() {
                    let kind = a.data[data_case % a.data.len()];
                    data.push(format!("{}={}", a.name, kind.as_str()));
                    let s = seed
                        .wrapping_mul(0x9e37_79b9)
                        .wrapping_add((ai as u64) << 32)
                        .wrapping_add(data_case as u64 * 1_000_003)
                        .wrapping_add(n as u64);
                    args.push(generate(a.dtype, kind, n, s));
                } else {
                    args.push(poison(a.dtype, n));
                }
                if a.kind.compared() {
                    sizes.push(n * a.dtype.bytes());
                }
            }
        }
    }
    let mut launches = Vec::new();
    for k in &h.kernels {
        let mut d = Dims {
            grid: [1; 3],
            block: [1; 3],
            shared: 0,
        };
        for i in 0..3 {
            let g = eval(h, &k.launch.grid[i], vars, "launch grid")?;
            let b = eval(h, &k.launch.block[i], vars, "launch block")?;
            if !(1..=i64::from(u32::MAX)).contains(&g) {
                return Err(format!(
                    "launch grid {} = {g} for {}: expected 1 or more",
                    "xyz".as_bytes()[i] as char,
                    k.entry
                ));
            }
            if !(1..=1024).contains(&b) {
                return Err(format!(
                    "launch block {} = {b} for {}: expected 1 to 1024",
                    "xyz".as_bytes()[i] as char,
                    k.entry
                ));
            }
            d.grid[i] = g as u32;
            d.block[i] = b as u32;
        }
        let sh = eval(h, &k.launch.shared, vars, "launch shared")?;
        if !(0..=(1 << 30)).contains(&sh) {
            return Err(format!("launch shared = {sh}: expected 0 to 2^30 bytes"));
        }
        d.shared = sh as u64;
        launches.push(d);
    }
    Ok((RunInput { args, launches }, sizes, data.join(",")))
}

/// Runs a harness on `runner` (the reference through `reference`, a SIMT build).
pub fn verify_harness(
    h: &Harness,
    plan: &HarnessPlan,
    runner: &mut dyn KernelRunner,
    reference: &mut SimtBuild,
    progress: &mut dyn FnMut(&HarnessCase),
) -> HarnessReport {
    let warps: Vec<u32> = match plan.backend {
        HarnessBackend::CpuSimt => {
            let mut w = plan.warps.clone();
            if w.is_empty() {
                w = vec![32, 64];
            }
            w
        }
        HarnessBackend::Cpu => vec![1],
        HarnessBackend::Cuda => vec![32],
    };
    let mut params = h.params.clone();
    for (k, v) in &plan.sizes {
        if let Some(p) = params.iter_mut().find(|(n, _)| n == k) {
            p.1 = v.clone();
        }
    }
    let points = crate::harness::cartesian(&params);
    let configs = h.config_points();
    let seed = plan.seed.unwrap_or(h.seed);
    let mut report = HarnessReport {
        harness: h.path.display().to_string(),
        backend: plan.backend.as_str().into(),
        device: runner.device(),
        status: HarnessStatus::Passed,
        skip: None,
        runs: 0,
        failures: 0,
        warps: warps
            .iter()
            .map(|&w| WarpSummary {
                warp: w,
                runs: 0,
                failures: 0,
            })
            .collect(),
        warp_dependence: None,
        compile_errors: vec![],
        compile_s: 0.0,
        run_s: 0.0,
        cases: vec![],
    };
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| reference.prepare(h, &configs, &[]));
        runner.prepare(h, &configs, &warps);
    });
    report.compile_s = t0.elapsed().as_secs_f64();
    let t1 = std::time::Instant::now();
    let compared: Vec<usize> = (0..h.args.len())
        .filter(|&i| h.args[i].kind.compared())
        .collect();
    // (case key) -> per-warp pass
    // (config, params, data case) -> [(warp, passed, index in cases)]
    type Runs = Vec<(u32, bool, usize)>;
    let mut outcome: BTreeMap<(usize, usize, usize), Runs> = BTreeMap::new();
    for (ci, cfg) in configs.iter().enumerate() {
        let cfg_label = label(cfg);
        if let Err(e) = reference.reference(cfg) {
            report
                .compile_errors
                .push(format!("reference [{cfg_label}]:\n{e}"));
            report.failures += 1;
            continue;
        }
        let mut broken: Vec<u32> = Vec::new();
        for &w in &warps {
            if let Some(e) = runner.compile_error(cfg, w) {
                report.compile_errors.push(format!(
                    "kernel [{cfg_label}{}W={w}]:\n{e}",
                    if cfg_label.is_empty() { "" } else { ", " }
                ));
                report.failures += 1;
                broken.push(w);
            }
        }
        let mut vars_base: BTreeMap<String, i64> = BTreeMap::new();
        for (k, v) in cfg {
            if let Ok(x) = v.parse::<i64>() {
                vars_base.insert(k.clone(), x);
            }
        }
        for (pi, point) in points.iter().enumerate() {
            let mut vars = vars_base.clone();
            for (k, v) in point {
                vars.insert(k.clone(), *v);
            }
            let p_label = label(
                &point
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect::<Vec<_>>(),
            );
            for dc in 0..h.data_cases() {
                let mk = |warp: u32, data: &str| HarnessCase {
                    warp,
                    params: p_label.clone(),
                    config: cfg_label.clone(),
                    data: data.to_string(),
                    passed: false,
                    mismatch: None,
                    error: None,
                };
                let (input, sizes, data) =
                    match build_input(h, &vars, dc, seed.wrapping_add(pi as u64 * 7919)) {
                        Ok(x) => x,
                        Err(e) => {
                            let mut c = mk(0, "");
                            c.error = Some(e);
                            report.failures += 1;
                            report.runs += 1;
                            progress(&c);
                            report.cases.push(c);
                            continue;
                        }
                    };
                let want = reference
                    .reference(cfg)
                    .map(|p| p.to_path_buf())
                    .map_err(|e| RunError::Exec {
                        what: "reference".into(),
                        message: e,
                    })
                    .and_then(|exe| reference.run(&exe, &input, "reference"))
                    .and_then(|raw| {
                        split_outputs(&raw, &sizes).ok_or_else(|| RunError::Exec {
                            what: "reference".into(),
                            message: "wrote the wrong number of bytes".into(),
                        })
                    });
                for (wi, &w) in warps.iter().enumerate() {
                    if broken.contains(&w) {
                        continue;
                    }
                    let mut c = mk(w, &data);
                    match &want {
                        Err(e) => c.error = Some(format!("reference failed: {e}")),
                        Ok(want) => match runner.run(cfg, w, &input) {
                            Err(e) => c.error = Some(e.to_string()),
                            Ok(raw) => match split_outputs(&raw, &sizes) {
                                None => {
                                    c.error = Some(format!(
                                        "kernel program wrote {} bytes, expected {}",
                                        raw.len(),
                                        sizes.iter().sum::<usize>()
                                    ))
                                }
                                Some(got) => {
                                    c.mismatch =
                                        compared.iter().enumerate().find_map(|(j, &ai)| {
                                            let a = &h.args[ai];
                                            compare_buffer(a, h.tol(a.dtype), &got[j], &want[j])
                                        });
                                    c.passed = c.mismatch.is_none();
                                }
                            },
                        },
                    }
                    report.runs += 1;
                    report.warps[wi].runs += 1;
                    if !c.passed {
                        report.failures += 1;
                        report.warps[wi].failures += 1;
                    }
                    outcome.entry((ci, pi, dc)).or_default().push((
                        w,
                        c.passed,
                        report.cases.len(),
                    ));
                    progress(&c);
                    report.cases.push(c);
                }
            }
        }
    }
    report.run_s = t1.elapsed().as_secs_f64();
    // Warp-size dependence: passes at a narrower width, fails at a wider one.
    let mut dep_cases = 0;
    let mut first = None;
    let mut passes = std::collections::BTreeSet::new();
    let mut fails = std::collections::BTreeSet::new();
    for runs in outcome.values() {
        let p: Vec<u32> = runs.iter().filter(|r| r.1).map(|r| r.0).collect();
        let f: Vec<&(u32, bool, usize)> = runs.iter().filter(|r| !r.1).collect();
        if let (Some(&lo), Some(bad)) = (
            p.iter().min(),
            f.iter().find(|r| r.0 > *p.iter().min().unwrap_or(&0)),
        ) {
            dep_cases += 1;
            passes.extend(p.iter().copied().filter(|&x| x < bad.0 || x == lo));
            fails.extend(f.iter().map(|r| r.0));
            if first.is_none() {
                first = Some(report.cases[bad.2].describe());
            }
        }
    }
    if let Some(first) = first {
        report.warp_dependence = Some(WarpDependence {
            passes: passes.into_iter().collect(),
            fails: fails.into_iter().collect(),
            cases: dep_cases,
            first,
        });
    }
    if report.failures > 0 {
        report.status = HarnessStatus::Failed;
    }
    report
}

/// Parses `--sizes`: `n=1,33,1000` or `n=1,2;m=4` (several params), or a plain list when the
/// harness has one param. Values take the `2^20+7` form.
pub fn parse_harness_sizes(h: &Harness, text: &str) -> Result<Vec<(String, Vec<i64>)>, String> {
    let mut out = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, list) = match part.split_once('=') {
            Some((n, l)) => (n.trim().to_string(), l),
            None => {
                if h.params.len() != 1 {
                    return Err(format!(
                        "--sizes {part:?}: name the param (NAME=V1,V2;...); this harness has {}",
                        if h.params.is_empty() {
                            "no params".to_string()
                        } else {
                            h.params
                                .iter()
                                .map(|p| p.0.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ));
                }
                (h.params[0].0.clone(), part)
            }
        };
        if !h.params.iter().any(|p| p.0 == name) {
            return Err(format!(
                "--sizes: `{name}` is not a param of this harness (expected one of: {})",
                h.params
                    .iter()
                    .map(|p| p.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut vals = Vec::new();
        for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            let x = crate::verify::parse_expr(v).map_err(|e| e.to_string())?;
            vals.push(x as i64);
        }
        if vals.is_empty() {
            return Err(format!("--sizes: no values for `{name}`"));
        }
        out.push((name, vals));
    }
    if out.is_empty() {
        return Err("--sizes given without values".into());
    }
    Ok(out)
}

/// Runs `h` as `plan` says: builds the reference and the kernel for the backend, or returns a
/// skipped report naming why the backend cannot run here.
pub fn run_harness(
    h: &Harness,
    plan: &HarnessPlan,
    progress: &mut dyn FnMut(&HarnessCase),
) -> Result<HarnessReport, RunError> {
    let mut reference = match SimtBuild::new(h)? {
        Ok(b) => b,
        Err(skip) => return Ok(HarnessReport::skipped(h, plan.backend, skip)),
    };
    let mut runner: Box<dyn KernelRunner> = match plan.backend {
        HarnessBackend::CpuSimt | HarnessBackend::Cpu => match SimtBuild::new(h)? {
            Ok(build) => Box::new(SimtRunner { build }),
            Err(skip) => return Ok(HarnessReport::skipped(h, plan.backend, skip)),
        },
        HarnessBackend::Cuda => match crate::harness_cuda::CudaRunner::open(h)? {
            Ok(r) => Box::new(r),
            Err(skip) => return Ok(HarnessReport::skipped(h, plan.backend, skip)),
        },
    };
    Ok(verify_harness(
        h,
        plan,
        runner.as_mut(),
        &mut reference,
        progress,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_to_nearest_even() {
        for x in [0.0f32, 1.0, -2.5, 65504.0, 6.1e-5, 1e-7, 2.71] {
            let h = f32_to_f16(x);
            let back = f16_to_f32(h);
            assert!((back - x).abs() <= x.abs() * 1e-3 + 6e-8, "{x} -> {back}");
        }
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), f32_to_f16(1.0)); // tie to even
    }

    #[test]
    fn data_is_seeded_and_typed() {
        let a = generate(Dtype::Fp32, DataKind::Random, 100, 5);
        assert_eq!(a, generate(Dtype::Fp32, DataKind::Random, 100, 5));
        assert_ne!(a, generate(Dtype::Fp32, DataKind::Random, 100, 6));
        assert_eq!(a.len(), 400);
        let r = generate(Dtype::Uint8, DataKind::Ramp, 300, 1);
        assert_eq!(r[255], 255);
        assert_eq!(r[256], 0);
        let m = generate(Dtype::Fp16, DataKind::MixedInf, 1000, 1);
        let infs = (0..1000)
            .filter(|&i| f16_to_f32(u16::from_le_bytes([m[2 * i], m[2 * i + 1]])).is_infinite())
            .count();
        assert!(infs > 50 && infs < 250, "{infs}");
        let l = generate(Dtype::Int32, DataKind::Large, 10, 1);
        assert!((0..10).all(
            |i| i32::from_le_bytes(l[4 * i..4 * i + 4].try_into().unwrap()).unsigned_abs()
                >= (i32::MAX / 4) as u32
        ));
    }

    #[test]
    fn comparison_reports_the_first_bad_element() {
        let arg = Arg {
            name: "out".into(),
            kind: ArgKind::Out,
            dtype: Dtype::Fp32,
            len: None,
            value: None,
            fvalue: None,
            data: vec![],
        };
        let enc = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let tol = Tol {
            rel: 1e-5,
            abs: 0.0,
        };
        assert!(
            compare_buffer(&arg, tol, &enc(&[1.0, f32::NAN]), &enc(&[1.0, f32::NAN])).is_none()
        );
        let m = compare_buffer(&arg, tol, &enc(&[1.0, 2.0, 9.0]), &enc(&[1.0, 3.0, 4.0])).unwrap();
        assert_eq!((m.index, m.mismatches), (1, 2));
        assert_eq!(m.got, "2e0");
        let poisoned = poison(Dtype::Fp32, 2);
        assert!(compare_buffer(&arg, tol, &poisoned, &enc(&[0.0, 0.0])).is_some());
    }
}
