//! `kplan bench`: device-event timing of the reference kernels after warm-up, with the L2 flushed
//! before every timed run, median of many runs; achieved GB/s over the bytes the operation must
//! move, as a fraction of the KB's peak bandwidth and of a device-to-device copy measured in the
//! same run. Every benchmarked output is also checked against the CPU reference.
//!
//! Launch overhead is reported apart: a CUDA graph replays many (L2 flush, launch) pairs and
//! another the flushes alone; the difference per launch is the kernel's time without the
//! per-launch submission cost, and the event-timed median minus it is that cost.

use crate::cuda::CudaExecutor;
use crate::data::Rng;
use crate::error::RunError;
use crate::exec::{encode, Case};
use crate::kernels::{choose, Backend, Config, Shape, Tiles};
use crate::reference::{DType, Op};
use crate::verify::{check_run, expected};
use cudarc::driver::CudaSlice;
use serde::Serialize;

/// The shapes the performance goals name, per kernel.
pub fn default_cases(op: Op) -> Vec<(DType, Shape)> {
    let rows = |d: DType| -> Vec<(DType, Shape)> {
        let mut v: Vec<(DType, Shape)> = [1024usize, 4096, 16384, 32768]
            .iter()
            .map(|&cols| (d, Shape::Rows { rows: 8192, cols }))
            .collect();
        v.push((
            d,
            Shape::Rows {
                rows: 32768,
                cols: 1024,
            },
        ));
        v.push((
            d,
            Shape::Rows {
                rows: 2048,
                cols: 8192,
            },
        ));
        v
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
        Op::QuantizeFp8 => vec![(
            DType::Bf16,
            Shape::Rows {
                rows: 8192,
                cols: 7168,
            },
        )],
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
        // input, one fp8 code per element, one fp32 scale per row
        (Op::QuantizeFp8, Shape::Rows { rows, .. }) => e + shape.elements() + 4 * rows as u64,
        (Op::QuantizeFp8, _) => e + shape.elements(),
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
    /// How it was launched: the -D definitions of the compile, grid and block (so another
    /// harness can build and time the same kernel).
    pub defines: Vec<(String, String)>,
    pub grid: u32,
    pub block: u32,
    pub bytes: u64,
    pub runs: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub gbs: f64,
    /// Kernel time per launch inside a CUDA graph of `graph_launches` (L2 flush, launch) pairs,
    /// less the same graph's flushes alone (median of `graph_reps` replays of each).
    pub graph_ms: f64,
    pub graph_gbs: f64,
    /// Event-timed median minus graph_ms: what each separate launch adds.
    pub launch_overhead_ms: f64,
    pub graph_launches: usize,
    pub graph_reps: usize,
    /// Achieved / the KB's peak bandwidth (None when the device is not in the KB).
    pub frac_peak: Option<f64>,
    /// Achieved / the copy bandwidth measured in this run.
    pub frac_copy: f64,
    /// A device-to-device copy of the case's own byte count (half read, half written), timed
    /// as the kernel is (L2 flush, events, the same warm-up and runs, median): what moving this
    /// many bytes costs with one launch under this timing, the launch and the ramp included.
    pub copy_same_gbs: f64,
    /// Achieved / `copy_same_gbs`.
    pub frac_copy_same: f64,
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

/// Bandwidth (bytes read + written) of a device-to-device copy of `bytes` in all, half read and
/// half written, flushed and timed as [`bench_case`] times a kernel: `warmup` copies, then the
/// median of `reps` event-timed ones.
fn copy_same_bandwidth(
    exec: &mut CudaExecutor,
    flush: &mut CudaSlice<u8>,
    bytes: u64,
    warmup: usize,
    reps: usize,
) -> Result<f64, RunError> {
    let half = (bytes as usize / 2).max(1);
    let src = exec.poisoned(half)?;
    let mut dst = exec.alloc(half)?;
    for _ in 0..warmup.max(1) {
        exec.stream
            .memcpy_dtod(&src, &mut dst)
            .map_err(cu("copy"))?;
    }
    let mut t = time_runs(exec, flush, reps, &mut |e| {
        e.stream.memcpy_dtod(&src, &mut dst).map_err(cu("copy"))
    })?;
    Ok(2.0 * half as f64 / (median(&mut t) * 1e-3) / 1e9)
}

/// Launches per graph and replays of each graph in [`graph_time`].
pub const GRAPH_LAUNCHES: usize = 20;
pub const GRAPH_REPS: usize = 5;

/// Per-launch kernel time from CUDA graphs: one graph of `launches` (flush, `f`) pairs and one
/// of the flushes alone, captured on a fresh stream, each replayed `reps` times after a warm-up
/// replay; (median of the first - median of the second) / launches, in ms.
fn graph_time(
    exec: &mut CudaExecutor,
    flush: &mut cudarc::driver::CudaSlice<u8>,
    launches: usize,
    reps: usize,
    f: &mut dyn FnMut(&mut CudaExecutor) -> Result<(), RunError>,
) -> Result<f64, RunError> {
    use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
    exec.sync()?;
    let capture_stream = exec.ctx.new_stream().map_err(cu("stream"))?;
    let main_stream = std::mem::replace(&mut exec.stream, capture_stream);
    let mut capture = |exec: &mut CudaExecutor,
                       with_kernel: bool,
                       f: &mut dyn FnMut(&mut CudaExecutor) -> Result<(), RunError>|
     -> Result<cudarc::driver::CudaGraph, RunError> {
        exec.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .map_err(cu("begin capture"))?;
        let mut body = || -> Result<(), RunError> {
            for _ in 0..launches {
                exec.stream.memset_zeros(flush).map_err(cu("L2 flush"))?;
                if with_kernel {
                    f(exec)?;
                }
            }
            Ok(())
        };
        let r = body();
        let g = exec
            .stream
            .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
            .map_err(cu("end capture"))?;
        r?;
        g.ok_or_else(|| RunError::Cuda {
            what: "graph capture".into(),
            message: "no graph captured".into(),
        })
    };
    let result = (|| -> Result<f64, RunError> {
        let with = capture(exec, true, f)?;
        let without = capture(exec, false, f)?;
        let time = |g: &cudarc::driver::CudaGraph| -> Result<f64, RunError> {
            g.launch().map_err(cu("graph launch"))?;
            let mut v = Vec::with_capacity(reps);
            for _ in 0..reps {
                let a = exec
                    .stream
                    .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(cu("event"))?;
                g.launch().map_err(cu("graph launch"))?;
                let b = exec
                    .stream
                    .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(cu("event"))?;
                exec.stream.synchronize().map_err(cu("graph replay"))?;
                v.push(a.elapsed_ms(&b).map_err(cu("event elapsed"))? as f64);
            }
            Ok(median(&mut v))
        };
        let tw = time(&with)?;
        let to = time(&without)?;
        Ok((tw - to) / launches as f64)
    })();
    exec.stream.synchronize().map_err(cu("graph replay"))?;
    exec.stream = main_stream;
    result
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
    let out_bytes = crate::cuda::out_bytes(op, dtype, shape);
    let mut flush = exec.alloc((exec.l2_bytes as usize * 4).max(256 << 20))?;
    let bytes = bytes_moved(op, dtype, shape);
    let copy_same_gbs = copy_same_bandwidth(exec, &mut flush, bytes, warmup, reps)?;
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
        let mut partials = exec.poisoned(crate::cuda::partials_bytes(op, shape, grid))?;
        // one launch with this configuration; the checked run and the timed ones use the same
        // buffers
        let launch =
            |e: &mut CudaExecutor, out: &mut CudaSlice<u8>, partials: &mut CudaSlice<u8>| {
                e.launch(op, dtype, cfg, shape, 1e-6, &da, &db, out, partials)
            };
        launch(exec, &mut out, &mut partials)?;
        exec.sync()?;
        let host = exec.stream.clone_dtoh(&out).map_err(cu("memcpy DtoH"))?;
        let second = if op == Op::QuantizeFp8 {
            exec.stream
                .clone_dtoh(&partials)
                .map_err(cu("memcpy DtoH"))?
        } else {
            Vec::new()
        };
        let got = crate::cuda::decode_output(
            op,
            dtype,
            shape,
            crate::kernels::fp8_encoding(cfg, Backend::Cuda),
            &host[..out_bytes],
            &second,
        );
        let cmp = check_run(op, dtype, shape, cfg, Backend::Cuda, &got, &want);
        drop(host);
        for _ in 0..warmup {
            launch(exec, &mut out, &mut partials)?;
        }
        exec.sync()?;
        let mut times = time_runs(exec, &mut flush, reps, &mut |e| {
            launch(e, &mut out, &mut partials)
        })?;
        let graph_ms = graph_time(exec, &mut flush, GRAPH_LAUNCHES, GRAPH_REPS, &mut |e| {
            launch(e, &mut out, &mut partials)
        })?;
        let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = times.iter().cloned().fold(0.0, f64::max);
        let med = median(&mut times);
        let gbs = bytes as f64 / (med * 1e-3) / 1e9;
        records.push(BenchRecord {
            kernel: op.as_str(),
            dtype: dtype.as_str(),
            shape: shape.label(),
            config: cfg.label(),
            default: false,
            defines: cfg.defines(dtype),
            grid: grid as u32,
            block: cfg.block,
            bytes,
            runs: reps,
            median_ms: med,
            min_ms: min,
            max_ms: max,
            gbs,
            graph_ms,
            graph_gbs: bytes as f64 / (graph_ms * 1e-3) / 1e9,
            launch_overhead_ms: med - graph_ms,
            graph_launches: GRAPH_LAUNCHES,
            graph_reps: GRAPH_REPS,
            frac_peak: peak_gbs.map(|p| gbs / p),
            frac_copy: gbs / copy_gbs,
            copy_same_gbs,
            frac_copy_same: gbs / copy_same_gbs,
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
            // a row held in registers is timed only where it fills more than half of them
            let wasteful = match shape {
                Shape::Rows { cols, .. } => {
                    c.items > 0 && (c.items * c.tpr * c.vec) as usize >= 2 * cols
                }
                Shape::Flat(_) => false,
            };
            if !wasteful && !v.contains(&c) && c.invalid_for(op, dtype, shape).is_none() {
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
