//! The kernel spec (TOML): raw serde model with spans, then validation into [`Spec`].
//!
//! Unknown keys and wrong types are rejected by serde (`deny_unknown_fields`) with the span toml
//! reports; names (op, dtype, target, feature, expertise, abstraction) are checked here against
//! fixed lists or the knowledge base, with a "did you mean" when a known name is close.

use crate::error::SpecError;
use kplan_kb::{closest, Dtype, Kb};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    kernel: RawKernel,
    backends: RawBackends,
    #[serde(default)]
    requirements: RawRequirements,
    #[serde(default)]
    team: RawTeam,
    #[serde(default)]
    abstraction: Option<RawAbstraction>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    name: Spanned<String>,
    op: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    dtypes: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    problem: Option<Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>>,
    #[serde(default)]
    features: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackends {
    #[serde(default)]
    targets: Option<Spanned<Vec<Spanned<String>>>>,
    /// More targets, named by device; merged after `targets`.
    #[serde(default)]
    devices: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRequirements {
    #[serde(default)]
    performance: Option<Spanned<String>>,
    #[serde(default)]
    framework_expressible: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTeam {
    #[serde(default)]
    expertise: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAbstraction {
    allowed: Spanned<Vec<Spanned<String>>>,
}

/// Operation class; decides the FLOP/byte formulas and the tile shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Elementwise,
    Reduction,
    Softmax,
    Norm,
    Gemm,
    Attention,
    Scan,
    Custom,
}

impl Op {
    pub const ALL: [Op; 8] = [
        Op::Elementwise,
        Op::Reduction,
        Op::Softmax,
        Op::Norm,
        Op::Gemm,
        Op::Attention,
        Op::Scan,
        Op::Custom,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Elementwise => "elementwise",
            Op::Reduction => "reduction",
            Op::Softmax => "softmax",
            Op::Norm => "norm",
            Op::Gemm => "gemm",
            Op::Attention => "attention",
            Op::Scan => "scan",
            Op::Custom => "custom",
        }
    }
    /// Ops whose inner loop runs on matrix units (MMA/WGMMA/MFMA/WMMA) when the dtype allows.
    pub fn uses_matrix_units(self) -> bool {
        matches!(self, Op::Gemm | Op::Attention)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PerfReq {
    NearPeak,
    Reasonable,
}

impl PerfReq {
    pub fn as_str(self) -> &'static str {
        match self {
            PerfReq::NearPeak => "near-peak",
            PerfReq::Reasonable => "reasonable",
        }
    }
}

/// Abstraction levels a team may allow, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Abstraction {
    Framework,
    VendorBlas,
    Triton,
    HipSingleSource,
    Cutlass,
    PerBackend,
    Sycl,
    Opencl,
    Metal,
}

impl Abstraction {
    pub const ALL: [Abstraction; 9] = [
        Abstraction::Framework,
        Abstraction::VendorBlas,
        Abstraction::Triton,
        Abstraction::HipSingleSource,
        Abstraction::Cutlass,
        Abstraction::PerBackend,
        Abstraction::Sycl,
        Abstraction::Opencl,
        Abstraction::Metal,
    ];
    /// What a spec without `[abstraction] allowed` allows: the six standard levels.
    pub const DEFAULT_ALLOWED: [Abstraction; 6] = [
        Abstraction::Framework,
        Abstraction::VendorBlas,
        Abstraction::Triton,
        Abstraction::HipSingleSource,
        Abstraction::Cutlass,
        Abstraction::PerBackend,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Abstraction::Framework => "framework",
            Abstraction::VendorBlas => "vendor-blas",
            Abstraction::Triton => "triton",
            Abstraction::HipSingleSource => "hip-single-source",
            Abstraction::Cutlass => "cutlass",
            Abstraction::PerBackend => "per-backend",
            Abstraction::Sycl => "sycl",
            Abstraction::Opencl => "opencl",
            Abstraction::Metal => "metal",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expertise {
    Cuda,
    Hip,
    Triton,
    Cpu,
    Sycl,
    Metal,
    Opencl,
}

impl Expertise {
    pub const ALL: [Expertise; 7] = [
        Expertise::Cuda,
        Expertise::Hip,
        Expertise::Triton,
        Expertise::Cpu,
        Expertise::Sycl,
        Expertise::Metal,
        Expertise::Opencl,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Expertise::Cuda => "cuda",
            Expertise::Hip => "hip",
            Expertise::Triton => "triton",
            Expertise::Cpu => "cpu",
            Expertise::Sycl => "sycl",
            Expertise::Metal => "metal",
            Expertise::Opencl => "opencl",
        }
    }
}

/// fp8 encoding named by the spec, where it named one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fp8Encoding {
    /// OCP e4m3fn / e5m2 (NVIDIA, gfx950, RDNA4).
    Ocp,
    /// e4m3fnuz / e5m2fnuz (gfx942).
    Fnuz,
}

/// Problem sizes. Every count is an element count; `flops`/`bytes` only for custom ops.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "shape", rename_all = "kebab-case")]
pub enum Problem {
    /// `n` elements (elementwise, reduction or scan over a flat array).
    Flat {
        n: u64,
    },
    /// `rows` independent rows of `cols` elements (row reduction, softmax, norm, row scan).
    Rows {
        rows: u64,
        cols: u64,
    },
    Gemm {
        batch: u64,
        m: u64,
        n: u64,
        k: u64,
    },
    Attention {
        batch: u64,
        heads: u64,
        kv_heads: u64,
        seq_q: u64,
        seq_kv: u64,
        head_dim: u64,
        causal: bool,
    },
    Custom {
        flops: f64,
        bytes: f64,
    },
}

/// Optional per-op knobs that change the FLOP/byte count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpKnobs {
    /// Elementwise: input and output tensors of the problem size.
    pub inputs: u64,
    pub outputs: u64,
    /// FLOPs per element, where the spec overrides the op's default.
    pub flops_per_element: Option<f64>,
}

/// A validated kernel spec.
#[derive(Debug, Clone, Serialize)]
pub struct Spec {
    pub name: String,
    pub description: Option<String>,
    pub op: Op,
    /// Dtype names as written.
    pub dtypes: Vec<String>,
    pub storage: Dtype,
    /// Compute/accumulate dtype: the second entry, or the storage dtype.
    pub compute: Dtype,
    /// Output dtype: the third entry, or the storage dtype.
    pub output: Dtype,
    pub fp8_encoding: Option<Fp8Encoding>,
    pub problem: Problem,
    pub knobs: OpKnobs,
    pub features: Vec<String>,
    /// Target names as the spec wrote them.
    pub targets: Vec<String>,
    pub performance: PerfReq,
    pub framework_expressible: bool,
    pub expertise: Vec<Expertise>,
    pub allowed: Vec<Abstraction>,
}

fn list_expected<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn span_of<T>(s: &Spanned<T>) -> std::ops::Range<usize> {
    s.span()
}

/// Parses a dtype name (liberal spellings); returns the dtype and any fp8 encoding it names.
pub fn parse_dtype(name: &str) -> Option<(Dtype, Option<Fp8Encoding>)> {
    let n = name.trim().to_ascii_lowercase().replace('_', "-");
    let d = match n.as_str() {
        "fp64" | "f64" | "float64" | "double" => (Dtype::Fp64, None),
        "fp32" | "f32" | "float32" | "float" => (Dtype::Fp32, None),
        "tf32" => (Dtype::Tf32, None),
        "fp16" | "f16" | "float16" | "half" => (Dtype::Fp16, None),
        "bf16" | "bfloat16" => (Dtype::Bf16, None),
        "fp8" | "f8" => (Dtype::Fp8, None),
        "fp8-e4m3" | "fp8-e4m3fn" | "e4m3" | "e4m3fn" | "fp8-e5m2" | "e5m2" | "float8-e4m3fn"
        | "float8-e5m2" => (Dtype::Fp8, Some(Fp8Encoding::Ocp)),
        "fp8-e4m3fnuz" | "fp8-e5m2fnuz" | "e4m3fnuz" | "e5m2fnuz" | "float8-e4m3fnuz"
        | "float8-e5m2fnuz" => (Dtype::Fp8, Some(Fp8Encoding::Fnuz)),
        "int8" | "i8" | "s8" => (Dtype::Int8, None),
        _ => return None,
    };
    Some(d)
}

const DTYPE_NAMES: [&str; 13] = [
    "fp64",
    "fp32",
    "tf32",
    "fp16",
    "bf16",
    "fp8",
    "fp8-e4m3fn",
    "fp8-e5m2",
    "fp8-e4m3fnuz",
    "fp8-e5m2fnuz",
    "int8",
    "float32",
    "bfloat16",
];

/// Parses and validates a spec. `kb` resolves target names and feature ids.
pub fn parse_spec(text: &str, kb: &Kb) -> Result<Spec, SpecError> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError {
        span: e.span(),
        message: e.message().trim_end().replace('\n', " "),
        suggestion: None,
    })?;

    let k = raw.kernel;
    let name = k.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(SpecError::at(
            span_of(&k.name),
            "empty kernel name, expected a non-empty string",
        ));
    }
    let op_name = k.op.get_ref().trim().to_ascii_lowercase();
    let op = Op::ALL
        .into_iter()
        .find(|o| o.as_str() == op_name)
        .ok_or_else(|| {
            SpecError::at(
                span_of(&k.op),
                format!(
                    "unknown op `{}`, expected one of {}",
                    k.op.get_ref(),
                    list_expected(Op::ALL.map(Op::as_str))
                ),
            )
            .suggest(closest(&op_name, Op::ALL.map(Op::as_str)))
        })?;

    if k.dtypes.get_ref().is_empty() {
        return Err(SpecError::at(
            span_of(&k.dtypes),
            "empty `dtypes`, expected the storage dtype first, then the compute/accumulate dtype",
        ));
    }
    let mut parsed = Vec::new();
    let mut encoding = None;
    for d in k.dtypes.get_ref() {
        let (dt, enc) = parse_dtype(d.get_ref()).ok_or_else(|| {
            SpecError::at(
                span_of(d),
                format!(
                    "unknown dtype `{}`, expected one of {}",
                    d.get_ref(),
                    list_expected(DTYPE_NAMES)
                ),
            )
            .suggest(closest(d.get_ref(), DTYPE_NAMES))
        })?;
        if enc.is_some() {
            if encoding.is_some() && encoding != enc {
                return Err(SpecError::at(
                    span_of(d),
                    "conflicting fp8 encodings, expected either OCP (e4m3fn/e5m2) or FNUZ (e4m3fnuz/e5m2fnuz), not both",
                ));
            }
            encoding = enc;
        }
        parsed.push(dt);
    }
    if parsed.len() > 3 {
        return Err(SpecError::at(
            span_of(&k.dtypes),
            "too many dtypes, expected at most storage, compute and output dtypes",
        ));
    }
    let storage = parsed[0];
    let compute = parsed.get(1).copied().unwrap_or(storage);
    let output = parsed.get(2).copied().unwrap_or(storage);

    let (problem, knobs) = parse_problem(op, k.problem.as_ref(), span_of(&k.op))?;

    let mut features = Vec::new();
    for f in &k.features {
        let id = f.get_ref().trim().to_ascii_lowercase();
        if kb.feature(&id).is_none() {
            let ids: Vec<&str> = kb.features.iter().map(|f| f.id.as_str()).collect();
            return Err(SpecError::at(
                span_of(f),
                format!(
                    "unknown feature `{}`, expected a feature id from the knowledge base (`kplan features` lists them)",
                    f.get_ref()
                ),
            )
            .suggest(closest(&id, ids)));
        }
        if !features.contains(&id) {
            features.push(id);
        }
    }

    let lists: Vec<&Spanned<Vec<Spanned<String>>>> =
        [raw.backends.targets.as_ref(), raw.backends.devices.as_ref()]
            .into_iter()
            .flatten()
            .collect();
    if lists.iter().all(|l| l.get_ref().is_empty()) {
        let span = lists.first().map(|l| span_of(*l)).unwrap_or(0..0);
        return Err(SpecError::at(
            span,
            "no targets in [backends], expected `targets = [...]` with at least one architecture or device (`kplan targets` lists them)",
        ));
    }
    let mut targets = Vec::new();
    for t in lists.iter().flat_map(|l| l.get_ref().iter()) {
        match kb.resolve(t.get_ref()) {
            Ok(_) => {}
            Err(e) => {
                return Err(SpecError::at(
                    span_of(t),
                    format!(
                        "unknown target `{}`, expected an architecture, device or alias from the knowledge base (`kplan targets` lists them)",
                        t.get_ref()
                    ),
                )
                .suggest(e.suggestion));
            }
        }
        if targets.contains(t.get_ref()) {
            return Err(SpecError::at(
                span_of(t),
                format!(
                    "target `{}` is listed twice, expected each target once",
                    t.get_ref()
                ),
            ));
        }
        targets.push(t.get_ref().clone());
    }

    let performance = match &raw.requirements.performance {
        None => PerfReq::Reasonable,
        Some(p) => match p.get_ref().trim().to_ascii_lowercase().as_str() {
            "near-peak" => PerfReq::NearPeak,
            "reasonable" => PerfReq::Reasonable,
            other => {
                return Err(SpecError::at(
                    span_of(p),
                    format!(
                    "unknown performance requirement `{}`, expected `near-peak` or `reasonable`",
                    p.get_ref()
                ),
                )
                .suggest(closest(other, ["near-peak", "reasonable"])))
            }
        },
    };

    let mut expertise = Vec::new();
    for e in &raw.team.expertise {
        let n = e.get_ref().trim().to_ascii_lowercase();
        let x = Expertise::ALL
            .into_iter()
            .find(|x| x.as_str() == n)
            .ok_or_else(|| {
                SpecError::at(
                    span_of(e),
                    format!(
                        "unknown expertise `{}`, expected one of {}",
                        e.get_ref(),
                        list_expected(Expertise::ALL.map(Expertise::as_str))
                    ),
                )
                .suggest(closest(&n, Expertise::ALL.map(Expertise::as_str)))
            })?;
        if !expertise.contains(&x) {
            expertise.push(x);
        }
    }

    let allowed = match &raw.abstraction {
        None => Abstraction::DEFAULT_ALLOWED.to_vec(),
        Some(a) => {
            if a.allowed.get_ref().is_empty() {
                return Err(SpecError::at(
                    span_of(&a.allowed),
                    "empty `allowed`, expected at least one abstraction level",
                ));
            }
            let mut v = Vec::new();
            for s in a.allowed.get_ref() {
                let n = s.get_ref().trim().to_ascii_lowercase();
                let n = if n == "vendor-library" || n == "vendor-blas-library" {
                    "vendor-blas".to_string()
                } else {
                    n
                };
                let x = Abstraction::ALL
                    .into_iter()
                    .find(|x| x.as_str() == n)
                    .ok_or_else(|| {
                        SpecError::at(
                            span_of(s),
                            format!(
                                "unknown abstraction `{}`, expected one of {}",
                                s.get_ref(),
                                list_expected(Abstraction::ALL.map(Abstraction::as_str))
                            ),
                        )
                        .suggest(closest(&n, Abstraction::ALL.map(Abstraction::as_str)))
                    })?;
                if !v.contains(&x) {
                    v.push(x);
                }
            }
            v
        }
    };

    Ok(Spec {
        name,
        description: k.description,
        op,
        dtypes: k
            .dtypes
            .get_ref()
            .iter()
            .map(|d| d.get_ref().clone())
            .collect(),
        storage,
        compute,
        output,
        fp8_encoding: encoding,
        problem,
        knobs,
        features,
        targets,
        performance,
        framework_expressible: raw.requirements.framework_expressible,
        expertise,
        allowed,
    })
}

/// Largest size one problem dimension may have (keeps every derived product in range).
const MAX_DIM: i64 = 1 << 40;

type RawProblem = Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

fn parse_problem(
    op: Op,
    p: Option<&RawProblem>,
    op_span: std::ops::Range<usize>,
) -> Result<(Problem, OpKnobs), SpecError> {
    let (allowed, required_hint): (&[&str], &str) = match op {
        Op::Elementwise => (
            &[
                "n",
                "rows",
                "cols",
                "inputs",
                "outputs",
                "flops_per_element",
            ],
            "`n` (or `rows` and `cols`)",
        ),
        Op::Reduction | Op::Scan => (
            &["n", "rows", "cols", "flops_per_element"],
            "`n`, or `rows` and `cols`",
        ),
        Op::Softmax | Op::Norm => (&["rows", "cols", "flops_per_element"], "`rows` and `cols`"),
        Op::Gemm => (&["m", "n", "k", "batch"], "`m`, `n` and `k`"),
        Op::Attention => (
            &[
                "batch", "heads", "kv_heads", "seq", "seq_q", "seq_kv", "head_dim", "causal",
            ],
            "`batch`, `heads`, `seq` (or `seq_q` and `seq_kv`) and `head_dim`",
        ),
        Op::Custom => (&["flops", "bytes"], "`flops` and `bytes`"),
    };
    let Some(p) = p else {
        return Err(SpecError::at(
            op_span,
            format!("missing `problem` for op `{}`, expected `problem = {{ ... }}` with {required_hint}", op.as_str()),
        ));
    };
    let mut ints: BTreeMap<&str, u64> = BTreeMap::new();
    let mut floats: BTreeMap<&str, f64> = BTreeMap::new();
    let mut causal = false;
    for (key, val) in p.get_ref() {
        let kname = key.get_ref().as_str();
        let Some(&canon) = allowed.iter().find(|a| **a == kname) else {
            return Err(SpecError::at(
                key.span(),
                format!(
                    "unknown problem key `{kname}` for op `{}`, expected one of {}",
                    op.as_str(),
                    list_expected(allowed.iter().copied())
                ),
            )
            .suggest(closest(kname, allowed.iter().copied())));
        };
        match (canon, val.get_ref()) {
            ("causal", toml::Value::Boolean(b)) => causal = *b,
            ("causal", _) => {
                return Err(SpecError::at(
                    val.span(),
                    "wrong type for `causal`, expected a boolean",
                ))
            }
            ("flops" | "bytes" | "flops_per_element", v) => {
                let x = match v {
                    toml::Value::Integer(i) => *i as f64,
                    toml::Value::Float(f) => *f,
                    _ => {
                        return Err(SpecError::at(
                            val.span(),
                            format!("wrong type for `{canon}`, expected a number"),
                        ))
                    }
                };
                if !(x.is_finite() && x >= 0.0) || (canon == "bytes" && x == 0.0) {
                    return Err(SpecError::at(
                        val.span(),
                        format!(
                            "invalid `{canon}` {x}, expected a finite {} number",
                            if canon == "bytes" {
                                "positive"
                            } else {
                                "non-negative"
                            }
                        ),
                    ));
                }
                floats.insert(canon, x);
            }
            (_, toml::Value::Integer(i)) if *i >= 1 && *i <= MAX_DIM => {
                ints.insert(canon, *i as u64);
            }
            (_, toml::Value::Integer(_)) => {
                return Err(SpecError::at(
                    val.span(),
                    format!("invalid `{canon}`, expected a positive integer up to 2^40"),
                ))
            }
            (_, _) => {
                return Err(SpecError::at(
                    val.span(),
                    format!("wrong type for `{canon}`, expected a positive integer"),
                ))
            }
        }
    }
    let missing = |what: &str| {
        SpecError::at(
            p.span(),
            format!(
                "incomplete `problem` for op `{}`: missing {what}, expected {required_hint}",
                op.as_str()
            ),
        )
    };
    let mut knobs = OpKnobs {
        inputs: 1,
        outputs: 1,
        flops_per_element: floats.get("flops_per_element").copied(),
    };
    let flat_or_rows = |ints: &BTreeMap<&str, u64>| -> Result<Problem, SpecError> {
        match (ints.get("n"), ints.get("rows"), ints.get("cols")) {
            (Some(&n), None, None) => Ok(Problem::Flat { n }),
            (None, Some(&rows), Some(&cols)) => Ok(Problem::Rows { rows, cols }),
            (None, Some(_), None) => Err(missing("`cols`")),
            (None, None, Some(_)) => Err(missing("`rows`")),
            (None, None, None) => Err(missing("the size")),
            (Some(_), _, _) => Err(SpecError::at(
                p.span(),
                "both `n` and `rows`/`cols` given, expected one of them",
            )),
        }
    };
    let problem = match op {
        Op::Elementwise => {
            knobs.inputs = ints.get("inputs").copied().unwrap_or(1);
            knobs.outputs = ints.get("outputs").copied().unwrap_or(1);
            match flat_or_rows(&ints)? {
                Problem::Rows { rows, cols } => Problem::Flat {
                    n: rows.saturating_mul(cols),
                },
                x => x,
            }
        }
        Op::Reduction | Op::Scan => flat_or_rows(&ints)?,
        Op::Softmax | Op::Norm => {
            let rows = *ints.get("rows").ok_or_else(|| missing("`rows`"))?;
            let cols = *ints.get("cols").ok_or_else(|| missing("`cols`"))?;
            Problem::Rows { rows, cols }
        }
        Op::Gemm => Problem::Gemm {
            batch: ints.get("batch").copied().unwrap_or(1),
            m: *ints.get("m").ok_or_else(|| missing("`m`"))?,
            n: *ints.get("n").ok_or_else(|| missing("`n`"))?,
            k: *ints.get("k").ok_or_else(|| missing("`k`"))?,
        },
        Op::Attention => {
            let heads = *ints.get("heads").ok_or_else(|| missing("`heads`"))?;
            let seq = ints.get("seq").copied();
            let seq_q = ints
                .get("seq_q")
                .copied()
                .or(seq)
                .ok_or_else(|| missing("`seq` or `seq_q`"))?;
            let seq_kv = ints
                .get("seq_kv")
                .copied()
                .or(seq)
                .ok_or_else(|| missing("`seq` or `seq_kv`"))?;
            let kv_heads = ints.get("kv_heads").copied().unwrap_or(heads);
            if kv_heads > heads || heads % kv_heads != 0 {
                return Err(SpecError::at(
                    p.span(),
                    "invalid `kv_heads`, expected a divisor of `heads`",
                ));
            }
            Problem::Attention {
                batch: *ints.get("batch").ok_or_else(|| missing("`batch`"))?,
                heads,
                kv_heads,
                seq_q,
                seq_kv,
                head_dim: *ints.get("head_dim").ok_or_else(|| missing("`head_dim`"))?,
                causal,
            }
        }
        Op::Custom => Problem::Custom {
            flops: *floats.get("flops").ok_or_else(|| missing("`flops`"))?,
            bytes: *floats.get("bytes").ok_or_else(|| missing("`bytes`"))?,
        },
    };
    Ok((problem, knobs))
}
