//! CPU reference for the four reference kernels: the oracle every backend is compared with, and
//! the CPU fallback.
//!
//! Every operation accumulates in `f64` (pairwise summation on top), so the reference error is
//! far below the tolerance of any `f32` or `bf16` kernel. Inputs stored as bf16 are decoded with
//! [`bf16_to_f32`] before they are passed here; outputs are `f32` (round them with
//! [`f32_to_bf16`] to compare a bf16 kernel bit for bit, or compare with [`tolerance`]).
//!
//! Defined edge cases:
//! - softmax of a row whose entries are all `-inf` is a row of zeros (no probability mass; the
//!   convention of masked attention), not NaN;
//! - a NaN anywhere in a row makes that row's softmax / rmsnorm output NaN;
//! - rmsnorm of an all-zero row is zeros (`eps` keeps the denominator positive).

/// Storage type of a kernel's inputs and outputs (accumulation is always at least `f32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    Bf16,
}

impl DType {
    pub const ALL: [DType; 2] = [DType::F32, DType::Bf16];
    pub fn as_str(self) -> &'static str {
        match self {
            DType::F32 => "fp32",
            DType::Bf16 => "bf16",
        }
    }
    pub fn parse(s: &str) -> Option<DType> {
        match s {
            "fp32" | "f32" | "float32" | "float" => Some(DType::F32),
            "bf16" | "bfloat16" => Some(DType::Bf16),
            _ => None,
        }
    }
    /// Bytes per stored element.
    pub fn bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::Bf16 => 2,
        }
    }
}

/// The operations the reference implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    ReduceSum,
    Softmax,
    Rmsnorm,
    Add,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::ReduceSum, Op::Softmax, Op::Rmsnorm, Op::Add];
    pub fn as_str(self) -> &'static str {
        match self {
            Op::ReduceSum => "reduce_sum",
            Op::Softmax => "softmax",
            Op::Rmsnorm => "rmsnorm",
            Op::Add => "add",
        }
    }
    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// Pairwise sum in `f64` of `f(i)` for `i` in `lo..hi` (blocks of 64 summed sequentially).
fn pairwise(lo: usize, hi: usize, f: &dyn Fn(usize) -> f64) -> f64 {
    if hi - lo <= 64 {
        let mut s = 0.0f64;
        for i in lo..hi {
            s += f(i);
        }
        s
    } else {
        let mid = lo + (hi - lo) / 2;
        pairwise(lo, mid, f) + pairwise(mid, hi, f)
    }
}

/// Sum of all elements, pairwise in `f64`. Empty input sums to 0.
pub fn reduce_sum(x: &[f32]) -> f64 {
    pairwise(0, x.len(), &|i| x[i] as f64)
}

/// Sum of absolute values (the scale against which a sum's rounding error is judged).
pub fn reduce_sum_abs(x: &[f32]) -> f64 {
    pairwise(0, x.len(), &|i| (x[i] as f64).abs())
}

fn check_rows(len: usize, rows: usize, cols: usize) {
    assert_eq!(
        len,
        rows * cols,
        "input has {len} elements, expected rows*cols = {}",
        rows * cols
    );
}

/// Row-wise softmax of a `rows x cols` row-major matrix, max-subtracted, in `f64`.
/// A row of all `-inf` gives zeros; a row holding NaN gives NaN.
///
/// Panics if `x.len() != rows * cols` (a caller bug, not an input error).
pub fn softmax_rows(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    check_rows(x.len(), rows, cols);
    let mut out = vec![0.0f32; x.len()];
    if cols == 0 {
        return out;
    }
    for (xr, yr) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)) {
        let m = xr.iter().fold(f64::NEG_INFINITY, |m, &v| {
            if v.is_nan() {
                f64::NAN
            } else {
                m.max(v as f64)
            }
        });
        if m.is_nan() || xr.iter().any(|v| v.is_nan()) {
            yr.fill(f32::NAN);
            continue;
        }
        if m == f64::NEG_INFINITY {
            yr.fill(0.0);
            continue;
        }
        if m == f64::INFINITY {
            // exp(inf - inf) is undefined: the row has no finite softmax.
            yr.fill(f32::NAN);
            continue;
        }
        let s = pairwise(0, cols, &|i| ((xr[i] as f64) - m).exp());
        for (y, &v) in yr.iter_mut().zip(xr) {
            *y = (((v as f64) - m).exp() / s) as f32;
        }
    }
    out
}

/// Row-wise RMSNorm: `y = x / sqrt(mean(x^2) + eps) * weight`, `weight.len() == cols`, in `f64`.
///
/// Panics if the lengths disagree (a caller bug, not an input error).
pub fn rmsnorm_rows(x: &[f32], weight: &[f32], rows: usize, cols: usize, eps: f32) -> Vec<f32> {
    check_rows(x.len(), rows, cols);
    assert_eq!(
        weight.len(),
        cols,
        "weight has {} elements, expected cols = {cols}",
        weight.len()
    );
    let mut out = vec![0.0f32; x.len()];
    if cols == 0 {
        return out;
    }
    for (xr, yr) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)) {
        let ss = pairwise(0, cols, &|i| {
            let v = xr[i] as f64;
            v * v
        });
        let inv = 1.0 / (ss / cols as f64 + eps as f64).sqrt();
        for ((y, &v), &w) in yr.iter_mut().zip(xr).zip(weight) {
            *y = ((v as f64) * inv * (w as f64)) as f32;
        }
    }
    out
}

/// Element-wise `a + b` (rounded once to `f32`).
///
/// Panics if the lengths disagree (a caller bug, not an input error).
pub fn add(a: &[f32], b: &[f32]) -> Vec<f32> {
    assert_eq!(
        a.len(),
        b.len(),
        "add: operands have {} and {} elements",
        a.len(),
        b.len()
    );
    a.iter()
        .zip(b)
        .map(|(&x, &y)| ((x as f64) + (y as f64)) as f32)
        .collect()
}

/// GELU, tanh approximation (`0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`), in `f64`.
pub fn gelu(x: &[f32]) -> Vec<f32> {
    const K: f64 = 0.797_884_560_802_865_4; // sqrt(2/pi)
    x.iter()
        .map(|&v| {
            let v = v as f64;
            (0.5 * v * (1.0 + (K * (v + 0.044715 * v * v * v)).tanh())) as f32
        })
        .collect()
}

/// `f32` -> bf16 bits, round to nearest even; NaN stays NaN (quiet), infinities stay infinite.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x0040;
    }
    let lsb = (b >> 16) & 1;
    (b.wrapping_add(0x7fff + lsb) >> 16) as u16
}

/// bf16 bits -> `f32` (exact).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `f32` slice -> bf16 bits, round to nearest even.
pub fn to_bf16(x: &[f32]) -> Vec<u16> {
    x.iter().map(|&v| f32_to_bf16(v)).collect()
}

/// bf16 bits -> `f32` slice (exact).
pub fn from_bf16(h: &[u16]) -> Vec<f32> {
    h.iter().map(|&v| bf16_to_f32(v)).collect()
}

/// Rounds each value to the nearest bf16 and back (what storing as bf16 does to it).
pub fn round_bf16(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| bf16_to_f32(f32_to_bf16(v))).collect()
}

/// Accepted error of a kernel output: `|got - want| <= abs + rel * scale`, where `scale` is
/// `|want|` for element-wise outputs and the sum of `|x|` for a reduction (cancellation must
/// not make the bound vanish).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

/// Tolerance for `op` with storage type `dtype` over `n` accumulated elements (row length for
/// row operations, total length for `reduce_sum`, 1 for element-wise).
///
/// bf16 outputs are rounded once (half an ulp, 2^-9 relative) after an `f32` computation; `f32`
/// accumulation in a tree of depth `log2(n)` contributes about `log2(n) * 2^-24` relative to the
/// scale, with a factor of 4 margin for exp/rsqrt approximations (`exp2f`, `rsqrtf`), plus
/// `2 sqrt(n) 2^-24` for the sequential per-thread accumulation of grid-stride loops.
pub fn tolerance(dtype: DType, op: Op, n: usize) -> Tolerance {
    let depth = (n.max(2) as f64).log2().ceil();
    let f32_eps = f32::EPSILON as f64 / 2.0; // unit roundoff 2^-24
                                             // Sequential runs inside one thread add about sqrt(run length) roundings of random sign.
    let acc = (4.0 * (depth + 8.0) + 2.0 * (n.max(1) as f64).sqrt()) * f32_eps;
    match (op, dtype) {
        // Inputs are exact (bf16 decodes exactly); the sum is accumulated and returned in f32.
        (Op::ReduceSum, _) => Tolerance {
            abs: 1e-30,
            rel: acc.max(1e-6),
        },
        (Op::Add, DType::F32) => Tolerance {
            abs: 0.0,
            rel: f32_eps,
        },
        (Op::Add, DType::Bf16) => Tolerance {
            abs: 0.0,
            rel: 2f64.powi(-8),
        },
        // Softmax outputs lie in [0, 1]; tiny entries are judged against an absolute floor.
        (Op::Softmax, DType::F32) => Tolerance {
            abs: 1e-7,
            rel: 2e-5 + acc,
        },
        (Op::Softmax, DType::Bf16) => Tolerance {
            abs: 1e-6,
            rel: 2f64.powi(-8) + acc,
        },
        (Op::Rmsnorm, DType::F32) => Tolerance {
            abs: 1e-6,
            rel: 2e-5 + acc,
        },
        (Op::Rmsnorm, DType::Bf16) => Tolerance {
            abs: 1e-5,
            rel: 2f64.powi(-8) + acc,
        },
    }
}

/// Result of comparing a kernel's output with the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Elements outside the tolerance (NaN where the reference is finite counts; NaN where the
    /// reference is NaN matches).
    pub mismatches: usize,
    pub max_abs_err: f64,
    /// Largest `|got - want| / |want|` over elements with `want != 0`.
    pub max_rel_err: f64,
    /// First element outside the tolerance, with got and want.
    pub first_bad: Option<(usize, f32, f32)>,
}

impl Comparison {
    pub fn ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// Compares element-wise outputs: `|got - want| <= tol.abs + tol.rel * |want|`; infinities must
/// match exactly; NaN matches only NaN.
///
/// Panics if the lengths disagree (a caller bug).
pub fn compare(got: &[f32], want: &[f32], tol: Tolerance) -> Comparison {
    assert_eq!(
        got.len(),
        want.len(),
        "compare: {} outputs against {} expected",
        got.len(),
        want.len()
    );
    let mut c = Comparison {
        mismatches: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        first_bad: None,
    };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let bad = if w.is_nan() || g.is_nan() {
            !(w.is_nan() && g.is_nan())
        } else if w.is_infinite() || g.is_infinite() {
            g != w
        } else {
            let e = ((g as f64) - (w as f64)).abs();
            c.max_abs_err = c.max_abs_err.max(e);
            if w != 0.0 {
                c.max_rel_err = c.max_rel_err.max(e / (w as f64).abs());
            }
            e > tol.abs + tol.rel * (w as f64).abs()
        };
        if bad {
            c.mismatches += 1;
            if c.first_bad.is_none() {
                c.first_bad = Some((i, g, w));
            }
        }
    }
    c
}

/// Compares a reduction result: `|got - want| <= tol.abs + tol.rel * scale` (scale = sum of |x|).
pub fn compare_sum(got: f64, want: f64, scale: f64, tol: Tolerance) -> Comparison {
    let e = (got - want).abs();
    let bad = if want.is_nan() || got.is_nan() {
        !(want.is_nan() && got.is_nan())
    } else if got == want {
        false
    } else {
        !e.is_finite() || e > tol.abs + tol.rel * scale
    };
    Comparison {
        mismatches: bad as usize,
        max_abs_err: if e.is_finite() { e } else { 0.0 },
        max_rel_err: if want != 0.0 && e.is_finite() {
            e / want.abs()
        } else {
            0.0
        },
        first_bad: if bad {
            Some((0, got as f32, want as f32))
        } else {
            None
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_sum_closed_forms() {
        assert_eq!(reduce_sum(&[]), 0.0);
        let x: Vec<f32> = (1..=100_000).map(|i| i as f32).collect();
        assert_eq!(reduce_sum(&x), 100_000.0 * 100_001.0 / 2.0);
        // 0.1 (as f32) ten million times: a naive f32 loop drifts by percent, pairwise f64 does not.
        let x = vec![0.1f32; 10_000_000];
        let want = 0.1f32 as f64 * 1e7;
        assert!((reduce_sum(&x) - want).abs() < 1e-6 * want);
        // cancellation
        let x = [1e30f32, 1.0, -1e30];
        assert!(reduce_sum_abs(&x) > 1e30);
    }

    #[test]
    fn softmax_closed_forms() {
        let y = softmax_rows(&[0.0, 0.0, 0.0, 0.0], 1, 4);
        assert_eq!(y, vec![0.25; 4]);
        let y = softmax_rows(&[0.0, 2f32.ln()], 1, 2);
        assert!((y[0] - 1.0 / 3.0).abs() < 1e-7 && (y[1] - 2.0 / 3.0).abs() < 1e-7);
        // large magnitudes do not overflow
        let y = softmax_rows(&[1e30, 1e30, -1e30], 1, 3);
        assert_eq!(y, vec![0.5, 0.5, 0.0]);
        // -inf entries get zero mass; an all -inf row is zeros
        let y = softmax_rows(
            &[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, f32::NEG_INFINITY],
            2,
            2,
        );
        assert_eq!(y, vec![0.0, 1.0, 0.0, 0.0]);
        let y = softmax_rows(&[f32::NAN, 0.0, 1.0, 1.0], 2, 2);
        assert!(y[0].is_nan() && y[1].is_nan() && y[2] == 0.5);
        for r in softmax_rows(
            &(0..300).map(|i| (i % 17) as f32 * 0.3).collect::<Vec<_>>(),
            3,
            100,
        )
        .chunks(100)
        {
            let s: f64 = r.iter().map(|&v| v as f64).sum();
            assert!((s - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn rmsnorm_closed_forms() {
        // row [3, 4]: mean square 12.5
        let y = rmsnorm_rows(&[3.0, 4.0], &[1.0, 2.0], 1, 2, 0.0);
        let r = 12.5f64.sqrt();
        assert!((y[0] as f64 - 3.0 / r).abs() < 1e-7 && (y[1] as f64 - 8.0 / r).abs() < 1e-6);
        assert_eq!(rmsnorm_rows(&[0.0; 4], &[1.0; 2], 2, 2, 1e-6), vec![0.0; 4]);
        // constant row c -> c / sqrt(c^2 + eps) ~ 1
        let y = rmsnorm_rows(&[7.0; 5], &[1.0; 5], 1, 5, 1e-6);
        assert!(y.iter().all(|&v| (v - 1.0).abs() < 1e-7));
        // huge magnitudes: f64 squares do not overflow
        let y = rmsnorm_rows(&[1e30, -1e30], &[1.0, 1.0], 1, 2, 1e-6);
        assert_eq!(y, vec![1.0, -1.0]);
    }

    #[test]
    fn add_and_gelu() {
        assert_eq!(add(&[1.0, 2.5], &[-1.0, 0.25]), vec![0.0, 2.75]);
        let g = gelu(&[0.0, 100.0, -100.0, 1.0]);
        assert_eq!(g[0], 0.0);
        assert_eq!(g[1], 100.0);
        assert_eq!(g[2], 0.0);
        assert!((g[3] - 0.841_192).abs() < 1e-5);
    }

    #[test]
    fn bf16_round_trip_and_rounding() {
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            65280.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            assert_eq!(bf16_to_f32(f32_to_bf16(v)).to_bits(), v.to_bits());
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0)
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        // 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6: ties to even (1+2^-6)
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        // just above halfway rounds up
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 0x3f81);
        // overflow rounds to infinity
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80);
        // every bf16 bit pattern survives a round trip
        for h in 0..=u16::MAX {
            let f = bf16_to_f32(h);
            if !f.is_nan() {
                assert_eq!(f32_to_bf16(f), h);
            }
        }
    }

    #[test]
    fn tolerance_and_compare() {
        let t = tolerance(DType::F32, Op::Softmax, 1024);
        assert!(t.rel > 0.0 && t.rel < 1e-3);
        assert!(tolerance(DType::Bf16, Op::Softmax, 1024).rel > t.rel);
        assert!(
            tolerance(DType::F32, Op::ReduceSum, 1 << 30).rel
                > tolerance(DType::F32, Op::ReduceSum, 32).rel
        );
        let c = compare(&[1.0, 2.0, f32::NAN], &[1.0, 2.0, f32::NAN], t);
        assert!(c.ok());
        let c = compare(&[1.0, 2.1, f32::NAN], &[1.0, 2.0, 3.0], t);
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.first_bad.unwrap().0, 1);
        assert!(!compare(&[f32::INFINITY], &[1e30], t).ok());
        let tr = tolerance(DType::F32, Op::ReduceSum, 3);
        assert!(compare_sum(1.0, 1.0, 2e30, tr).ok());
        assert!(!compare_sum(f64::NAN, 1.0, 1.0, tr).ok());
    }
}
