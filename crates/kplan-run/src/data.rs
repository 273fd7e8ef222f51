//! Deterministic test data: random values plus the adversarial cases verify must survive.

use crate::reference::{round_bf16, DType, Op};

/// A small, fast, seedable generator (SplitMix64); deterministic across platforms.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    /// Roughly normal (sum of four uniforms, scaled to unit variance).
    pub fn normal(&mut self) -> f32 {
        (self.uniform() + self.uniform() + self.uniform() + self.uniform()) * 0.866_025_4
    }
}

/// The kinds of input data verify runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum DataKind {
    /// Normal values, unit scale (softmax: scale 4 so rows are peaked).
    Random,
    /// Large magnitudes: softmax +-1e30 (overflows a naive exp), rmsnorm 1e15 (squares near
    /// 1e30), add values near the fp32/bf16 maximum (sums overflow to +-inf), reduce_sum 1e30
    /// with cancellation.
    Large,
    /// Every element of a row (of the array) equal.
    Equal,
    /// softmax only: about a quarter of the entries -inf and the first row all -inf.
    NegInf,
    /// quantize_fp8 only: magnitudes spread over 2^-30..2^0 (codes down to the subnormals and
    /// zero), with exact zeros and NaN entries, and the first row all zeros.
    Wide,
}

impl DataKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    /// The kinds that apply to `op`.
    pub fn for_op(op: Op) -> &'static [DataKind] {
        match op {
            Op::Softmax => &[
                DataKind::Random,
                DataKind::Large,
                DataKind::Equal,
                DataKind::NegInf,
            ],
            Op::QuantizeFp8 => &[
                DataKind::Random,
                DataKind::Large,
                DataKind::Equal,
                DataKind::Wide,
            ],
            _ => &[DataKind::Random, DataKind::Large, DataKind::Equal],
        }
    }
}

/// `n` values of `kind` for `op`, already rounded to `dtype` (so the reference sees exactly what
/// the kernel reads). `cols` is the row length for row ops (1 for flat ops).
pub fn generate(
    op: Op,
    kind: DataKind,
    dtype: DType,
    n: usize,
    cols: usize,
    seed: u64,
) -> Vec<f32> {
    let mut r = Rng::new(seed);
    let cols = cols.max(1);
    let v: Vec<f32> = match kind {
        DataKind::Random => {
            let s = if op == Op::Softmax { 4.0 } else { 1.0 };
            (0..n).map(|_| r.normal() * s).collect()
        }
        DataKind::Large => {
            let s = match op {
                Op::Softmax | Op::ReduceSum | Op::QuantizeFp8 => 1e30,
                Op::Rmsnorm => 1e15,
                Op::Add => 1.5e38,
            };
            (0..n).map(|_| r.uniform() * s).collect()
        }
        DataKind::Equal => {
            let mut out = Vec::with_capacity(n);
            let mut c = 0.0f32;
            for i in 0..n {
                if i % cols == 0 {
                    c = r.normal() * 3.0;
                }
                out.push(if op == Op::ReduceSum || op == Op::Add {
                    0.375
                } else {
                    c
                });
            }
            out
        }
        DataKind::NegInf => (0..n)
            .map(|i| {
                if i < cols || r.next_u64() % 4 == 0 {
                    f32::NEG_INFINITY
                } else {
                    r.normal() * 4.0
                }
            })
            .collect(),
        DataKind::Wide => (0..n)
            .map(|i| {
                let u = r.next_u64();
                if i < cols || u % 64 == 0 {
                    0.0
                } else if u % 251 == 0 {
                    f32::NAN
                } else {
                    let e = -(((u >> 8) % 31) as i32);
                    r.uniform() * 2f32.powi(e)
                }
            })
            .collect(),
    };
    match dtype {
        DType::F32 => v,
        DType::Bf16 => round_bf16(&v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_spread() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        let mut r = Rng::new(1);
        let xs: Vec<f32> = (0..10000).map(|_| r.uniform()).collect();
        assert!(xs.iter().all(|&x| (-1.0..1.0).contains(&x)));
        let mean: f32 = xs.iter().sum::<f32>() / xs.len() as f32;
        assert!(mean.abs() < 0.05);
    }

    #[test]
    fn neg_inf_data_has_a_full_row() {
        let v = generate(Op::Softmax, DataKind::NegInf, DType::Bf16, 64, 16, 3);
        assert!(v[..16].iter().all(|x| *x == f32::NEG_INFINITY));
        assert!(v[16..].iter().any(|x| x.is_finite()));
    }
}
