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
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::EnumIter,
    strum::AsRefStr,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
pub enum DType {
    #[strum(
        to_string = "fp32",
        serialize = "f32",
        serialize = "float32",
        serialize = "float"
    )]
    F32,
    #[strum(to_string = "bf16", serialize = "bfloat16")]
    Bf16,
}

/// `ALL` (every variant, in order), `as_str` (the name) and `parse` (the name or another
/// spelling strum accepts) of a strum name enum.
macro_rules! name_table {
    ($t:ident, $n:literal) => {
        impl $t {
            pub const ALL: [$t; $n] = kplan_kb::all_variants();
            pub fn as_str(self) -> &'static str {
                self.into()
            }
            pub fn parse(s: &str) -> Option<$t> {
                s.parse().ok()
            }
        }
    };
}

// `DType::parse` takes the name (`fp32`, `bf16`) or another spelling of it (`f32`, `float32`,
// `float`, `bfloat16`).
name_table!(DType, 2);
name_table!(Op, 5);

impl DType {
    /// Bytes per stored element.
    pub fn bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::Bf16 => 2,
        }
    }
}

/// The operations the reference implements.
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    ReduceSum,
    Softmax,
    Rmsnorm,
    Add,
    /// Per-row fp8 e4m3 quantization: fp8 codes plus one fp32 scale per row.
    QuantizeFp8,
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
    // (absolute floor, relative tolerance)
    let (abs, rel) = match (op, dtype) {
        // Inputs are exact (bf16 decodes exactly); the sum is accumulated and returned in f32.
        (Op::ReduceSum, _) => (1e-30, acc.max(1e-6)),
        (Op::Add, DType::F32) => (0.0, f32_eps),
        (Op::Add, DType::Bf16) => (0.0, 2f64.powi(-8)),
        // Softmax outputs lie in [0, 1]; tiny entries are judged against an absolute floor.
        (Op::Softmax, DType::F32) => (1e-7, 2e-5 + acc),
        (Op::Softmax, DType::Bf16) => (1e-6, 2f64.powi(-8) + acc),
        (Op::Rmsnorm, DType::F32) => (1e-6, 2e-5 + acc),
        (Op::Rmsnorm, DType::Bf16) => (1e-5, 2f64.powi(-8) + acc),
        // Bit-exact: the codes and scales are compared exactly (see compare_exact).
        (Op::QuantizeFp8, _) => (0.0, 0.0),
    };
    Tolerance { abs, rel }
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

/// An fp8 e4m3 encoding.
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp8Encoding {
    /// OCP e4m3fn: bias 7, max 448, NaN 0x7f/0xff, signed zero (NVIDIA sm_89+, gfx950, gfx12).
    E4m3fn,
    /// e4m3fnuz: bias 8, max 240, NaN 0x80 only, no negative zero (gfx940/941/942).
    E4m3fnuz,
}

impl Fp8Encoding {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    /// Largest finite value.
    pub fn max(self) -> f32 {
        match self {
            Fp8Encoding::E4m3fn => 448.0,
            Fp8Encoding::E4m3fnuz => 240.0,
        }
    }
    /// The code of NaN.
    pub fn nan(self) -> u8 {
        match self {
            Fp8Encoding::E4m3fn => 0x7f,
            Fp8Encoding::E4m3fnuz => 0x80,
        }
    }
    fn bias(self) -> i32 {
        match self {
            Fp8Encoding::E4m3fn => 7,
            Fp8Encoding::E4m3fnuz => 8,
        }
    }
}

/// Value of an fp8 code (exact in `f32`).
pub fn fp8_to_f32(code: u8, enc: Fp8Encoding) -> f32 {
    let sign = if code & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = ((code >> 3) & 0xf) as i32;
    let m = (code & 7) as f32;
    match enc {
        Fp8Encoding::E4m3fn if code & 0x7f == 0x7f => return f32::NAN,
        Fp8Encoding::E4m3fnuz if code == 0x80 => return f32::NAN,
        _ => {}
    }
    let mag = if e == 0 {
        m * 2f32.powi(1 - enc.bias() - 3)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - enc.bias())
    };
    sign * mag
}

/// The code nearest to `v` (ties to the even code, i.e. even mantissa), saturating at the
/// encoding's maximum; NaN gives the NaN code. Found by search over the finite codes' values,
/// independently of how a kernel rounds.
pub fn f32_to_fp8(v: f32, enc: Fp8Encoding) -> u8 {
    if v.is_nan() {
        return enc.nan();
    }
    let a = (v as f64).abs();
    // positive finite codes 0x00..=0x7e (fn) or 0x7f (fnuz), increasing in value
    let top: u8 = match enc {
        Fp8Encoding::E4m3fn => 0x7e,
        Fp8Encoding::E4m3fnuz => 0x7f,
    };
    let val = |c: u8| fp8_to_f32(c, enc) as f64;
    let code = if a >= val(top) {
        top
    } else {
        // largest code whose value is <= a
        let (mut lo, mut hi) = (0u8, top);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if val(mid) <= a {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (dl, dh) = (a - val(lo), val(hi) - a);
        if dl < dh || (dl == dh && lo & 1 == 0) {
            lo
        } else {
            hi
        }
    };
    if v.is_sign_negative() && !(enc == Fp8Encoding::E4m3fnuz && code == 0) {
        code | 0x80
    } else {
        code
    }
}

/// Per-row fp8 quantization, the operation `kernels/quantize_fp8.cu` implements, with the same
/// `f32` operations: `amax` = max |x| over the row (NaN ignored), `scale = amax / MAX` and
/// `mul = MAX / amax` (both 1 for `amax == 0`), code = nearest to `clamp(x * mul, -MAX, MAX)`
/// (NaN stays NaN). Returns the codes and one scale per row.
///
/// Panics if `x.len() != rows * cols` (a caller bug).
pub fn quantize_fp8_rows(
    x: &[f32],
    rows: usize,
    cols: usize,
    enc: Fp8Encoding,
) -> (Vec<u8>, Vec<f32>) {
    check_rows(x.len(), rows, cols);
    let max = enc.max();
    let mut q = vec![0u8; x.len()];
    let mut scales = vec![1.0f32; rows];
    if cols == 0 {
        return (q, scales);
    }
    for (r, (xr, qr)) in x
        .chunks_exact(cols)
        .zip(q.chunks_exact_mut(cols))
        .enumerate()
    {
        // f32::max ignores NaN, as fmaxf does
        let amax = xr.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let (scale, mul) = if amax > 0.0 {
            (amax / max, max / amax)
        } else {
            (1.0, 1.0)
        };
        scales[r] = scale;
        for (c, &v) in qr.iter_mut().zip(xr) {
            let s = if v.is_nan() {
                v
            } else {
                (v * mul).min(max).max(-max)
            };
            *c = f32_to_fp8(s, enc);
        }
    }
    (q, scales)
}

/// Exact comparison (bit patterns; any NaN matches any NaN).
pub fn compare_exact(got: &[f32], want: &[f32]) -> Comparison {
    let mut c = Comparison {
        mismatches: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        first_bad: None,
    };
    if got.len() != want.len() {
        c.mismatches = want.len().max(1);
        return c;
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        if !same {
            if g.is_finite() && w.is_finite() {
                let e = ((g as f64) - (w as f64)).abs();
                c.max_abs_err = c.max_abs_err.max(e);
                if w != 0.0 {
                    c.max_rel_err = c.max_rel_err.max(e / (w as f64).abs());
                }
            }
            c.mismatches += 1;
            if c.first_bad.is_none() {
                c.first_bad = Some((i, g, w));
            }
        }
    }
    c
}

#[cfg(test)]
mod fp8_tests {
    use super::*;

    #[test]
    fn fp8_codes_decode_to_the_encodings_values() {
        use Fp8Encoding::*;
        assert_eq!(fp8_to_f32(0x7e, E4m3fn), 448.0);
        assert!(fp8_to_f32(0x7f, E4m3fn).is_nan());
        assert!(fp8_to_f32(0xff, E4m3fn).is_nan());
        assert_eq!(fp8_to_f32(0x01, E4m3fn), 2f32.powi(-9));
        assert_eq!(fp8_to_f32(0x08, E4m3fn), 2f32.powi(-6));
        assert_eq!(fp8_to_f32(0x38, E4m3fn), 1.0);
        assert_eq!(fp8_to_f32(0x80, E4m3fn).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fp8_to_f32(0x7f, E4m3fnuz), 240.0);
        assert!(fp8_to_f32(0x80, E4m3fnuz).is_nan());
        assert_eq!(fp8_to_f32(0x01, E4m3fnuz), 2f32.powi(-10));
        assert_eq!(fp8_to_f32(0x40, E4m3fnuz), 1.0);
        assert_eq!(fp8_to_f32(0xc0, E4m3fnuz), -1.0);
    }

    #[test]
    fn fp8_rounding_is_nearest_even_and_saturating() {
        use Fp8Encoding::*;
        for enc in [E4m3fn, E4m3fnuz] {
            // every finite code round-trips
            for c in 0..=255u8 {
                let v = fp8_to_f32(c, enc);
                if v.is_nan() || (enc == E4m3fn && c == 0x80) {
                    continue;
                }
                assert_eq!(f32_to_fp8(v, enc), c, "{enc:?} {c:#x} {v}");
            }
            assert_eq!(f32_to_fp8(1e9, enc), f32_to_fp8(enc.max(), enc));
            assert_eq!(f32_to_fp8(f32::NAN, enc), enc.nan());
        }
        // 1 + 1/16 is half-way between 1 and 1 + 1/8: ties to the even mantissa (1.0)
        assert_eq!(f32_to_fp8(1.0625, E4m3fn), 0x38);
        // 1 + 3/16 is half-way between 1 + 1/8 and 1 + 2/8: even is 1 + 2/8
        assert_eq!(f32_to_fp8(1.1875, E4m3fn), 0x3a);
        // half the smallest subnormal rounds to zero (even), a little more rounds up
        assert_eq!(f32_to_fp8(2f32.powi(-10), E4m3fn), 0x00);
        assert_eq!(f32_to_fp8(2f32.powi(-10) * 1.01, E4m3fn), 0x01);
        // e4m3fnuz has no negative zero
        assert_eq!(f32_to_fp8(-1e-30, E4m3fnuz), 0x00);
        assert_eq!(f32_to_fp8(-1e-30, E4m3fn), 0x80);
    }

    #[test]
    fn quantize_rows_scale_to_the_encodings_max() {
        let x = [1.0f32, -2.0, 0.5, 4.0, 0.0, 0.0, 0.0, 0.0];
        for enc in [Fp8Encoding::E4m3fn, Fp8Encoding::E4m3fnuz] {
            let (q, s) = quantize_fp8_rows(&x, 2, 4, enc);
            assert_eq!(s, vec![4.0 / enc.max(), 1.0]);
            assert_eq!(fp8_to_f32(q[3], enc), enc.max());
            assert_eq!(fp8_to_f32(q[1], enc), -enc.max() / 2.0);
            assert!(q[4..].iter().all(|&c| c == 0));
        }
    }
}
