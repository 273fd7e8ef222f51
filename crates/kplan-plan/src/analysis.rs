//! Work and traffic of the operation: FLOPs, minimum DRAM bytes, arithmetic intensity, and the
//! roofline arithmetic used by the plan. Pure functions, unit-tested below.

use crate::spec::{Op, Problem, Spec};
use serde::Serialize;

/// FLOPs and minimum DRAM traffic for one call, with the formula used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Work {
    pub flops: f64,
    pub bytes: f64,
    /// FLOPs per byte; `None` when bytes is zero.
    pub intensity: Option<f64>,
    pub flops_formula: String,
    pub bytes_formula: String,
}

/// Default FLOPs per element for the memory-bound classes (counted as in the docs: one
/// operation per add/mul/max/exp/rsqrt).
pub fn default_flops_per_element(op: Op) -> f64 {
    match op {
        Op::Elementwise => 1.0,
        Op::Reduction => 1.0,
        Op::Scan => 1.0,
        // max, subtract, exp, sum, divide
        Op::Softmax => 5.0,
        // square, accumulate, scale by rsqrt, multiply by weight
        Op::Norm => 4.0,
        _ => 0.0,
    }
}

/// Work of the spec's operation. Bytes are the minimum traffic: every input read once, every
/// output written once, in the storage dtype (outputs in the output dtype, the third entry of
/// `dtypes`, when the spec gives one).
pub fn work(spec: &Spec) -> Work {
    let s = spec.storage.bytes() as f64;
    let fpe = spec
        .knobs
        .flops_per_element
        .unwrap_or_else(|| default_flops_per_element(spec.op));
    let (flops, bytes, ff, bf) = match (&spec.problem, spec.op) {
        (Problem::Flat { n }, Op::Elementwise) => {
            let n = *n as f64;
            let io = (spec.knobs.inputs + spec.knobs.outputs) as f64;
            (
                fpe * n,
                io * n * s,
                format!("{fpe} x n ({n})"),
                format!(
                    "(inputs {} + outputs {}) x n x {s} B",
                    spec.knobs.inputs, spec.knobs.outputs
                ),
            )
        }
        (Problem::Flat { n }, Op::Scan) => {
            let n = *n as f64;
            (
                fpe * n,
                2.0 * n * s,
                format!("{fpe} x n"),
                format!("read n + write n, x {s} B"),
            )
        }
        (Problem::Flat { n }, _) => {
            let n = *n as f64;
            (
                fpe * n,
                (n + 1.0) * s,
                format!("{fpe} x n"),
                format!("read n + write 1, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, Op::Reduction) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                (r * c + r) * s,
                format!("{fpe} x rows x cols"),
                format!("read rows x cols + write rows, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, Op::Norm) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                (2.0 * r * c + c) * s,
                format!("{fpe} x rows x cols"),
                format!("(read + write rows x cols) + weight cols, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, _) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                2.0 * r * c * s,
                format!("{fpe} x rows x cols"),
                format!("read + write rows x cols, x {s} B"),
            )
        }
        (Problem::Gemm { batch, m, n, k }, _) => {
            let (b, m, n, k) = (*batch as f64, *m as f64, *n as f64, *k as f64);
            (
                2.0 * b * m * n * k,
                b * (m * k + k * n + m * n) * s,
                "2 x batch x m x n x k".to_string(),
                format!("batch x (m x k + k x n + m x n) x {s} B"),
            )
        }
        (
            Problem::Attention {
                batch,
                heads,
                kv_heads,
                seq_q,
                seq_kv,
                head_dim,
                causal,
            },
            _,
        ) => {
            let (b, h, hk, sq, sk, d) = (
                *batch as f64,
                *heads as f64,
                *kv_heads as f64,
                *seq_q as f64,
                *seq_kv as f64,
                *head_dim as f64,
            );
            let full = 4.0 * b * h * sq * sk * d;
            let flops = if *causal { full / 2.0 } else { full };
            (
                flops,
                (b * h * sq * d * 2.0 + b * hk * sk * d * 2.0) * s,
                format!("4 x batch x heads x seq_q x seq_kv x head_dim{}", if *causal { " / 2 (causal)" } else { "" }),
                format!("(Q + O: batch x heads x seq_q x head_dim x 2) + (K + V: batch x kv_heads x seq_kv x head_dim x 2), x {s} B"),
            )
        }
        (Problem::Custom { flops, bytes }, _) => (
            *flops,
            *bytes,
            "given by the spec".into(),
            "given by the spec".into(),
        ),
    };
    // Outputs written in a dtype other than the storage dtype (the spec's third dtype).
    let o = spec.output.bytes() as f64;
    let (bytes, bf) = match output_elements(spec) {
        Some((elems, what)) if o != s => (
            bytes + elems * (o - s),
            format!(
                "{bf}, but the output ({what}) in {} at {o} B",
                spec.output.as_str()
            ),
        ),
        _ => (bytes, bf),
    };
    Work {
        flops,
        bytes,
        intensity: if bytes > 0.0 {
            Some(flops / bytes)
        } else {
            None
        },
        flops_formula: ff,
        bytes_formula: bf,
    }
}

/// Elements the operation writes, and how the bytes formula names them; `None` for a custom op
/// (its bytes are given).
fn output_elements(spec: &Spec) -> Option<(f64, &'static str)> {
    Some(match (&spec.problem, spec.op) {
        (Problem::Flat { n }, Op::Elementwise) => {
            (spec.knobs.outputs as f64 * *n as f64, "outputs x n")
        }
        (Problem::Flat { n }, Op::Scan) => (*n as f64, "n"),
        (Problem::Flat { .. }, _) => (1.0, "1"),
        (Problem::Rows { rows, .. }, Op::Reduction) => (*rows as f64, "rows"),
        (Problem::Rows { rows, cols }, _) => (*rows as f64 * *cols as f64, "rows x cols"),
        (Problem::Gemm { batch, m, n, .. }, _) => {
            (*batch as f64 * *m as f64 * *n as f64, "batch x m x n")
        }
        (
            Problem::Attention {
                batch,
                heads,
                seq_q,
                head_dim,
                ..
            },
            _,
        ) => (
            *batch as f64 * *heads as f64 * *seq_q as f64 * *head_dim as f64,
            "O: batch x heads x seq_q x head_dim",
        ),
        (Problem::Custom { .. }, _) => return None,
    })
}

/// Rounds a derived value to 4 significant digits (at least 3 decimals below 1) so that JSON
/// shows `2915` rather than `2915.0000000000005`.
pub fn tidy(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let digits = 4 - 1 - x.abs().log10().floor() as i32;
    let digits = digits.clamp(0, 12);
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Ridge point (FLOP/byte) of a machine: peak TFLOP/s over bandwidth GB/s.
pub fn ridge_point(peak_tflops: f64, bandwidth_gbs: f64) -> Option<f64> {
    (bandwidth_gbs > 0.0).then(|| peak_tflops * 1e12 / (bandwidth_gbs * 1e9))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

/// Roofline for one target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    pub bound: Bound,
    /// Attainable FLOP rate, TFLOP/s: min(peak, intensity x bandwidth).
    pub attainable_tflops: f64,
    /// The roofline in the plan's unit: GB/s when memory-bound, TFLOP/s when compute-bound.
    pub value: f64,
    /// Lower bound on run time, microseconds: max(flops / peak, bytes / bandwidth).
    pub time_us: f64,
}

/// min(peak, intensity x bandwidth). Memory-bound when intensity is below the ridge point.
pub fn roofline(w: &Work, peak_tflops: f64, bandwidth_gbs: f64) -> Option<Roofline> {
    if !(peak_tflops > 0.0 && bandwidth_gbs > 0.0) {
        return None;
    }
    let intensity = w.intensity.unwrap_or(f64::INFINITY);
    let mem_tflops = intensity * bandwidth_gbs * 1e9 / 1e12;
    let t_compute = w.flops / (peak_tflops * 1e12);
    let t_mem = w.bytes / (bandwidth_gbs * 1e9);
    if mem_tflops < peak_tflops {
        Some(Roofline {
            bound: Bound::Memory,
            attainable_tflops: mem_tflops,
            value: bandwidth_gbs,
            time_us: t_mem.max(t_compute) * 1e6,
        })
    } else {
        Some(Roofline {
            bound: Bound::Compute,
            attainable_tflops: peak_tflops,
            value: peak_tflops,
            time_us: t_mem.max(t_compute) * 1e6,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(flops: f64, bytes: f64) -> Work {
        Work {
            flops,
            bytes,
            intensity: Some(flops / bytes),
            flops_formula: String::new(),
            bytes_formula: String::new(),
        }
    }

    #[test]
    fn tidy_keeps_four_significant_digits() {
        assert_eq!(tidy(2915.0000000000005), 2915.0);
        assert_eq!(tidy(444.5160000000001), 444.5);
        assert_eq!(tidy(0.0123456), 0.01235);
        assert_eq!(tidy(1979.0), 1979.0);
        assert_eq!(tidy(123456.7), 123457.0);
    }

    #[test]
    fn ridge_point_is_peak_over_bandwidth() {
        // 989 TFLOP/s over 3350 GB/s = 295.2 FLOP/byte
        let r = ridge_point(989.0, 3350.0).unwrap();
        assert!((r - 295.22).abs() < 0.01, "{r}");
        assert_eq!(ridge_point(1.0, 0.0), None);
    }

    #[test]
    fn low_intensity_is_memory_bound_at_bandwidth() {
        // rmsnorm-like: 1 FLOP/byte on a 3350 GB/s, 60 TFLOP/s machine
        let r = roofline(&w(1e9, 1e9), 60.0, 3350.0).unwrap();
        assert_eq!(r.bound, Bound::Memory);
        assert_eq!(r.value, 3350.0);
        assert!((r.attainable_tflops - 3.35).abs() < 1e-9);
        assert!((r.time_us - 1e9 / 3350e9 * 1e6).abs() < 1e-6);
    }

    #[test]
    fn high_intensity_is_compute_bound_at_peak() {
        let r = roofline(
            &w(2.0 * 8192f64.powi(3), 3.0 * 8192f64.powi(2) * 2.0),
            989.0,
            3350.0,
        )
        .unwrap();
        assert_eq!(r.bound, Bound::Compute);
        assert_eq!(r.value, 989.0);
        assert_eq!(r.attainable_tflops, 989.0);
    }

    #[test]
    fn unknown_peak_or_bandwidth_gives_no_roofline() {
        assert!(roofline(&w(1.0, 1.0), 0.0, 100.0).is_none());
        assert!(roofline(&w(1.0, 1.0), 10.0, f64::NAN).is_none());
    }

    #[test]
    fn exactly_at_ridge_counts_as_compute_bound() {
        // intensity 10 FLOP/B x 100 GB/s = 1 TFLOP/s = peak
        let r = roofline(&w(10.0, 1.0), 1.0, 100.0).unwrap();
        assert_eq!(r.bound, Bound::Compute);
    }
}

#[cfg(test)]
mod work_tests {
    use super::*;
    use crate::spec::parse_spec;

    fn spec(op: &str, problem: &str, dtypes: &str) -> Spec {
        let t = format!("[kernel]\nname='x'\nop='{op}'\ndtypes=[{dtypes}]\nproblem={{ {problem} }}\n[backends]\ntargets=['sm_80']\n");
        parse_spec(&t, kplan_kb::Kb::builtin()).unwrap()
    }

    #[test]
    fn gemm_is_2mnk_over_three_matrices() {
        let w = work(&spec("gemm", "m=128, n=256, k=64", "'bf16','fp32'"));
        assert_eq!(w.flops, 2.0 * 128.0 * 256.0 * 64.0);
        assert_eq!(w.bytes, (128.0 * 64.0 + 64.0 * 256.0 + 128.0 * 256.0) * 2.0);
    }

    #[test]
    fn causal_attention_halves_the_flops() {
        let full = work(&spec(
            "attention",
            "batch=2, heads=4, seq=1024, head_dim=64",
            "'fp16'",
        ));
        let causal = work(&spec(
            "attention",
            "batch=2, heads=4, seq=1024, head_dim=64, causal=true",
            "'fp16'",
        ));
        assert_eq!(full.flops, 4.0 * 2.0 * 4.0 * 1024.0 * 1024.0 * 64.0);
        assert_eq!(causal.flops * 2.0, full.flops);
        assert_eq!(full.bytes, causal.bytes);
    }

    #[test]
    fn gqa_reads_fewer_kv_bytes() {
        let mha = work(&spec(
            "attention",
            "batch=1, heads=8, seq=128, head_dim=64",
            "'bf16'",
        ));
        let gqa = work(&spec(
            "attention",
            "batch=1, heads=8, kv_heads=2, seq=128, head_dim=64",
            "'bf16'",
        ));
        assert!(gqa.bytes < mha.bytes);
        assert_eq!(gqa.flops, mha.flops);
    }

    #[test]
    fn norm_reads_writes_and_reads_the_weight() {
        let w = work(&spec("norm", "rows=10, cols=100", "'bf16','fp32'"));
        assert_eq!(w.bytes, (2.0 * 10.0 * 100.0 + 100.0) * 2.0);
        assert_eq!(w.flops, 4.0 * 1000.0);
    }

    #[test]
    fn softmax_and_elementwise_bytes() {
        assert_eq!(
            work(&spec("softmax", "rows=2, cols=8", "'fp32'")).bytes,
            2.0 * 16.0 * 4.0
        );
        let e = work(&spec(
            "elementwise",
            "n=1000, inputs=3, outputs=2",
            "'fp16'",
        ));
        assert_eq!(e.bytes, 5.0 * 1000.0 * 2.0);
    }

    #[test]
    fn custom_takes_flops_and_bytes_as_given() {
        let w = work(&spec("custom", "flops=3e9, bytes=1e9", "'fp64'"));
        assert_eq!((w.flops, w.bytes, w.intensity), (3e9, 1e9, Some(3.0)));
    }
}
