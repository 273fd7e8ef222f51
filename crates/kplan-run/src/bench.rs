//! `kplan bench`: device-event timing of the reference kernels after warm-up, with the L2 flushed
//! before every timed run, median of many runs; achieved GB/s over the bytes the operation must
//! move, as a fraction of the KB's peak bandwidth and of a device-to-device copy measured in the
//! same run. Every benchmarked output is also checked against the CPU reference.

use crate::cuda::CudaExecutor;
use crate::data::Rng;
use crate::error::RunError;
use crate::exec::{decode, encode, Case};
use crate::kernels::{choose, Backend, Config, Shape, Tiles};
use crate::reference::{DType, Op};
use crate::verify::{check, expected};
use serde::Serialize;

/// The shapes the performance goals name, per kernel.
pub fn default_cases(op: Op) -> Vec<(DType, Shape)> {
    let rows = |d: DType| -> Vec<(DType, Shape)> {
        [1024usize, 4096, 16384, 32768]
            .iter()
            .map(|&cols| (d, Shape::Rows { rows: 8192, cols }))
            .collect()
    };
    match op {
        Op::ReduceSum => vec![
            (DType::F32, Shape::Flat(1 << 30)),
            (DType::Bf16, Shape::Flat(1 << 30)),
        ],
        Op::Add => vec![
            (DType::Bf16, Shape::Flat(1 << 30)),
            (DType::F32, Shape::Flat(1 << 28)),
        ],
        Op::Softmax | Op::Rmsnorm => {
            let mut v = rows(DType::Bf16);
            v.push((
                DType::F32,
                Shape::Rows {
                    rows: 8192,
                    cols: 4096,
                },
            ));
            v
        }
    }
}

/// Bytes the operation must move through device memory: each input read once, each output
/// written once.
pub fn bytes_moved(op: Op, dtype: DType, shape: Shape) -> u64 {
    let e = shape.elements() * dtype.bytes() as u64;
    match (op, shape) {
        (Op::ReduceSum, _) => e + 4,
        (Op::Add, _) => 3 * e,
        (Op::Softmax, _) => 2 * e,
        (Op::Rmsnorm, Shape::Rows { cols, .. }) => 2 * e + (cols * dtype.bytes()) as u64,
        (Op::Rmsnorm, _) => 2 * e,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchRecord {
    pub kernel: &'static str,
    pub dtype: &'static str,
    pub shape: String,
    pub config: String,
    /// The configuration kernels/tiles.toml chooses for this shape (others are alternatives).
    pub default: bool,
    pub bytes: u64,
    pub runs: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub gbs: f64,
    /// Achieved / the KB's peak bandwidth (None when the device is not in the KB).
    pub frac_peak: Option<f64>,
    /// Achieved / the copy bandwidth measured in this run.
    pub frac_copy: f64,
    /// The output of a benchmarked launch matched the CPU reference.
    pub output_checked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub device: String,
    pub compute_capability: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub driver: String,
    /// KB device the GPU name resolved to, its datasheet bandwidth and that fact's source.
    pub kb_device: Option<String>,
    pub peak_gbs: Option<f64>,
    pub peak_source: Option<String>,
    /// Device-to-device copy, bytes read + written over time (median).
    pub copy_gbs: f64,
    pub copy_bytes: u64,
    pub flush_bytes: u64,
    pub warmup: usize,
    pub reps: usize,
    pub records: Vec<BenchRecord>,
}

/// Fills `n` elements of `dtype` with roughly normal values (deterministic, in parallel).
pub fn random_values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut v = vec![0.0f32; n];
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .clamp(1, 32);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (i, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut r = Rng::new(seed.wrapping_add(i as u64 * 0x1234_5678_9abc));
                for x in part.iter_mut() {
                    *x = r.normal() * scale;
                }
            });
        }
    });
    v
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn cu(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> RunError {
    move |e| RunError::Cuda {
        what: what.to_string(),
        message: format!("{:?}", e.0),
    }
}

/// Times `f` (which enqueues work) `reps` times, flushing L2 first; milliseconds per run.
fn time_runs(
    exec: &mut CudaExecutor,
    flush: &mut cudarc::driver::CudaSlice<u8>,
    reps: usize,
    f: &mut dyn FnMut(&mut CudaExecutor) -> Result<(), RunError>,
) -> Result<Vec<f64>, RunError> {
    use cudarc::driver::sys::CUevent_flags;
    let mut pairs = Vec::with_capacity(reps);
    for _ in 0..reps {
        exec.stream.memset_zeros(flush).map_err(cu("L2 flush"))?;
        let a = exec
            .stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cu("event"))?;
        f(exec)?;
        let b = exec
            .stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cu("event"))?;
        pairs.push((a, b));
    }
    exec.sync()?;
    pairs
        .iter()
        .map(|(a, b)| {
            a.elapsed_ms(b)
                .map(|ms| ms as f64)
                .map_err(cu("event elapsed"))
        })
        .collect()
}

/// Measures device-to-device copy bandwidth (bytes read + written), median of `reps`.
pub fn copy_bandwidth(exec: &mut CudaExecutor, bytes: usize, reps: usize) -> Result<f64, RunError> {
    let src = exec.upload(&vec![0x3cu8; bytes])?;
    let mut dst = exec.alloc(bytes)?;
    let mut flush = exec.alloc((exec.l2_bytes as usize * 4).max(256 << 20))?;
    for _ in 0..3 {
        exec.stream
            .memcpy_dtod(&src, &mut dst)
            .map_err(cu("copy"))?;
    }
    let mut t = time_runs(exec, &mut flush, reps, &mut |e| {
        e.stream.memcpy_dtod(&src, &mut dst).map_err(cu("copy"))
    })?;
    Ok(2.0 * bytes as f64 / (median(&mut t) * 1e-3) / 1e9)
}

/// Benchmarks `op` on `shape` in `dtype` with each of `configs` (the same data for all; the
/// output of every configuration checked against one reference).
#[allow(clippy::too_many_arguments)]
pub fn bench_case(
    exec: &mut CudaExecutor,
    op: Op,
    dtype: DType,
    shape: Shape,
    configs: &[Config],
    warmup: usize,
    reps: usize,
    copy_gbs: f64,
    peak_gbs: Option<f64>,
) -> Result<Vec<BenchRecord>, RunError> {
    let n = shape.elements() as usize;
    let scale = if op == Op::Softmax { 4.0 } else { 1.0 };
    let round = |v: Vec<f32>| {
        if dtype == DType::Bf16 {
            crate::reference::round_bf16(&v)
        } else {
            v
        }
    };
    let a = round(random_values(n, 11, scale));
    let b = match (op, shape) {
        (Op::Add, _) => round(random_values(n, 12, 1.0)),
        (Op::Rmsnorm, Shape::Rows { cols, .. }) => round(
            random_values(cols, 13, 0.5)
                .into_iter()
                .map(|w| 1.0 + w)
                .collect(),
        ),
        _ => Vec::new(),
    };
    let case = Case {
        shape,
        a,
        b,
        eps: 1e-6,
    };
    let da = exec.upload(&encode(&case.a, dtype))?;
    let db = exec.upload(&encode(&case.b, dtype))?;
    let want = expected(op, &case);
    drop(case);
    let out_bytes = if op == Op::ReduceSum {
        4
    } else {
        n * dtype.bytes()
    };
    let mut flush = exec.alloc((exec.l2_bytes as usize * 4).max(256 << 20))?;
    let mut records = Vec::new();
    for cfg in configs {
        if let Some(why) = cfg.invalid_for(op, dtype, shape) {
            return Err(RunError::Exec {
                what: format!("{} {}", op.as_str(), cfg.label()),
                message: why,
            });
        }
        let mut out = exec.poisoned(out_bytes)?;
        let grid = cfg.grid(shape, exec.sm_count) as usize;
        let mut partials = exec.poisoned(grid * 4)?;
        exec.launch(
            op,
            dtype,
            cfg,
            shape,
            1e-6,
            &da,
            &db,
            &mut out,
            &mut partials,
        )?;
        exec.sync()?;
        let host = exec.stream.clone_dtoh(&out).map_err(cu("memcpy DtoH"))?;
        let got = if op == Op::ReduceSum {
            decode(&host[..4], DType::F32)
        } else {
            decode(&host[..out_bytes], dtype)
        };
        let cmp = check(op, dtype, shape, &got, &want);
        drop(host);
        for _ in 0..warmup {
            exec.launch(
                op,
                dtype,
                cfg,
                shape,
                1e-6,
                &da,
                &db,
                &mut out,
                &mut partials,
            )?;
        }
        exec.sync()?;
        let mut times = time_runs(exec, &mut flush, reps, &mut |e| {
            e.launch(
                op,
                dtype,
                cfg,
                shape,
                1e-6,
                &da,
                &db,
                &mut out,
                &mut partials,
            )
        })?;
        let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = times.iter().cloned().fold(0.0, f64::max);
        let med = median(&mut times);
        let bytes = bytes_moved(op, dtype, shape);
        let gbs = bytes as f64 / (med * 1e-3) / 1e9;
        records.push(BenchRecord {
            kernel: op.as_str(),
            dtype: dtype.as_str(),
            shape: shape.label(),
            config: cfg.label(),
            default: false,
            bytes,
            runs: reps,
            median_ms: med,
            min_ms: min,
            max_ms: max,
            gbs,
            frac_peak: peak_gbs.map(|p| gbs / p),
            frac_copy: gbs / copy_gbs,
            output_checked: cmp.ok(),
            check_error: (!cmp.ok()).then(|| {
                format!(
                    "{} elements outside tolerance; max abs err {:e}{}",
                    cmp.mismatches,
                    cmp.max_abs_err,
                    cmp.first_bad
                        .map(|(i, g, w)| format!("; element {i}: got {g:e}, expected {w:e}"))
                        .unwrap_or_default()
                )
            }),
        });
    }
    Ok(records)
}

/// The configurations bench times for a case: the tiles' choice first (marked default), then
/// the `[[bench.*]]` alternatives of tiles.toml that fit the shape.
pub fn bench_configs(
    tiles: &Tiles,
    op: Op,
    dtype: DType,
    shape: Shape,
    alternatives: bool,
) -> Vec<Config> {
    let mut v = vec![choose(tiles, Backend::Cuda, op, dtype, shape, 32)];
    if alternatives {
        for c in tiles.bench_alternatives(op, dtype, shape) {
            if !v.contains(&c) && c.invalid_for(op, dtype, shape).is_none() {
                v.push(c);
            }
        }
    }
    v
}

/// Resolves a CUDA device name ("NVIDIA H200") to a KB device: its id, peak GB/s and source.
pub fn kb_peak(kb: &kplan_kb::Kb, name: &str) -> Option<(String, f64, String)> {
    let trimmed = name.trim();
    let mut candidates = vec![trimmed.to_string()];
    for prefix in ["NVIDIA ", "AMD ", "Instinct "] {
        if let Some(s) = trimmed.strip_prefix(prefix) {
            candidates.push(s.to_string());
        }
    }
    let base = candidates.last().cloned().unwrap_or_default();
    candidates.push(base.replace(' ', "-").to_lowercase());
    candidates.push(format!("{}-sxm", base.replace(' ', "-").to_lowercase()));
    for c in candidates {
        if let Ok(r) = kb.resolve(&c) {
            if let Some(d) = r.device {
                if let Some(bw) = d.bandwidth_gbs.get() {
                    return Some((d.id.clone(), bw, d.bandwidth_gbs.source.clone()));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_count_inputs_and_outputs_once() {
        assert_eq!(
            bytes_moved(Op::Add, DType::Bf16, Shape::Flat(1 << 30)),
            3 << 31
        );
        assert_eq!(
            bytes_moved(
                Op::Softmax,
                DType::Bf16,
                Shape::Rows {
                    rows: 8192,
                    cols: 1024
                }
            ),
            2 * 8192 * 1024 * 2
        );
        assert_eq!(
            bytes_moved(Op::ReduceSum, DType::F32, Shape::Flat(1 << 30)),
            (1u64 << 32) + 4
        );
        assert_eq!(
            bytes_moved(Op::Rmsnorm, DType::F32, Shape::Rows { rows: 2, cols: 4 }),
            2 * 32 + 16
        );
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn h200_resolves_in_the_kb() {
        let kb = kplan_kb::Kb::builtin();
        if let Some((id, bw, _)) = kb_peak(kb, "NVIDIA H200") {
            assert!(id.contains("h200"), "{id}");
            assert!(bw > 4000.0 && bw < 5500.0, "{bw}");
        }
    }
}
