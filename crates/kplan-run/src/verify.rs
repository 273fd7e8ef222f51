//! `kplan verify`: run a kernel on a backend over edge-case sizes, adversarial data and every
//! valid tile configuration, and compare with the CPU reference.

use crate::data::{generate, DataKind};
use crate::error::RunError;
use crate::exec::{Case, Executor};
use crate::kernels::{fp8_encoding, is_rows, Backend, Config, Shape, Tiles};
use crate::reference::{self, tolerance, Comparison, DType, Op};
use crate::skip::Skip;
use serde::Serialize;

/// Edge-case sizes every flat kernel is checked on (the large one is added per backend).
pub const FLAT_SIZES: [u64; 9] = [1, 31, 32, 33, 63, 64, 65, 1000, (1 << 20) + 7];

/// Row shapes every row kernel is checked on: row lengths around warp and block edges, many
/// short rows, one very long row (the large one is added per backend).
pub const ROW_SHAPES: [(usize, usize); 11] = [
    (1, 1),
    (3, 31),
    (2, 32),
    (5, 33),
    (4, 63),
    (3, 64),
    (2, 65),
    (7, 1000),
    (1000, 32),
    (33, 4096),
    (1, (1 << 20) + 7),
];

/// The default shapes for `op` on `backend`, the large case included.
pub fn default_shapes(op: Op, backend: Backend) -> Vec<Shape> {
    let gpu = backend != Backend::Host;
    if is_rows(op) {
        let mut v: Vec<Shape> = ROW_SHAPES
            .iter()
            .map(|&(rows, cols)| Shape::Rows { rows, cols })
            .collect();
        if gpu {
            v.push(Shape::Rows {
                rows: 8192,
                cols: 4096,
            });
            v.push(Shape::Rows {
                rows: 512,
                cols: 32768,
            });
        } else {
            v.push(Shape::Rows {
                rows: 96,
                cols: 2048,
            });
        }
        v
    } else {
        let mut v: Vec<Shape> = FLAT_SIZES.iter().map(|&n| Shape::Flat(n)).collect();
        v.push(Shape::Flat(if gpu { (1 << 27) + 3 } else { (3 << 20) + 1 }));
        v
    }
}

/// Parses a size expression: digits with `+ - * ^` (`2^20+7`, `1000`).
pub fn parse_expr(text: &str) -> Result<u64, RunError> {
    let bad = |m: &str| RunError::BadSize {
        text: text.to_string(),
        message: m.to_string(),
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("empty size"));
    }
    // sum of products of powers
    let mut total: i128 = 0;
    let mut sign = 1i128;
    let mut term = String::new();
    let flush = |term: &str, sign: i128, total: &mut i128| -> Result<(), RunError> {
        let mut prod: i128 = 1;
        for f in term.split('*') {
            let mut parts = f.split('^');
            let base: i128 = parts
                .next()
                .unwrap_or("")
                .trim()
                .parse()
                .map_err(|_| bad("expected a number"))?;
            let val = match parts.next() {
                None => base,
                Some(e) => {
                    let e: u32 = e.trim().parse().map_err(|_| bad("expected an exponent"))?;
                    if parts.next().is_some() || e > 62 {
                        return Err(bad("exponent too large or repeated"));
                    }
                    base.checked_pow(e).ok_or_else(|| bad("too large"))?
                }
            };
            prod = prod.checked_mul(val).ok_or_else(|| bad("too large"))?;
        }
        *total += sign * prod;
        Ok(())
    };
    for ch in t.chars() {
        match ch {
            '+' | '-' => {
                flush(&term, sign, &mut total)?;
                term.clear();
                sign = if ch == '+' { 1 } else { -1 };
            }
            c if c.is_ascii_digit() || c == '*' || c == '^' || c == ' ' => term.push(c),
            _ => return Err(bad("expected digits and + - * ^")),
        }
    }
    flush(&term, sign, &mut total)?;
    if total <= 0 || total > (1i128 << 40) {
        return Err(bad("size must be between 1 and 2^40"));
    }
    Ok(total as u64)
}

/// Parses `--sizes`: comma-separated; flat kernels take `N`, row kernels `ROWSxCOLS` or `COLS`
/// (three rows).
pub fn parse_sizes(op: Op, text: &str) -> Result<Vec<Shape>, RunError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if is_rows(op) {
            let (r, c) = match item.split_once(['x', 'X']) {
                Some((r, c)) => (parse_expr(r)?, parse_expr(c)?),
                None => (3, parse_expr(item)?),
            };
            if r > i32::MAX as u64 || c > i32::MAX as u64 {
                return Err(RunError::BadSize {
                    text: item.into(),
                    message: "rows and cols must fit in 32 bits".into(),
                });
            }
            out.push(Shape::Rows {
                rows: r as usize,
                cols: c as usize,
            });
        } else {
            if item.contains(['x', 'X']) {
                return Err(RunError::BadSize {
                    text: item.into(),
                    message: format!("{} takes element counts, not ROWSxCOLS", op.as_str()),
                });
            }
            out.push(Shape::Flat(parse_expr(item)?));
        }
    }
    if out.is_empty() {
        return Err(RunError::BadSize {
            text: text.into(),
            message: "no sizes given".into(),
        });
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    Skipped,
}

/// One kernel run compared with the reference.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub dtype: &'static str,
    pub shape: String,
    pub data: &'static str,
    pub config: String,
    pub passed: bool,
    pub mismatches: usize,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A configuration that does not fit a shape, with why.
#[derive(Debug, Clone, Serialize)]
pub struct NotApplicable {
    pub dtype: &'static str,
    pub shape: String,
    pub config: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub kernel: String,
    pub backend: String,
    pub device: String,
    pub status: Status,
    /// Why nothing ran (JSON: the string `skip_reason`).
    #[serde(
        rename = "skip_reason",
        serialize_with = "crate::skip::as_reason",
        skip_serializing_if = "Option::is_none"
    )]
    pub skip: Option<Skip>,
    pub runs: usize,
    pub failures: usize,
    pub configs: Vec<String>,
    pub cases: Vec<CaseResult>,
    pub not_applicable: Vec<NotApplicable>,
}

impl VerifyReport {
    pub fn skipped(kernel: &str, backend: &str, skip: Skip) -> VerifyReport {
        VerifyReport {
            kernel: kernel.into(),
            backend: backend.into(),
            device: String::new(),
            status: Status::Skipped,
            skip: Some(skip),
            runs: 0,
            failures: 0,
            configs: vec![],
            cases: vec![],
            not_applicable: vec![],
        }
    }
}

/// What to verify.
#[derive(Debug, Clone)]
pub struct VerifyPlan {
    pub op: Op,
    pub dtypes: Vec<DType>,
    /// None: [`default_shapes`].
    pub shapes: Option<Vec<Shape>>,
    pub seed: u64,
    pub eps: f32,
}

/// Inputs of `op` on `shape` with data `kind` (weight / b from a second stream).
pub fn make_case(op: Op, kind: DataKind, dtype: DType, shape: Shape, seed: u64, eps: f32) -> Case {
    let n = shape.elements() as usize;
    let cols = match shape {
        Shape::Rows { cols, .. } => cols,
        Shape::Flat(_) => 1,
    };
    let a = generate(op, kind, dtype, n, cols, seed);
    let b = match op {
        Op::Add => generate(op, kind, dtype, n, 1, seed ^ 0x5eed),
        Op::Rmsnorm => {
            let mut r = crate::data::Rng::new(seed ^ 0x77);
            let w: Vec<f32> = (0..cols).map(|_| 1.0 + 0.5 * r.normal()).collect();
            if dtype == DType::Bf16 {
                reference::round_bf16(&w)
            } else {
                w
            }
        }
        _ => Vec::new(),
    };
    Case { shape, a, b, eps }
}

/// Reference output of a case; for reduce_sum (sum, sum of |x|).
pub enum Expected {
    Sum {
        sum: f64,
        scale: f64,
    },
    Elements(Vec<f32>),
    /// quantize_fp8: per encoding (e4m3fn, e4m3fnuz) the decoded codes followed by the row
    /// scales, compared bit for bit.
    Fp8 {
        e4m3fn: Vec<f32>,
        e4m3fnuz: Vec<f32>,
    },
}

pub fn expected(op: Op, case: &Case) -> Expected {
    match (op, case.shape) {
        (Op::ReduceSum, _) => Expected::Sum {
            sum: reference::reduce_sum(&case.a),
            scale: reference::reduce_sum_abs(&case.a),
        },
        (Op::Add, _) => Expected::Elements(reference::add(&case.a, &case.b)),
        (Op::Softmax, Shape::Rows { rows, cols }) => {
            Expected::Elements(reference::softmax_rows(&case.a, rows, cols))
        }
        (Op::Rmsnorm, Shape::Rows { rows, cols }) => Expected::Elements(reference::rmsnorm_rows(
            &case.a, &case.b, rows, cols, case.eps,
        )),
        (Op::QuantizeFp8, Shape::Rows { rows, cols }) => {
            let one = |enc: reference::Fp8Encoding| {
                let (q, s) = reference::quantize_fp8_rows(&case.a, rows, cols, enc);
                let mut v: Vec<f32> = q.iter().map(|&c| reference::fp8_to_f32(c, enc)).collect();
                v.extend(s);
                v
            };
            Expected::Fp8 {
                e4m3fn: one(reference::Fp8Encoding::E4m3fn),
                e4m3fnuz: one(reference::Fp8Encoding::E4m3fnuz),
            }
        }
        _ => Expected::Elements(Vec::new()),
    }
}

/// Compares the output of a run with `cfg` on `backend` with the expectation (the encoding of a
/// quantize_fp8 run follows from both).
pub fn check_run(
    op: Op,
    dtype: DType,
    shape: Shape,
    cfg: &Config,
    backend: Backend,
    got: &[f32],
    want: &Expected,
) -> Comparison {
    if let Expected::Fp8 { e4m3fn, e4m3fnuz } = want {
        return match fp8_encoding(cfg, backend) {
            reference::Fp8Encoding::E4m3fn => reference::compare_exact(got, e4m3fn),
            reference::Fp8Encoding::E4m3fnuz => reference::compare_exact(got, e4m3fnuz),
        };
    }
    check(op, dtype, shape, got, want)
}

/// Compares a kernel output with the expectation (quantize_fp8: as e4m3fn).
pub fn check(op: Op, dtype: DType, shape: Shape, got: &[f32], want: &Expected) -> Comparison {
    let n = match shape {
        Shape::Flat(n) => n as usize,
        Shape::Rows { cols, .. } => cols,
    };
    let tol = tolerance(dtype, op, if op == Op::Add { 1 } else { n });
    match want {
        Expected::Sum { sum, scale } => {
            if got.len() != 1 {
                return Comparison {
                    mismatches: 1,
                    max_abs_err: 0.0,
                    max_rel_err: 0.0,
                    first_bad: None,
                };
            }
            reference::compare_sum(got[0] as f64, *sum, *scale, tol)
        }
        Expected::Fp8 { e4m3fn, .. } => reference::compare_exact(got, e4m3fn),
        Expected::Elements(w) => {
            if got.len() != w.len() {
                return Comparison {
                    mismatches: w.len().max(1),
                    max_abs_err: 0.0,
                    max_rel_err: 0.0,
                    first_bad: None,
                };
            }
            reference::compare(got, w, tol)
        }
    }
}

/// Runs the plan on `exec`. `progress` is called after every run with the run's result, the
/// runs done and the runs planned (for a CLI's N-of-M progress bar).
pub fn verify(
    exec: &mut dyn Executor,
    tiles: &Tiles,
    kernel: &str,
    plan: &VerifyPlan,
    progress: &mut dyn FnMut(&CaseResult, usize, usize),
) -> VerifyReport {
    let op = plan.op;
    let shapes = plan
        .shapes
        .clone()
        .unwrap_or_else(|| default_shapes(op, exec.backend()));
    let mut report = VerifyReport {
        kernel: kernel.to_string(),
        backend: exec.backend().as_str().to_string(),
        device: exec.describe(),
        status: Status::Passed,
        skip: None,
        runs: 0,
        failures: 0,
        configs: vec![],
        cases: vec![],
        not_applicable: vec![],
    };
    let mut seen_configs: Vec<Config> = Vec::new();
    let mut all: Vec<(Op, DType, Config)> = Vec::new();
    // every applicable configuration runs once per data kind
    let mut planned = 0;
    for &dtype in &plan.dtypes {
        for &shape in &shapes {
            for (c, why) in exec.configs(tiles, op, dtype, shape) {
                if why.is_none() {
                    planned += DataKind::for_op(op).len();
                    if !all.contains(&(op, dtype, c)) {
                        all.push((op, dtype, c));
                    }
                }
            }
        }
    }
    exec.prepare(&all);
    for &dtype in &plan.dtypes {
        for &shape in &shapes {
            let configs = exec.configs(tiles, op, dtype, shape);
            for (c, why) in &configs {
                if let Some(why) = why {
                    report.not_applicable.push(NotApplicable {
                        dtype: dtype.as_str(),
                        shape: shape.label(),
                        config: exec.label(c),
                        reason: why.clone(),
                    });
                } else if !seen_configs.contains(c) {
                    seen_configs.push(*c);
                }
            }
            for (i, &kind) in DataKind::for_op(op).iter().enumerate() {
                let seed = plan
                    .seed
                    .wrapping_add((shape.elements()).wrapping_mul(31))
                    .wrapping_add(i as u64 * 1_000_003);
                let case = make_case(op, kind, dtype, shape, seed, plan.eps);
                let want = expected(op, &case);
                for (cfg, why) in &configs {
                    if why.is_some() {
                        continue;
                    }
                    let mut r = CaseResult {
                        dtype: dtype.as_str(),
                        shape: shape.label(),
                        data: kind.as_str(),
                        config: exec.label(cfg),
                        passed: false,
                        mismatches: 0,
                        max_abs_err: 0.0,
                        max_rel_err: 0.0,
                        first_bad: None,
                        error: None,
                    };
                    match exec.run(op, dtype, cfg, &case) {
                        Ok(got) => {
                            let c = check_run(op, dtype, shape, cfg, exec.backend(), &got, &want);
                            r.passed = c.ok();
                            r.mismatches = c.mismatches;
                            r.max_abs_err = c.max_abs_err;
                            r.max_rel_err = c.max_rel_err;
                            r.first_bad = c
                                .first_bad
                                .map(|(i, g, w)| format!("element {i}: got {g:e}, expected {w:e}"));
                        }
                        Err(e) => r.error = Some(e.to_string()),
                    }
                    report.runs += 1;
                    if !r.passed {
                        report.failures += 1;
                    }
                    progress(&r, report.runs, planned);
                    report.cases.push(r);
                }
            }
        }
    }
    report.configs = seen_configs.iter().map(|c| exec.label(c)).collect();
    if report.failures > 0 {
        report.status = Status::Failed;
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_expressions() {
        assert_eq!(parse_expr("2^20+7").unwrap(), (1 << 20) + 7);
        assert_eq!(parse_expr("1000").unwrap(), 1000);
        assert_eq!(parse_expr("3*2^10-1").unwrap(), 3071);
        assert!(parse_expr("0").is_err());
        assert!(parse_expr("abc").is_err());
        assert!(parse_expr("2^99").is_err());
        assert_eq!(
            parse_sizes(Op::Softmax, "8x33, 64").unwrap(),
            vec![
                Shape::Rows { rows: 8, cols: 33 },
                Shape::Rows { rows: 3, cols: 64 }
            ]
        );
        assert!(parse_sizes(Op::Add, "8x33").is_err());
        assert!(parse_sizes(Op::Add, ",").is_err());
    }
}
