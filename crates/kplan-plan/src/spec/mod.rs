//! The kernel spec (TOML): raw serde model with spans, then validation into [`Spec`].
//!
//! Wrong types are rejected by serde with the span toml reports. Keys kplan does not read are
//! sorted by [`crate::keys`]: a likely typo or misplaced known key is an error, a descriptive key
//! becomes a note in the plan; an unknown problem key or device is handled the same way here. Names (op, dtype, target, feature, expertise, abstraction) are checked here against
//! fixed lists or the knowledge base, with a "did you mean" when a known name is close.

mod coerce;
mod names;
mod peel;
mod recognise;

use crate::error::SpecError;
pub use crate::keys::SpecNote;
use kplan_kb::{Dtype, Kb};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
struct RawSpec {
    kernel: RawKernel,
    backends: RawBackends,
    #[serde(default)]
    requirements: RawRequirements,
    #[serde(default)]
    team: RawTeam,
    #[serde(default)]
    abstraction: Option<RawAbstraction>,
    #[serde(default)]
    ci: RawCi,
}

/// `[ci]`: how `kplan ci` writes the workflow.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCi {
    /// Self-hosted runner labels per kind (architecture, target name or vendor).
    #[serde(default)]
    runners: BTreeMap<String, String>,
}

/// A list of names, or one name where a list is expected (`targets = "h100"`,
/// `expertise = "cuda"`): one name is the list of that name, spanning the value.
enum OneOrMany {
    One(String),
    Many(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany::One(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<OneOrMany, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element::<Spanned<String>>()? {
                    out.push(x);
                }
                Ok(OneOrMany::Many(out))
            }
        }
        d.deserialize_any(V)
    }
}

fn list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Spanned<Vec<Spanned<String>>>, D::Error> {
    let v = Spanned::<OneOrMany>::deserialize(d)?;
    let span = v.span();
    Ok(match v.into_inner() {
        OneOrMany::One(s) => Spanned::new(span.clone(), vec![Spanned::new(span, s)]),
        OneOrMany::Many(xs) => Spanned::new(span, xs),
    })
}

/// A list of names with its span, and each name's.
type NameList = Spanned<Vec<Spanned<String>>>;

fn opt_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<NameList>, D::Error> {
    list(d).map(Some)
}

fn plain_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(d).map(Spanned::into_inner)
}

#[derive(Deserialize)]
struct RawKernel {
    /// Optional: a spec without a name is named after its op (with a note).
    #[serde(default)]
    name: Option<Spanned<String>>,
    op: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    /// A name, a list (storage, compute, output), or a table by role (`{ a = "int8",
    /// accumulate = "int32", out = "bf16" }`).
    #[serde(default)]
    dtypes: Option<Spanned<toml::Value>>,
    /// `dtype = "bf16"` (or a list): the name users guess for `dtypes`, read as `dtypes`.
    #[serde(default)]
    dtype: Option<Spanned<toml::Value>>,
    #[serde(default)]
    problem: Option<Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>>,
    /// Names users guess for `problem` (`shape`, `dims`, `sizes`, `problem_size`): read as
    /// `problem` when it is a table and `problem` is absent.
    #[serde(default)]
    shape: Option<Spanned<toml::Value>>,
    #[serde(default)]
    dims: Option<Spanned<toml::Value>>,
    #[serde(default)]
    sizes: Option<Spanned<toml::Value>>,
    #[serde(default)]
    problem_size: Option<Spanned<toml::Value>>,
    #[serde(default, deserialize_with = "plain_list")]
    features: Vec<Spanned<String>>,
    /// `forward` (default) or `backward`.
    #[serde(default)]
    direction: Option<Spanned<String>>,
    /// The variant of the op (`layernorm` / `rmsnorm`, `argmax`, `routing` / `align`, ...).
    /// Modifiers are read as any TOML value and coerced by [`coerce_modifiers`]: a list of
    /// names or a sentence for a flag is what users write, not a type error.
    #[serde(default)]
    kind: Option<Spanned<toml::Value>>,
    /// The combining operation (reduction, scatter): `sum`, `max`, `argmax`, ...
    #[serde(default)]
    reduce: Option<Spanned<toml::Value>>,
    #[serde(default)]
    deterministic: Option<Spanned<toml::Value>>,
    #[serde(default)]
    causal: Option<Spanned<toml::Value>>,
    #[serde(default)]
    varlen: Option<Spanned<toml::Value>>,
    #[serde(default)]
    ragged: Option<Spanned<toml::Value>>,
    #[serde(default)]
    stable: Option<Spanned<toml::Value>>,
    #[serde(default)]
    exclusive: Option<Spanned<toml::Value>>,
    #[serde(default)]
    values: Option<Spanned<toml::Value>>,
    #[serde(default)]
    layout: Option<Spanned<toml::Value>>,
    #[serde(default)]
    format: Option<Spanned<toml::Value>>,
    #[serde(default)]
    granularity: Option<Spanned<toml::Value>>,
    #[serde(default)]
    mask: Option<Spanned<toml::Value>>,
    /// The KV cache dtype (`kv_cache_dtype` is the same key).
    #[serde(default, alias = "kv_cache_dtype")]
    kv_dtype: Option<Spanned<String>>,
    /// The weight dtype (`weights_dtype` is the same key).
    #[serde(default, alias = "weights_dtype")]
    weight_dtype: Option<Spanned<String>>,
    /// Fused epilogue of a matrix op (`bias-gelu`, `scale`, ...).
    #[serde(default)]
    epilogue: Option<Spanned<toml::Value>>,
    /// Structured sparsity of a matrix operand (`"2:4"`): a sparse GEMM named so is a dense
    /// GEMM on sparse matrix units, not a sparse x sparse product.
    #[serde(default)]
    sparsity: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct RawBackends {
    #[serde(default, deserialize_with = "opt_list")]
    targets: Option<Spanned<Vec<Spanned<String>>>>,
    /// More targets, named by device; merged after `targets` (`gpus` is another name).
    #[serde(default, alias = "gpus", deserialize_with = "opt_list")]
    devices: Option<Spanned<Vec<Spanned<String>>>>,
    /// Targets the team would like covered if they come cheap (`stretch`, `optional`): planned
    /// like the others where the knowledge base has facts for them, a note where it has none.
    #[serde(
        default,
        alias = "optional",
        alias = "stretch_targets",
        alias = "nice_to_have",
        deserialize_with = "opt_list"
    )]
    stretch: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize, Default)]
struct RawRequirements {
    #[serde(default)]
    performance: Option<Spanned<String>>,
    #[serde(default)]
    framework_expressible: bool,
    /// Latency budget per call, microseconds (decode, batch 1).
    #[serde(default)]
    latency_us: Option<Spanned<toml::Value>>,
    /// The same budget in nanoseconds, milliseconds or seconds: converted, with a note.
    #[serde(default)]
    latency_ns: Option<Spanned<toml::Value>>,
    #[serde(default)]
    latency_ms: Option<Spanned<toml::Value>>,
    #[serde(default)]
    latency_s: Option<Spanned<toml::Value>>,
    /// `latency = "20 us"`: a budget with its unit in the text.
    #[serde(default)]
    latency: Option<Spanned<toml::Value>>,
    /// Same as `[kernel] deterministic`: where teams write it as a requirement (a boolean or
    /// words: "bitwise identical across runs", "nice to have"). `determinism` and
    /// `reproducible` are read the same way.
    #[serde(default)]
    deterministic: Option<Spanned<toml::Value>>,
    #[serde(default)]
    determinism: Option<Spanned<toml::Value>>,
    #[serde(default)]
    reproducible: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize, Default)]
struct RawTeam {
    #[serde(default, deserialize_with = "plain_list")]
    expertise: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
struct RawAbstraction {
    #[serde(deserialize_with = "list")]
    allowed: Spanned<Vec<Spanned<String>>>,
}

/// Operation class; decides the FLOP/byte formulas and the tile shape. `docs/plan.md` lists
/// each class's problem keys; `kplan ops` shows what the knowledge base knows about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Op {
    Elementwise,
    Reduction,
    Softmax,
    Norm,
    Gemm,
    GroupedGemm,
    Attention,
    Scan,
    Topk,
    Histogram,
    Spmv,
    Spmm,
    Stencil,
    Conv,
    Moe,
    Embedding,
    Gather,
    Scatter,
    Quantize,
    Dequantize,
    Sort,
    LinearAttention,
    Sampling,
    CrossEntropy,
    Spgemm,
    Custom,
}

impl Op {
    pub const ALL: [Op; 26] = kplan_kb::all_variants();
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    pub fn parse(name: &str) -> Option<Op> {
        name.parse().ok()
    }
    /// Other names for an op class, with the `kind` they imply.
    pub const ALIASES: [(&'static str, Op, Option<&'static str>); 36] = [
        ("rmsnorm", Op::Norm, Some("rmsnorm")),
        ("layernorm", Op::Norm, Some("layernorm")),
        ("layer-norm", Op::Norm, Some("layernorm")),
        ("rms-norm", Op::Norm, Some("rmsnorm")),
        ("argmax", Op::Reduction, Some("argmax")),
        ("argmin", Op::Reduction, Some("argmin")),
        ("reduce", Op::Reduction, None),
        ("cumsum", Op::Scan, None),
        ("prefix-sum", Op::Scan, None),
        ("matmul", Op::Gemm, None),
        ("mm", Op::Gemm, None),
        ("bmm", Op::Gemm, None),
        ("grouped-matmul", Op::GroupedGemm, None),
        ("sdpa", Op::Attention, None),
        ("flash-attention", Op::Attention, None),
        ("mha", Op::Attention, None),
        ("top-k", Op::Topk, None),
        ("bincount", Op::Histogram, None),
        ("conv1d", Op::Conv, None),
        ("conv2d", Op::Conv, None),
        ("conv3d", Op::Conv, None),
        ("convolution", Op::Conv, None),
        ("moe-routing", Op::Moe, Some("routing")),
        ("router", Op::Moe, Some("routing")),
        ("moe-align", Op::Moe, Some("align")),
        ("moe-permute", Op::Moe, Some("permute")),
        ("moe-unpermute", Op::Moe, Some("unpermute")),
        ("token-permute", Op::Moe, Some("permute")),
        ("token-unpermute", Op::Moe, Some("unpermute")),
        ("index-select", Op::Gather, None),
        ("scatter-add", Op::Scatter, None),
        ("index-add", Op::Scatter, None),
        ("quant", Op::Quantize, None),
        ("dequant", Op::Dequantize, None),
        ("argsort", Op::Sort, None),
        ("radix-sort", Op::Sort, None),
    ];
    /// Ops whose inner loop runs on matrix units (MMA/WGMMA/MFMA/WMMA) when the dtype allows
    /// (chunked linear attention: the intra-chunk products and the state updates are matmuls).
    pub fn uses_matrix_units(self) -> bool {
        matches!(
            self,
            Op::Gemm | Op::GroupedGemm | Op::Attention | Op::Conv | Op::LinearAttention
        )
    }
    /// Problem keys an op accepts that its work model does not read, with what they change
    /// instead: the plan lists them in the spec notes so that no key is silently dropped.
    pub fn keys_outside_work_model(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Op::GroupedGemm => &[("scale_block", "the block-scale granularity (risks and library coverage), not the traffic: the scales are not counted")],
            Op::Attention => &[("window", "a sliding window: the FLOPs and bytes are counted for the full causal or dense extent")],
            Op::Moe => &[
                ("n_group", "grouped routing: the score traffic does not depend on it"),
                ("topk_group", "grouped routing: the score traffic does not depend on it"),
                ("hidden", "the hidden size of the tokens routed: the routing and alignment traffic does not depend on it (the permute and unpermute kinds move it)"),
            ],
            Op::Stencil => &[("radius", "the halo width: the model counts one read and one write of the grid per step")],
            Op::Conv => &[
                ("padding", "the model assumes same padding"),
                ("dilation", "the dilation: taps are counted, not their spacing"),
            ],
            Op::Embedding => &[("vocab", "the table size: only the rows gathered are counted")],
            Op::Scatter => &[
                ("out_rows", "the destination size: only the rows written are counted"),
                ("num_pages", "the cache size: only the rows written are counted"),
                ("page_size", "the page size: only the rows written are counted"),
            ],
            Op::Sampling => &[
                ("k", "top-k: the model counts one read of the logits whatever is kept"),
                ("top_p", "top-p: the model counts one read of the logits whatever is kept"),
                ("min_p", "min-p: the model counts one read of the logits whatever is kept"),
                ("temperature", "a scale of the logits: no traffic"),
            ],
            Op::CrossEntropy => &[
                ("chunk", "the token chunk of a fused kernel: the model counts the minimum traffic"),
                ("tp", "the tensor-parallel ranks the vocabulary is sharded over (risks): the model counts the traffic of `vocab` columns, the whole vocabulary unless `vocab_per_rank` gives one rank's"),
                ("vocab_per_rank", "one rank's vocabulary shard (risks): the model counts the `vocab` columns given"),
            ],
            Op::Sort => &[
                ("begin_bit", "the first key bit sorted: the model counts the traffic of one sort pass over the keys, not the passes per bit"),
                ("end_bit", "the end of the sorted key bits: the model counts the traffic of one sort pass over the keys, not the passes per bit"),
            ],
            _ => &[],
        }
    }
    /// The problem keys this op accepts, and the hint for what it needs.
    pub fn problem_keys(self) -> (&'static [&'static str], &'static str) {
        match self {
            Op::Elementwise => (
                &["n", "rows", "cols", "inputs", "outputs", "flops_per_element"],
                "`n` (or `rows` and `cols`)",
            ),
            Op::Reduction | Op::Scan => (
                &["n", "rows", "cols", "segments", "nnz", "segment_len", "flops_per_element"],
                "`n`, or `rows` and `cols`, or `segments` with `nnz` (or `segment_len`) and `cols` features per element",
            ),
            Op::Softmax | Op::Norm => (&["rows", "cols", "flops_per_element"], "`rows` and `cols`"),
            Op::Gemm => (&["m", "n", "k", "batch", "group_size"], "`m`, `n` and `k`"),
            Op::GroupedGemm => (
                &["groups", "m", "total_m", "tokens", "top_k", "n", "k", "scale_block", "group_size"],
                "`groups`, `m` per group (or `total_m`, or `tokens` routed to `top_k` groups each), `n` and `k`",
            ),
            Op::Attention => (
                &[
                    "batch",
                    "heads",
                    "kv_heads",
                    "seq",
                    "seq_q",
                    "seq_kv",
                    "head_dim",
                    "head_dim_v",
                    "causal",
                    "page_size",
                    "total_tokens",
                    "window",
                    "prefix_len",
                ],
                "`batch`, `heads`, `seq` (or `seq_q` and `seq_kv`) and `head_dim`",
            ),
            Op::Topk => (&["n", "rows", "cols", "k"], "`rows` and `cols` (or `n`) and `k`"),
            Op::Histogram => (&["n", "bins"], "`n` and `bins`"),
            Op::Spmv => (&["rows", "cols", "nnz"], "`rows`, `cols` and `nnz`"),
            Op::Spmm => (&["m", "k", "n", "nnz"], "`m`, `k`, `n` and `nnz`"),
            Op::Stencil => (
                &["nx", "ny", "nz", "points", "radius", "steps"],
                "`nx` (and `ny`, `nz` for 2D/3D) and `points`",
            ),
            Op::Conv => (
                &[
                    "batch",
                    "height",
                    "width",
                    "depth",
                    "seq",
                    "channels",
                    "in_channels",
                    "out_channels",
                    "kernel",
                    "kernel_h",
                    "kernel_w",
                    "kernel_d",
                    "stride",
                    "padding",
                    "dilation",
                    "groups",
                ],
                "`batch`, the spatial size (`seq`, or `height`/`width`[/`depth`]), `channels` (or `in_channels` and `out_channels`) and the kernel size",
            ),
            Op::Moe => (
                &["tokens", "experts", "top_k", "n_group", "topk_group", "block_size", "hidden"],
                "`tokens`, `experts` and `top_k`",
            ),
            Op::Embedding => (&["vocab", "dim", "tokens"], "`vocab`, `dim` and `tokens`"),
            Op::Gather => (&["rows", "dim", "indices", "n"], "`rows`, `dim` and `indices`"),
            Op::Scatter => (
                &[
                    "n", "dim", "out_rows", "tokens", "kv_heads", "head_dim", "page_size",
                    "num_pages", "tensors",
                ],
                "`n` and `dim` (or `tokens`, `kv_heads` and `head_dim`)",
            ),
            Op::Quantize | Op::Dequantize => (
                &["n", "rows", "cols", "block", "group_size"],
                "`rows` and `cols` (or `n`)",
            ),
            Op::Sort => (
                &["n", "key_bits", "begin_bit", "end_bit", "segments", "segment_len"],
                "`n` (or `segments` and `segment_len`)",
            ),
            Op::LinearAttention => (
                &[
                    "batch",
                    "seqlen",
                    "seq",
                    "total_tokens",
                    "heads",
                    "head_dim",
                    "d_state",
                    "chunk",
                    "groups",
                ],
                "`heads`, `head_dim` and `seqlen` with `batch` (or `total_tokens`); `d_state` (the key/state width, default `head_dim`), `chunk` (default 64), `groups` (heads sharing one key/state projection, as Mamba-2's B and C; default one per head)",
            ),
            Op::Sampling => (
                &[
                    "batch",
                    "vocab",
                    "rows",
                    "cols",
                    "k",
                    "top_p",
                    "min_p",
                    "temperature",
                ],
                "`batch` and `vocab` (or `rows` and `cols`)",
            ),
            Op::CrossEntropy => (
                &["tokens", "rows", "vocab", "cols", "hidden", "chunk", "tp", "vocab_per_rank"],
                "`tokens` and `vocab` (or `rows` and `cols`), and `hidden` when the LM-head matmul is fused",
            ),
            Op::Spgemm => (
                &[
                    "rows", "cols", "m", "k", "n", "nnz_a", "nnz_b", "nnz_c", "products",
                ],
                "`rows` (or `m`), `nnz_a` and `nnz_b`; `cols`/`k` and `n` for B's shape, `products` (the intermediate product count) and `nnz_c` where known",
            ),
            Op::Custom => (&["flops", "bytes"], "`flops` and `bytes`"),
        }
    }
    /// Known `kind` values, where the op has a fixed list (others accept any label).
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            Op::Norm => &["rmsnorm", "layernorm"],
            Op::Reduction => &[
                "sum", "mean", "max", "min", "prod", "argmax", "argmin", "l2",
            ],
            Op::Moe => &["routing", "align", "permute", "unpermute"],
            _ => &[],
        }
    }
    /// Whether the plan has a backward (training) work model for this op.
    pub fn has_backward(self) -> bool {
        matches!(
            self,
            Op::Elementwise
                | Op::Softmax
                | Op::Norm
                | Op::Gemm
                | Op::GroupedGemm
                | Op::Attention
                | Op::Conv
                | Op::Embedding
                | Op::Gather
                | Op::Scan
                | Op::Reduction
                | Op::LinearAttention
                | Op::CrossEntropy
                | Op::Custom
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PerfReq {
    NearPeak,
    Reasonable,
}

impl PerfReq {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Forward (inference) or backward (gradient) pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Direction {
    Forward,
    Backward,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Abstraction levels a team may allow, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Abstraction {
    Framework,
    VendorBlas,
    Triton,
    HipSingleSource,
    Cutlass,
    ComposableKernel,
    PerBackend,
    Sycl,
    Opencl,
    Metal,
}

impl Abstraction {
    pub const ALL: [Abstraction; 10] = kplan_kb::all_variants();
    /// The six standard levels, highest first: what a spec without `[abstraction] allowed`
    /// allows, and the order the strategy tries them in for a custom kernel.
    pub const STANDARD: [Abstraction; 6] = [
        Abstraction::Framework,
        Abstraction::VendorBlas,
        Abstraction::Triton,
        Abstraction::HipSingleSource,
        Abstraction::Cutlass,
        Abstraction::PerBackend,
    ];
    /// What a spec without `[abstraction] allowed` allows: the standard levels.
    pub const DEFAULT_ALLOWED: [Abstraction; 6] = Self::STANDARD;
    /// Other names a spec may use, with the level they mean. Library names (`cub`, `hipcub`,
    /// `rocprim`) mean the vendor-library level; `rocwmma` is a header library used inside
    /// per-backend HIP code.
    pub const ALIASES: [(&'static str, Abstraction); 16] = [
        ("vendor-library", Abstraction::VendorBlas),
        ("vendor-blas-library", Abstraction::VendorBlas),
        ("library", Abstraction::VendorBlas),
        ("cub", Abstraction::VendorBlas),
        ("hipcub", Abstraction::VendorBlas),
        ("rocprim", Abstraction::VendorBlas),
        ("torch", Abstraction::Framework),
        ("pytorch", Abstraction::Framework),
        ("jax", Abstraction::Framework),
        // CuPy: a NumPy-compatible GPU array framework; Pallas: JAX's block-level kernel
        // language, lowered to Triton on GPUs.
        ("cupy", Abstraction::Framework),
        ("pallas", Abstraction::Triton),
        ("ck", Abstraction::ComposableKernel),
        ("rocwmma", Abstraction::PerBackend),
        ("cute", Abstraction::Cutlass),
        ("hip", Abstraction::HipSingleSource),
        ("cuda", Abstraction::PerBackend),
    ];
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Expertise {
    Cuda,
    Hip,
    Triton,
    Cpu,
    Sycl,
    Metal,
    Opencl,
    Cutlass,
    Ck,
}

impl Expertise {
    pub const ALL: [Expertise; 9] = kplan_kb::all_variants();
    /// Other names: `rocm` is HIP; `composable-kernel` is CK; `cute` is CUTLASS.
    pub const ALIASES: [(&'static str, Expertise); 7] = [
        ("rocm", Expertise::Hip),
        ("composable-kernel", Expertise::Ck),
        ("cute", Expertise::Cutlass),
        ("c++", Expertise::Cpu),
        ("cpp", Expertise::Cpu),
        ("openmp", Expertise::Cpu),
        ("oneapi", Expertise::Sycl),
    ];
    pub fn as_str(self) -> &'static str {
        self.into()
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

impl Fp8Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Fp8Encoding::Ocp => "OCP e4m3fn/e5m2",
            Fp8Encoding::Fnuz => "FNUZ e4m3fnuz/e5m2fnuz",
        }
    }
}

/// A block-scaled narrow format named by the spec (`nvfp4`, `mxfp4`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockScale {
    /// NVFP4: e2m1 values, one e4m3 scale per 16 values (plus an fp32 tensor scale).
    Nvfp4,
    /// OCP MX: one e8m0 scale per 32 values (mxfp4 / mxfp6 / mxfp8).
    Mx,
}

impl BlockScale {
    /// Values per scale.
    pub fn block(self) -> u64 {
        match self {
            BlockScale::Nvfp4 => 16,
            BlockScale::Mx => 32,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            BlockScale::Nvfp4 => "NVFP4 (e4m3 scale per 16 values)",
            BlockScale::Mx => "OCP MX (e8m0 scale per 32 values)",
        }
    }
}

/// A block-quantized storage format named by a dtype (`q4_0`, `q4_k`, `q8_0`, `nf4`,
/// `int4-awq`, `mxfp4`, `nvfp4`, ...): narrow values plus one scale (and zero) per block. The
/// bytes of the work model count the scales too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuantFormat {
    /// The name as the spec wrote it.
    pub name: String,
    /// Bits of one value.
    pub value_bits: f64,
    /// Values per scale block.
    pub block: u64,
    /// Bytes of scale (and zero point) metadata per block.
    pub scale_bytes_per_block: f64,
    /// How the block is laid out, with the source of the layout.
    pub layout: String,
}

impl QuantFormat {
    /// Bytes per value, scales included.
    pub fn bytes_per_element(&self) -> f64 {
        self.value_bits / 8.0 + self.scale_bytes_per_block / self.block.max(1) as f64
    }
    /// Bits per value, scales included.
    /// A GGUF k-quant (`q2_k` .. `q6_k`): 256-value super-blocks with packed sub-block scales.
    pub fn is_gguf_k_quant(&self) -> bool {
        let n = self.name.trim().to_ascii_lowercase().replace('-', "_");
        self.block == 256 && n.starts_with('q') && n.ends_with("_k")
    }
    pub fn bits_per_element(&self) -> f64 {
        self.bytes_per_element() * 8.0
    }
}

/// A block-quantized format by name: the value dtype and the block layout. `group_size` is the
/// spec's problem key, for the group-quantized int4 formats (AWQ, GPTQ; 128 when not given).
pub fn parse_block_quant(name: &str, group_size: Option<u64>) -> Option<(Dtype, QuantFormat)> {
    let n = name.trim().to_ascii_lowercase().replace('-', "_");
    let f = |bits: f64, block: u64, scale: f64, layout: &str| QuantFormat {
        name: name.trim().to_string(),
        value_bits: bits,
        block,
        scale_bytes_per_block: scale,
        layout: layout.to_string(),
    };
    const GGML: &str = "llama.cpp ggml-common.h block layout";
    // A group size in the name (`int4-awq-g128`, `gptq_g64`, `int4-g32`) for the group-wise
    // formats, whose group is otherwise `group_size` (default 128).
    if let Some((base, g)) = n.rsplit_once("_g").and_then(|(b, g)| {
        g.parse::<u64>()
            .ok()
            .filter(|g| *g >= 1 && !b.is_empty())
            .map(|g| (b, g))
    }) {
        if matches!(
            base,
            "int4_awq"
                | "awq"
                | "w4_awq"
                | "int4_gptq"
                | "gptq"
                | "w4_gptq"
                | "uint4_awq"
                | "int4"
                | "uint4"
        ) {
            let canon = if base.starts_with("int4") || base.starts_with("uint4") {
                base.to_string()
            } else {
                format!("int4_{}", base.trim_start_matches("w4_"))
            };
            let canon = if canon == "int4" || canon == "uint4" {
                "int4_awq".to_string()
            } else {
                canon
            };
            return parse_block_quant(&canon, Some(g)).map(|(d, mut q)| {
                q.name = name.trim().to_string();
                (d, q)
            });
        }
    }
    let g = group_size.unwrap_or(128);
    Some(match n.as_str() {
        // llama.cpp: block_q4_0 = fp16 d + 16 B of nibbles per 32 values (18 B / 32).
        "q4_0" => (Dtype::Int4, f(4.0, 32, 2.0, &format!("32 values per block, one fp16 scale ({GGML})"))),
        // block_q4_1: fp16 d and m + 16 B (20 B / 32).
        "q4_1" => (Dtype::Int4, f(4.0, 32, 4.0, &format!("32 values per block, fp16 scale and min ({GGML})"))),
        // block_q5_0: fp16 d + 4 B high bits + 16 B (22 B / 32).
        "q5_0" => (Dtype::Int8, f(5.0, 32, 2.0, &format!("32 5-bit values per block, one fp16 scale ({GGML})"))),
        "q5_1" => (Dtype::Int8, f(5.0, 32, 4.0, &format!("32 5-bit values per block, fp16 scale and min ({GGML})"))),
        // block_q8_0: fp16 d + 32 int8 (34 B / 32).
        "q8_0" => (Dtype::Int8, f(8.0, 32, 2.0, &format!("32 int8 values per block, one fp16 scale ({GGML})"))),
        // block_q8_1: fp16 d and fp16 s (the block sum, for the min of q4_1/q5_1 dots) + 32 int8 (36 B / 32): the activation format of llama.cpp's integer matmuls.
        "q8_1" => (Dtype::Int8, f(8.0, 32, 4.0, &format!("32 int8 values per block, fp16 scale and fp16 block sum ({GGML})"))),
        // block_q8_K: fp32 d + 256 int8 + 16 int16 block sums (292 B / 256): the activations of the k-quant dot products.
        "q8_k" => (Dtype::Int8, f(8.0, 256, 36.0, &format!("256 int8 values, fp32 scale and 16 int16 block sums ({GGML})"))),
        // block_iq4_nl: fp16 d + 16 B of 4-bit indices into a non-linear codebook (18 B / 32).
        "iq4_nl" => (Dtype::Int4, f(4.0, 32, 2.0, &format!("32 4-bit codebook indices per block, one fp16 scale ({GGML})"))),
        // block_iq4_xs: fp16 d + uint16 scales_h + 4 B scales_l + 128 B (136 B / 256).
        "iq4_xs" => (Dtype::Int4, f(4.0, 256, 8.0, &format!("256-value super-block of 4-bit codebook indices, 136 B ({GGML})"))),
        // k-quants: 256-value super-blocks; q4_K 144 B, q5_K 176 B, q6_K 210 B, q2_K 84 B, q3_K 110 B.
        "q2_k" => (Dtype::Int4, f(2.0, 256, 20.0, &format!("256-value super-block, 84 B ({GGML})"))),
        "q3_k" => (Dtype::Int4, f(3.0, 256, 14.0, &format!("256-value super-block, 110 B ({GGML})"))),
        "q4_k" => (Dtype::Int4, f(4.0, 256, 16.0, &format!("256-value super-block, 144 B ({GGML})"))),
        "q5_k" => (Dtype::Int8, f(5.0, 256, 16.0, &format!("256-value super-block, 176 B ({GGML})"))),
        "q6_k" => (Dtype::Int8, f(6.0, 256, 18.0, &format!("256-value super-block, 210 B ({GGML})"))),
        // bitsandbytes NF4: 64 values per block, one fp32 absmax (without double quantization).
        "nf4" => (Dtype::Int4, f(4.0, 64, 4.0, "64 values per block, one fp32 absmax; a 16-entry NormalFloat codebook (bitsandbytes)")),
        // AWQ / GPTQ: int4 weights, one fp16 scale and one 4-bit zero per group.
        "int4_awq" | "awq" | "w4_awq" | "int4_gptq" | "gptq" | "w4_gptq" | "int4_g128" | "uint4_awq" => (
            Dtype::Int4,
            f(4.0, g, 2.5, &format!("int4 values, one fp16 scale and one 4-bit zero point per group of {g} (AWQ/GPTQ)")),
        ),
        // OCP MX: e8m0 scale per 32; NVFP4: e4m3 scale per 16 (plus one fp32 per tensor).
        "mxfp4" => (Dtype::Fp4, f(4.0, 32, 1.0, "e2m1 values, one e8m0 scale per 32 (OCP MX v1.0)")),
        "mxfp6" => (Dtype::Fp6, f(6.0, 32, 1.0, "fp6 values, one e8m0 scale per 32 (OCP MX v1.0)")),
        "mxfp8" => (Dtype::Fp8, f(8.0, 32, 1.0, "fp8 values, one e8m0 scale per 32 (OCP MX v1.0)")),
        "nvfp4" => (Dtype::Fp4, f(4.0, 16, 1.0, "e2m1 values, one e4m3 scale per 16 and one fp32 per tensor (NVFP4)")),
        _ => return None,
    })
}

/// Problem sizes in the shape the tile and launch sections use. Every count is an element
/// count; `flops`/`bytes` only for custom ops. Ops beyond the first classes map onto these
/// shapes (a histogram is flat, a top-k is rows, a grouped GEMM is a GEMM over the summed M);
/// the op's own keys are in [`Spec::dims`].
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
    /// A custom op (or an op whose problem lacks a key its model needs): FLOPs and bytes as
    /// given or derived; `None` where unknown.
    Custom {
        flops: Option<f64>,
        bytes: Option<f64>,
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

/// Kernel-level modifiers beyond the op and its sizes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Modifiers {
    /// The variant (`layernorm`, `argmax`, `align`, ...), from `kind`, `reduce` or the op alias.
    pub kind: Option<String>,
    /// The combining operation of a scatter / embedding (`sum`, `max`, ...).
    pub reduce: Option<String>,
    /// Bitwise-reproducible results required (same output on every run).
    pub deterministic: bool,
    pub causal: bool,
    pub varlen: bool,
    pub ragged: bool,
    pub stable: bool,
    pub exclusive: bool,
    /// Sort: key-value pairs (values carried with the keys).
    pub values: bool,
    pub layout: Option<String>,
    pub format: Option<String>,
    pub granularity: Option<String>,
    pub mask: Option<String>,
    /// Attention / KV-cache write: the KV cache dtype, where it differs from the storage dtype.
    pub kv_dtype: Option<Dtype>,
    /// GEMM: the weight dtype of a weight-only-quantised GEMM (`int4` for W4A16).
    pub weight_dtype: Option<Dtype>,
    /// Fused epilogue of a matrix op (`bias-gelu`, ...): what a library call leaves to write.
    pub epilogue: Option<String>,
    /// Backward pass of one gradient only (`data` for dgrad, `weight` for wgrad); `None`: both.
    pub gradient: Option<String>,
}

/// A validated kernel spec.
#[derive(Debug, Clone, Serialize)]
pub struct Spec {
    pub name: String,
    pub description: Option<String>,
    pub op: Op,
    pub direction: Direction,
    /// Dtype names as written.
    pub dtypes: Vec<String>,
    pub storage: Dtype,
    /// Compute/accumulate dtype: the second entry, or the storage dtype.
    pub compute: Dtype,
    /// Output dtype: the third entry, or the storage dtype.
    pub output: Dtype,
    /// The fp8 encoding the spec named; `None` for plain `fp8` (resolved per target).
    pub fp8_encoding: Option<Fp8Encoding>,
    /// Block-scaled format named by a dtype (`nvfp4`, `mxfp4`, `mxfp8`).
    pub block_scale: Option<BlockScale>,
    /// Block-quantized storage format of the first dtype (`q4_0`, `int4-awq`, ...), where named.
    pub storage_quant: Option<QuantFormat>,
    /// Block-quantized format of `weight_dtype`, where named (or block-scaled: `mxfp4`).
    pub weight_quant: Option<QuantFormat>,
    /// Input dtypes listed between the storage and the compute dtype (a fourth or fifth entry
    /// of `dtypes`).
    pub extra_inputs: Vec<Dtype>,
    /// The storage dtype is complex (`complex64`: `storage` is its fp32 component).
    pub complex: bool,
    /// The output dtype is complex.
    pub complex_output: bool,
    /// The op as the spec wrote it, when kplan has no op class for it (planned as `custom`).
    pub custom_op: Option<String>,
    /// The operation knowledge base entry of a custom op kplan knows libraries and risks for
    /// (`knowledge_only` in ops.toml), by id.
    pub custom_knowledge: Option<String>,
    /// Why the work model is unknown (a custom op without `flops`/`bytes`, an incomplete
    /// `problem`); `None` when the FLOPs and bytes are known.
    pub work_unknown: Option<String>,
    pub problem: Problem,
    /// Every problem key as the spec gave it (integers; custom flops/bytes are in `problem`).
    pub dims: BTreeMap<String, u64>,
    pub knobs: OpKnobs,
    pub modifiers: Modifiers,
    /// Feature ids (canonical; generic names such as `tensor-cores` stay generic).
    pub features: Vec<String>,
    /// Target names as the spec wrote them.
    pub targets: Vec<String>,
    /// The targets of `targets` that came from `[backends] stretch`: planned, but no reason to
    /// give up a library that covers the required ones.
    pub stretch: Vec<String>,
    pub performance: PerfReq,
    pub framework_expressible: bool,
    /// `[requirements] latency_us`: the per-call budget, microseconds.
    pub latency_us: Option<f64>,
    pub expertise: Vec<Expertise>,
    pub allowed: Vec<Abstraction>,
    /// Library names the spec's `allowed` used (`cub`, `hipcub`, `rocprim`, `rocwmma`).
    pub named_libraries: Vec<String>,
    /// The vendor-library level is allowed only through library names (`cub`, `hipcub`): only
    /// those libraries are admitted, not every library of the level.
    pub library_names_only: bool,
    /// What the spec said that kplan did not use (descriptive keys, unknown devices), in the
    /// order of the spec text.
    pub notes: Vec<SpecNote>,
    /// `[ci] runners`: self-hosted runner labels per kind, for `kplan ci`.
    pub ci_runners: BTreeMap<String, String>,
    /// The spec's own words, lower case: its comments and every string value (the description,
    /// free-text requirements, descriptive keys). The risk register reads the concerns the team
    /// states there.
    #[serde(skip)]
    pub intent: String,
}

impl Spec {
    /// Every dtype the kernel touches: storage, compute, output, KV cache and weights.
    pub fn all_dtypes(&self) -> Vec<Dtype> {
        let mut v = vec![self.storage, self.compute, self.output];
        v.extend(self.extra_inputs.iter().copied());
        v.extend(self.modifiers.kv_dtype);
        v.extend(self.modifiers.weight_dtype);
        v.dedup();
        v
    }
    /// True when any dtype of the kernel is fp8 (storage, compute, output, KV cache, weights).
    pub fn uses_fp8(&self) -> bool {
        self.all_dtypes().contains(&Dtype::Fp8)
    }
    pub fn dim(&self, k: &str) -> Option<u64> {
        self.dims.get(k).copied()
    }
    /// Bytes per element of the storage dtype, block scales included.
    pub fn storage_size(&self) -> f64 {
        let real = self
            .storage_quant
            .as_ref()
            .map(QuantFormat::bytes_per_element)
            .unwrap_or_else(|| self.storage.size());
        if self.complex {
            2.0 * real
        } else {
            real
        }
    }
    /// Bytes per element of the output dtype (two components for a complex output).
    pub fn output_size(&self) -> f64 {
        self.output.size() * if self.complex_output { 2.0 } else { 1.0 }
    }
    /// Bytes per element of the weights (`weight_dtype`, block scales included), where the
    /// spec names a weight dtype.
    pub fn weight_size(&self) -> Option<f64> {
        match (&self.weight_quant, self.modifiers.weight_dtype) {
            (Some(q), _) => Some(q.bytes_per_element()),
            (None, Some(d)) => Some(d.size()),
            (None, None) => None,
        }
    }
    /// The op name for the plan: the spec's own name for an op kplan does not model.
    pub fn op_name(&self) -> &str {
        self.custom_op.as_deref().unwrap_or(self.op.as_str())
    }
    /// The operation knowledge base entry the plan reads: the op class's, or that of a custom op
    /// the knowledge base knows.
    pub fn kb_op(&self) -> &str {
        self.custom_knowledge.as_deref().unwrap_or(self.op.as_str())
    }
    pub fn kind(&self) -> Option<&str> {
        self.modifiers.kind.as_deref()
    }
    pub fn is_backward(&self) -> bool {
        self.direction == Direction::Backward
    }
    /// Whether the kernel stages data through shared memory / LDS: the spec says so, or the
    /// op's usual algorithm does (tiled matrix ops, block scans, row reductions with a block
    /// per row, privatised histograms, sorts, stencil tiles).
    pub fn uses_shared_memory(&self) -> bool {
        self.features
            .iter()
            .any(|f| f == "shared-memory" || f == "large-shared-memory")
            || matches!(
                self.op,
                Op::Gemm
                    | Op::GroupedGemm
                    | Op::Attention
                    | Op::Conv
                    | Op::Scan
                    | Op::Histogram
                    | Op::Sort
                    | Op::Stencil
            )
    }
}

/// Reads the names users guess for `dtypes` (`dtype`, one name or a list) and `problem`
/// (`shape`, `dims`, `sizes`, `problem_size`) as those keys, with a note each; `dtypes` stays
/// required.
fn guessed_kernel_keys(
    k: &mut RawKernel,
    text: &str,
    notes: &mut Vec<SpecNote>,
) -> Result<Spanned<Vec<Spanned<String>>>, SpecError> {
    let dtypes = match (k.dtypes.take(), k.dtype.take()) {
        (Some(v), _) => {
            let span = span_of(&v);
            match v.into_inner() {
                toml::Value::String(s) => Spanned::new(span.clone(), vec![Spanned::new(span, s)]),
                toml::Value::Array(a) => {
                    // each name's own span: its text inside the list, in order
                    let mut names = Vec::with_capacity(a.len());
                    let mut cursor = span.start;
                    for (i, x) in a.into_iter().enumerate() {
                        let Some(s) = x.as_str() else {
                            return Err(SpecError::at(
                                span,
                                "wrong type in `dtypes`, expected dtype names (`dtypes = [\"bf16\", \"fp32\"]`: storage, compute, output)",
                            ));
                        };
                        let at = text
                            .get(cursor..span.end.min(text.len()))
                            .and_then(|t| t.find(s))
                            .map(|p| cursor + p);
                        let own = match at {
                            Some(p) if p > 0 => {
                                cursor = p + s.len();
                                // the quote before the name starts the value
                                p - 1..p + s.len() + 1
                            }
                            _ => span.start + i..span.start + i + 1,
                        };
                        names.push(Spanned::new(own, s.to_string()));
                    }
                    Spanned::new(span, names)
                }
                toml::Value::Table(t) => {
                    let (names, how) = dtypes_by_role(t.iter().map(|(k, v)| (k.as_str(), v)));
                    if names.is_empty() {
                        return Err(SpecError::at(
                            span,
                            "no dtype name in the `dtypes` table, expected `dtypes = [\"STORAGE\", \"COMPUTE\"]`",
                        ));
                    }
                    notes.push(SpecNote::at(span.clone(), format!("`dtypes` table read by role: {how}")));
                    Spanned::new(span.clone(), names.into_iter().enumerate().map(|(i, n)| Spanned::new(span.start + i..span.end.max(span.start + i + 1), n)).collect())
                }
                _ => {
                    return Err(SpecError::at(
                        span,
                        "wrong type for `dtypes`, expected a list of dtype names (`dtypes = [\"bf16\", \"fp32\"]`: storage, compute, output)",
                    ))
                }
            }
        }
        (None, Some(v)) => {
            let span = span_of(&v);
            let names: Option<Vec<Spanned<String>>> = match v.get_ref() {
                toml::Value::String(s) => Some(vec![Spanned::new(span.clone(), s.clone())]),
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(|s| Spanned::new(span.clone(), s.to_string()))
                    })
                    .collect(),
                _ => None,
            };
            let Some(names) = names else {
                return Err(SpecError::at(
                    span,
                    "wrong type for `dtype`, expected a dtype name or a list (`dtypes = [\"bf16\", \"fp32\"]`: storage, compute, output)",
                )
                .suggest(Some("dtypes".into())));
            };
            notes.push(SpecNote::at(
                span.clone(),
                "key `dtype` read as `dtypes` (storage dtype first, then compute and output dtypes): write `dtypes = [...]`",
            ));
            Spanned::new(span, names)
        }
        (None, None) => {
            let span = {
                let at = text.find("[kernel]").unwrap_or(0);
                at..at + "[kernel]".len().min(text.len() - at)
            };
            // the dtypes given per tensor (`io_dtype`, `out_dtype`, `a = { dtype = ... }`,
            // `precision = [...]`), or none at all
            let (names, how) = inferred_dtypes(text);
            if names.is_empty() {
                notes.push(SpecNote::at(
                    span.clone(),
                    "no dtype given (`dtypes = [\"STORAGE\", \"COMPUTE\"]`): planned as fp32; the bytes and the peaks follow from it",
                ));
                Spanned::new(span.clone(), vec![Spanned::new(span, "fp32".to_string())])
            } else {
                notes.push(SpecNote::at(
                    span.clone(),
                    format!("no `dtypes` key: read from the spec's per-tensor dtypes ({how}); write `dtypes = [...]`"),
                ));
                Spanned::new(
                    span.clone(),
                    names
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| {
                            Spanned::new(span.start + i..span.end.max(span.start + i + 1), n)
                        })
                        .collect(),
                )
            }
        }
    };
    for (name, v) in [
        ("shape", k.shape.take()),
        ("dims", k.dims.take()),
        ("sizes", k.sizes.take()),
        ("problem_size", k.problem_size.take()),
    ] {
        let Some(v) = v else { continue };
        let span = span_of(&v);
        match (v.into_inner(), k.problem.is_some()) {
            (toml::Value::Table(t), false) => {
                // The table's own spans are lost: every key is located at the table.
                let map = t
                    .into_iter()
                    .map(|(key, val)| {
                        (
                            Spanned::new(span.clone(), key),
                            Spanned::new(span.clone(), val),
                        )
                    })
                    .collect();
                k.problem = Some(Spanned::new(span.clone(), map));
                notes.push(SpecNote::at(
                    span,
                    format!("key `{name}` read as `problem` (the sizes of the op): write `problem = {{ ... }}`"),
                ));
            }
            (_, true) => notes.push(SpecNote::at(
                span,
                format!("key `{name}` not used by kplan: `problem` gives the sizes; the plan does not depend on it"),
            )),
            (_, false) => notes.push(SpecNote::at(
                span,
                format!("key `{name}` not used by kplan: the sizes go in `problem = {{ ... }}` (a table); the plan does not depend on it"),
            )),
        }
    }
    Ok(dtypes)
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

/// A parsed dtype name: the dtype, the fp8 encoding it names and the block scaling it names.
pub type ParsedDtype = (Dtype, Option<Fp8Encoding>, Option<BlockScale>);

/// Parses a dtype name (liberal spellings).
pub fn parse_dtype(name: &str) -> Option<ParsedDtype> {
    let n = name.trim().to_ascii_lowercase().replace('_', "-");
    let plain = |d: Dtype| Some((d, None, None));
    match n.as_str() {
        "fp64" | "f64" | "float64" | "double" => plain(Dtype::Fp64),
        "fp32" | "f32" | "float32" | "float" => plain(Dtype::Fp32),
        "tf32" => plain(Dtype::Tf32),
        "fp16" | "f16" | "float16" | "half" => plain(Dtype::Fp16),
        "bf16" | "bfloat16" => plain(Dtype::Bf16),
        "fp8" | "f8" | "float8" => plain(Dtype::Fp8),
        "fp8-e4m3" | "fp8-e4m3fn" | "e4m3" | "e4m3fn" | "fp8-e5m2" | "e5m2" | "float8-e4m3fn"
        | "float8-e5m2" => Some((Dtype::Fp8, Some(Fp8Encoding::Ocp), None)),
        "fp8-e4m3fnuz" | "fp8-e5m2fnuz" | "e4m3fnuz" | "e5m2fnuz" | "float8-e4m3fnuz"
        | "float8-e5m2fnuz" => Some((Dtype::Fp8, Some(Fp8Encoding::Fnuz), None)),
        "mxfp8" => Some((Dtype::Fp8, Some(Fp8Encoding::Ocp), Some(BlockScale::Mx))),
        "fp6" | "fp6-e2m3" | "fp6-e3m2" | "e2m3" | "e3m2" => plain(Dtype::Fp6),
        "mxfp6" => Some((Dtype::Fp6, None, Some(BlockScale::Mx))),
        "fp4" | "fp4-e2m1" | "e2m1" | "float4-e2m1" | "float4-e2m1fn" => plain(Dtype::Fp4),
        "nvfp4" => Some((Dtype::Fp4, None, Some(BlockScale::Nvfp4))),
        "mxfp4" => Some((Dtype::Fp4, None, Some(BlockScale::Mx))),
        "int8" | "i8" | "s8" => plain(Dtype::Int8),
        "uint8" | "u8" | "bool" => plain(Dtype::Uint8),
        "int4" | "i4" | "s4" | "uint4" | "u4" => plain(Dtype::Int4),
        "int16" | "i16" | "s16" | "short" => plain(Dtype::Int16),
        "uint16" | "u16" | "ushort" => plain(Dtype::Uint16),
        "int32" | "i32" | "s32" | "int" => plain(Dtype::Int32),
        "uint32" | "u32" | "uint" => plain(Dtype::Uint32),
        "int64" | "i64" | "s64" | "long" => plain(Dtype::Int64),
        "uint64" | "u64" => plain(Dtype::Uint64),
        _ => None,
    }
}

/// The real component dtype of a complex dtype name (`complex64` = two fp32, `complex128` =
/// two fp64, `complex32` / `chalf` = two fp16): kplan models the component and doubles the bytes.
pub fn complex_component(name: &str) -> Option<Dtype> {
    let n = name
        .trim()
        .to_ascii_lowercase()
        .replace(['_', '<', '>', ' '], "-");
    match n.trim_end_matches('-') {
        "complex64" | "c64" | "cfloat" | "complex-float" | "complex-fp32" | "complex-f32"
        | "cf32" | "complex" => Some(Dtype::Fp32),
        "complex128" | "c128" | "cdouble" | "complex-double" | "complex-fp64" | "complex-f64"
        | "cf64" | "zdouble" => Some(Dtype::Fp64),
        "complex32" | "c32" | "chalf" | "complex-half" | "complex-fp16" | "complex-f16" => {
            Some(Dtype::Fp16)
        }
        _ => None,
    }
}

const DTYPE_NAMES: [&str; 25] = [
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
    "mxfp8",
    "fp6",
    "mxfp6",
    "fp4",
    "nvfp4",
    "mxfp4",
    "int4",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
];

pub use kplan_kb::closest as closest_name;

/// The block-quantized format names [`parse_block_quant`] accepts (for messages).
const QUANT_NAMES: [&str; 20] = [
    "q4_0",
    "q4_1",
    "q5_0",
    "q5_1",
    "q8_0",
    "q8_1",
    "q8_k",
    "iq4_nl",
    "iq4_xs",
    "q2_k",
    "q3_k",
    "q4_k",
    "q5_k",
    "q6_k",
    "nf4",
    "int4-awq",
    "int4-gptq",
    "mxfp4",
    "mxfp6",
    "nvfp4",
];

/// The known name `name` is a misspelling of, for names whose misreading would plan another
/// operation: one edit (two for names of ten letters or more), same first letter. `spgemm` is
/// not a spelling of `spmm`, nor `scatter` of `scan`.
pub(crate) fn strict_typo<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let n = name.trim().to_ascii_lowercase();
    let limit = if n.chars().count() >= 10 { 2 } else { 1 };
    let first = n.chars().next();
    candidates
        .into_iter()
        .filter(|c| c.chars().next() == first)
        .map(|c| (strsim::damerau_levenshtein(&n, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d > 0 && *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// `group_size` of the raw problem table, for the group-quantized dtypes.
fn raw_group_size(p: Option<&RawProblem>) -> Option<u64> {
    p?.get_ref().iter().find_map(|(k, v)| {
        (k.get_ref() == "group_size")
            .then(|| v.get_ref().as_integer())
            .flatten()
            .filter(|g| *g > 0)
            .map(|g| g as u64)
    })
}

fn norm_name(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace(['_', ' '], "-")
}

/// Parses and validates a spec. `kb` resolves target names and feature ids.
/// Reads a spec. A value kplan cannot read in a key the plan can do without (a size key it
/// does not model, two size keys that disagree, a list where one word was expected, free text
/// where a flag was expected) does not reject the spec: the key is set aside, the plan is made
/// without it, and a spec note says what was set aside and why (see [`peel`]). The spec is
/// rejected when it is not TOML, when a key name is misspelt or misplaced, or when what is left
/// cannot be planned (no op, no target): then the error names the key behind it.
pub fn parse_spec(text: &str, kb: &Kb) -> Result<Spec, SpecError> {
    peel::parse_lenient(text, |t| parse_spec_strict(t, kb))
}

/// [`parse_spec`] without setting anything aside: the first value kplan cannot read is an error.
pub fn parse_spec_strict(text: &str, kb: &Kb) -> Result<Spec, SpecError> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError {
        span: e.span(),
        message: e.message().trim_end().replace('\n', " "),
        suggestion: None,
    })?;
    let is_target =
        |n: &str| kb.resolve(n).is_ok() || looks_like_arch(n) || target_suggestion(n, kb).is_some();
    let mut notes = crate::keys::check(text, &is_target)?;

    let mut k = raw.kernel;
    let dtypes = guessed_kernel_keys(&mut k, text, &mut notes)?;
    // Modifiers as users write them (a list for one name, words for a flag), coerced once.
    let m_kind = coerce::name(k.kind.take(), "kind", &mut notes)?;
    let m_reduce = coerce::name(k.reduce.take(), "reduce", &mut notes)?;
    let m_layout = coerce::name(k.layout.take(), "layout", &mut notes)?;
    let m_format = coerce::name(k.format.take(), "format", &mut notes)?;
    let m_granularity = coerce::name(k.granularity.take(), "granularity", &mut notes)?;
    let m_mask = coerce::name(k.mask.take(), "mask", &mut notes)?;
    let m_epilogue = coerce::name(k.epilogue.take(), "epilogue", &mut notes)?;
    let m_deterministic = coerce::flag(k.deterministic.take(), "deterministic", &mut notes)?;
    let m_causal = coerce::flag(k.causal.take(), "causal", &mut notes)?;
    let m_varlen = coerce::flag(k.varlen.take(), "varlen", &mut notes)?;
    let m_ragged = coerce::flag(k.ragged.take(), "ragged", &mut notes)?;
    let m_stable = coerce::flag(k.stable.take(), "stable", &mut notes)?;
    let m_exclusive = coerce::flag(k.exclusive.take(), "exclusive", &mut notes)?;
    // `values = "fp64"`: a sort with values, named by their dtype (a key-value sort).
    let m_values = match k.values.take() {
        Some(v)
            if v.get_ref()
                .as_str()
                .is_some_and(|n| parse_dtype(n).is_some()) =>
        {
            notes.push(SpecNote::at(
                v.span(),
                format!(
                    "`values = \"{}\"` read as `values = true` (a key-value sort whose values are `{}`): the bytes count each value at the kernel's storage dtype",
                    v.get_ref().as_str().unwrap_or_default(),
                    v.get_ref().as_str().unwrap_or_default()
                ),
            ));
            Some(Spanned::new(v.span(), true))
        }
        v => coerce::flag(v, "values", &mut notes)?,
    };
    let mut req_deterministic = false;
    for (key, v) in [
        ("deterministic", raw.requirements.deterministic.clone()),
        ("determinism", raw.requirements.determinism.clone()),
        ("reproducible", raw.requirements.reproducible.clone()),
    ] {
        if let Some(b) = coerce::flag(v, key, &mut notes)? {
            req_deterministic |= *b.get_ref();
        }
    }
    let name = match &k.name {
        Some(n) => {
            let name = n.get_ref().trim().to_string();
            if name.is_empty() {
                return Err(SpecError::at(
                    span_of(n),
                    "empty kernel name, expected a non-empty string",
                ));
            }
            name
        }
        None => {
            let name = k.op.get_ref().trim().to_string();
            notes.push(SpecNote::at(
                span_of(&k.op),
                format!("[kernel] has no `name`: the plan names the kernel after its op, `{name}`"),
            ));
            name
        }
    };
    let op_name = norm_name(k.op.get_ref());
    let mut custom_op: Option<String> = None;
    let mut custom_knowledge: Option<String> = None;
    // Other names of an op class: the fixed table (with the `kind` they imply), then the
    // aliases of the class's operation knowledge base entry.
    let kb_alias = kb
        .ops
        .iter()
        .filter(|o| !o.knowledge_only)
        .find(|o| o.aliases.iter().any(|a| norm_name(a) == op_name))
        .and_then(|o| Op::parse(&o.id));
    let (op, alias_kind) = match Op::parse(&op_name) {
        Some(o) => (o, None),
        None => match Op::ALIASES.iter().find(|(a, _, _)| *a == op_name) {
            Some((_, o, kind)) => (*o, kind.map(str::to_string)),
            None if kb_alias.is_some() => (kb_alias.unwrap_or(Op::Custom), None),
            None => {
                let names: Vec<&str> = Op::ALL
                    .iter()
                    .map(|o| o.as_str())
                    .chain(Op::ALIASES.iter().map(|a| a.0))
                    .chain(
                        kb.ops
                            .iter()
                            .filter(|o| !o.knowledge_only)
                            .flat_map(|o| o.aliases.iter().map(String::as_str)),
                    )
                    .collect();
                // A knowledge-only entry named exactly (`mla`) is that entry, not a typo of an
                // op class one letter away (`mha`)
                let knowledge_exact = kb.ops.iter().filter(|o| o.knowledge_only).any(|o| {
                    norm_name(&o.id) == op_name || o.aliases.iter().any(|a| norm_name(a) == op_name)
                });
                // A misspelt op class would be planned as the wrong thing: an error. Any other
                // name is an operation kplan does not model: planned as a custom op.
                let typo = if knowledge_exact {
                    None
                } else {
                    strict_typo(&op_name, names.iter().copied())
                };
                if let Some(t) = typo {
                    return Err(SpecError::at(
                        span_of(&k.op),
                        format!(
                            "unknown op `{}`, expected one of {}",
                            k.op.get_ref(),
                            list_expected(Op::ALL.map(Op::as_str))
                        ),
                    )
                    .suggest(Some(t)));
                }
                if op_name.is_empty() {
                    return Err(SpecError::at(
                        span_of(&k.op),
                        "empty `op`, expected an op class (`kplan ops` lists them) or `custom`",
                    ));
                }
                // A name made of words, one of which names an op class or a knowledge base
                // entry (`sparse-attention`, `segment-reduce`, `kmeans-assign`): that op.
                let recognised = recognise::recognise(&op_name, kb);
                let others = recognised
                    .as_ref()
                    .map(|(_, w)| recognise::other_ops(&op_name, w, kb))
                    .unwrap_or_default();
                let others_said = if others.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the name also names {} (the first op word decides: plan each op of a fused kernel apart, or name the one that bounds it)",
                        others.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
                    )
                };
                if let Some((recognise::Recognised::Class(o, kind), word)) = &recognised {
                    notes.push(SpecNote::at(
                        span_of(&k.op),
                        format!(
                            "op `{}` read as op class `{}` (from `{word}` in its name): planned with that class's work model, libraries and risks; write `op = \"{}\"` to say so, or `op = \"custom\"` with `flops` and `bytes` if it is another operation{others_said}",
                            k.op.get_ref(),
                            o.as_str(),
                            o.as_str()
                        ),
                    ));
                    (*o, kind.map(str::to_string))
                } else {
                    let hint = closest_name(&op_name, names.iter().copied())
                        .map(|c| format!(" (if op class `{c}` was meant, write `{c}`)"))
                        .unwrap_or_default();
                    let by_word = match &recognised {
                        Some((recognise::Recognised::Knowledge(id), _)) => Some(id.as_str()),
                        _ => None,
                    };
                    let known = kb.ops.iter().find(|o| {
                        o.knowledge_only
                            && (o.id == op_name
                                || o.aliases.contains(&op_name)
                                || by_word == Some(o.id.as_str()))
                    });
                    // A variant of an op class (`mla` of attention): that class's work model,
                    // the entry's libraries, algorithms and risks.
                    if let Some((o, base)) =
                        known.and_then(|o| o.base.as_deref().and_then(Op::parse).map(|b| (o, b)))
                    {
                        notes.push(SpecNote::at(
                            span_of(&k.op),
                            format!(
                                "op `{}` read as the knowledge base entry `{}` (`kplan ops show {}`), a variant of op class `{}`: planned with that class's work model and the entry's libraries, algorithms and risks{others_said}",
                                k.op.get_ref(),
                                o.id,
                                o.id,
                                base.as_str()
                            ),
                        ));
                        custom_knowledge = Some(o.id.clone());
                        (base, None)
                    } else {
                        notes.push(SpecNote::at(
                    span_of(&k.op),
                    match known {
                        Some(o) => format!(
                            "op `{}` has no work model in kplan{hint}: planned as a custom op (the roofline uses `flops` and `bytes` where `problem` gives them); its op knowledge base entry `{}` (`kplan ops show {}`) gives the libraries, algorithms and risks{others_said}",
                            k.op.get_ref(),
                            o.id,
                            o.id
                        ),
                        None => format!(
                            "op `{}` is not an op class kplan models{hint}: planned as a custom op; kplan has no work model or library knowledge for it, so the roofline uses `flops` and `bytes` where `problem` gives them",
                            k.op.get_ref()
                        ),
                    },
                ));
                        custom_knowledge = known.map(|o| o.id.clone());
                        custom_op = Some(k.op.get_ref().trim().to_string());
                        (Op::Custom, None)
                    }
                }
            }
        },
    };

    // `sparsity = "N:M"` on a sparse matrix product: structured sparsity (a compressed dense
    // operand on sparse matrix units), which the knowledge base holds apart from SpGEMM.
    let (op, alias_kind) = match (&k.sparsity, op) {
        (Some(sp), Op::Spgemm | Op::Spmm | Op::Gemm)
            if sp.get_ref().as_str().is_some_and(|v| {
                v.split_once(':').is_some_and(|(a, b)| {
                    a.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                })
            }) && kb.op_info("structured-sparse-gemm").is_some() =>
        {
            notes.push(SpecNote::at(
                sp.span(),
                format!(
                    "`sparsity = \"{}\"` is structured sparsity: op `{}` planned as a structured-sparse GEMM (the knowledge base entry `structured-sparse-gemm` gives the libraries, algorithms and risks)",
                    sp.get_ref().as_str().unwrap_or_default(),
                    k.op.get_ref()
                ),
            ));
            custom_knowledge = Some("structured-sparse-gemm".to_string());
            match kb
                .op_info("structured-sparse-gemm")
                .and_then(|o| o.base.as_deref())
                .and_then(Op::parse)
            {
                Some(base) => (base, None),
                None => {
                    custom_op = Some(k.op.get_ref().trim().to_string());
                    (Op::Custom, None)
                }
            }
        }
        _ => (op, alias_kind),
    };

    if dtypes.get_ref().is_empty() {
        return Err(SpecError::at(
            span_of(&dtypes),
            "empty `dtypes`, expected the storage dtype first, then the compute/accumulate dtype",
        ));
    }
    let mut parsed = Vec::new();
    let mut encoding: Option<Fp8Encoding> = None;
    let mut block_scale: Option<BlockScale> = None;
    let group_size = raw_group_size(k.problem.as_ref());
    let mut quants: Vec<(usize, QuantFormat)> = Vec::new();
    let mut complex_at: Vec<usize> = Vec::new();
    let mut note_dtype = |d: &Spanned<String>| -> Result<Dtype, SpecError> {
        let name = d.get_ref();
        let (dt, enc, bs) = match parse_dtype(name) {
            Some(x) => {
                if let Some((_, q)) = parse_block_quant(name, group_size) {
                    quants.push((d.span().start, q));
                }
                x
            }
            None => match parse_block_quant(name, group_size) {
                Some((dt, q)) => {
                    quants.push((d.span().start, q));
                    (dt, None, None)
                }
                None if complex_component(name).is_some() => {
                    complex_at.push(d.span().start);
                    (complex_component(name).unwrap_or(Dtype::Fp32), None, None)
                }
                None => {
                    return Err(SpecError::at(
                        span_of(d),
                        format!(
                        "unknown dtype `{}`, expected one of {}, a complex dtype (`complex64`, `complex128`) or a block-quantized format ({})",
                        name,
                        list_expected(DTYPE_NAMES),
                        list_expected(QUANT_NAMES)
                    ),
                    )
                    .suggest(closest_name(
                        name,
                        DTYPE_NAMES.into_iter().chain(QUANT_NAMES),
                    )))
                }
            },
        };
        if enc.is_some() {
            if encoding.is_some() && encoding != enc {
                return Err(SpecError::at(
                    span_of(d),
                    "conflicting fp8 encodings, expected either OCP (e4m3fn/e5m2) or FNUZ (e4m3fnuz/e5m2fnuz), not both",
                ));
            }
            encoding = enc;
        }
        if bs.is_some() {
            block_scale = bs;
        }
        Ok(dt)
    };
    for d in dtypes.get_ref() {
        parsed.push(note_dtype(d)?);
    }
    // More than three dtypes: the first is the storage dtype, the last two the compute and
    // output dtypes, the ones between further inputs (the activations of a quantized matmul,
    // a second operand of another type).
    let mut extra_inputs: Vec<Dtype> = Vec::new();
    if parsed.len() > 3 {
        if parsed.len() > 6 {
            return Err(SpecError::at(
                span_of(&dtypes),
                "too many dtypes, expected the storage dtype, further input dtypes, then the compute and output dtypes",
            ));
        }
        let names: Vec<&str> = dtypes
            .get_ref()
            .iter()
            .map(|d| d.get_ref().as_str())
            .collect();
        let n = names.len();
        notes.push(SpecNote::at(
            span_of(&dtypes),
            format!(
                "`dtypes` lists {n}: read as storage `{}`, further inputs {}, compute `{}` and output `{}`; the traffic counts the inputs at the storage dtype's width (`weight_dtype` gives a second operand's own width)",
                names[0],
                list_expected(names[1..n - 2].iter().copied()),
                names[n - 2],
                names[n - 1]
            ),
        ));
        extra_inputs = parsed[1..n - 2].to_vec();
        let (c, o) = (parsed[n - 2], parsed[n - 1]);
        parsed = vec![parsed[0], c, o];
    }
    // A weight-only quantized format after the first dtype of a matrix op (`["fp16",
    // "int4-awq-g128", "fp16"]`: activations, then weights) is the weight dtype, not the compute
    // dtype, when `weight_dtype` is not given.
    let mut weight_from_dtypes: Option<(Dtype, std::ops::Range<usize>)> = None;
    if k.weight_dtype.is_none()
        && matches!(op, Op::Gemm | Op::GroupedGemm)
        && parsed.len() == dtypes.get_ref().len()
    {
        let at = dtypes
            .get_ref()
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, d)| parse_block_quant(d.get_ref(), group_size).is_some());
        if let Some((i, d)) = at {
            notes.push(SpecNote::at(
                span_of(d),
                format!(
                    "`{}` in `dtypes` read as the weight dtype (a weight-only quantized matmul: activations `{}`, weights `{}`); write `weight_dtype = \"{}\"` to say so",
                    d.get_ref(),
                    dtypes.get_ref()[0].get_ref(),
                    d.get_ref(),
                    d.get_ref()
                ),
            ));
            weight_from_dtypes = Some((parsed.remove(i), span_of(d)));
        }
    }
    let kv_dtype = k.kv_dtype.as_ref().map(&mut note_dtype).transpose()?;
    let weight_dtype = match &weight_from_dtypes {
        Some((w, _)) => Some(*w),
        None => k.weight_dtype.as_ref().map(&mut note_dtype).transpose()?,
    };
    let quant_at = |span: Option<std::ops::Range<usize>>| {
        span.and_then(|sp| {
            quants
                .iter()
                .find(|(at, _)| *at == sp.start)
                .map(|(_, q)| q.clone())
        })
    };
    let storage_quant = quant_at(dtypes.get_ref().first().map(span_of));
    let weight_quant = quant_at(
        k.weight_dtype
            .as_ref()
            .map(span_of)
            .or(weight_from_dtypes.as_ref().map(|(_, sp)| sp.clone())),
    );
    let complex_first = dtypes
        .get_ref()
        .first()
        .is_some_and(|d| complex_at.contains(&d.span().start));
    let complex_last = match dtypes.get_ref().as_slice() {
        [only] => complex_at.contains(&only.span().start),
        [.., _, _] if dtypes.get_ref().len() >= 3 => dtypes
            .get_ref()
            .last()
            .is_some_and(|d| complex_at.contains(&d.span().start)),
        _ => complex_first,
    };
    let storage = parsed[0];
    let compute = parsed.get(1).copied().unwrap_or(storage);
    let output = parsed.get(2).copied().unwrap_or(storage);

    // Modifiers, each checked against the ops it applies to. One that does not apply to this op
    // describes the kernel in words kplan does not use here: a note, and the plan ignores it.
    let late_notes = std::cell::RefCell::new(Vec::<SpecNote>::new());
    let applies = |key: &str,
                   span: std::ops::Range<usize>,
                   ops: &[Op]|
     -> Result<bool, SpecError> {
        if ops.contains(&op) {
            Ok(true)
        } else {
            late_notes.borrow_mut().push(SpecNote::at(
                span,
                format!(
                    "key `{key}` not used by kplan: it applies to {}, not to op `{}`; the plan does not depend on it",
                    list_expected(ops.iter().map(|o| o.as_str())),
                    op.as_str(),
                ),
            ));
            Ok(false)
        }
    };
    let flag = |v: &Option<Spanned<bool>>, key: &str, ops: &[Op]| -> Result<bool, SpecError> {
        match v {
            None => Ok(false),
            Some(b) => {
                if !ops.is_empty() && !applies(key, span_of(b), ops)? {
                    return Ok(false);
                }
                Ok(*b.get_ref())
            }
        }
    };
    let text_mod =
        |v: &Option<Spanned<String>>, key: &str, ops: &[Op]| -> Result<Option<String>, SpecError> {
            match v {
                None => Ok(None),
                Some(s) => {
                    if !ops.is_empty() && !applies(key, span_of(s), ops)? {
                        return Ok(None);
                    }
                    let t = norm_name(s.get_ref());
                    if t.is_empty() {
                        return Err(SpecError::at(
                            span_of(s),
                            format!("empty `{key}`, expected a name"),
                        ));
                    }
                    Ok(Some(t))
                }
            }
        };
    let gradient = std::cell::RefCell::new(None::<String>);
    // No `direction` key: a direction word in the op name (`conv-backward-data`, `layernorm-bwd`,
    // `conv-wgrad`) is the direction, said in a note.
    let named_direction = match &k.direction {
        Some(_) => None,
        None if !op.has_backward() => {
            if let Some(d) = direction_in_name(&op_name) {
                late_notes.borrow_mut().push(SpecNote::at(
                    span_of(&k.op),
                    format!(
                        "the op name `{}` says `{d}`, but kplan has no backward work model for op class `{}`: the FLOPs and bytes are the forward pass's; give `flops` and `bytes` with `op = \"custom\"` for the gradient kernel's own",
                        k.op.get_ref(),
                        op.as_str()
                    ),
                ));
            }
            None
        }
        None => direction_in_name(&op_name).map(|d| {
            late_notes.borrow_mut().push(SpecNote::at(
                span_of(&k.op),
                format!(
                    "direction `{d}` read from the op name `{}`; write `direction = \"{d}\"` to say so",
                    k.op.get_ref()
                ),
            ));
            Spanned::new(span_of(&k.op), d.to_string())
        }),
    };
    let direction = match k.direction.as_ref().or(named_direction.as_ref()) {
        None => Direction::Forward,
        Some(d) => match norm_name(d.get_ref())
            .replace(['+', '/', '&', ','], "-")
            .replace("-and-", "-")
            .replace("--", "-")
            .as_str()
        {
            "forward" | "fwd" | "inference" => Direction::Forward,
            "backward" | "bwd" | "grad" | "gradient" => Direction::Backward,
            // One gradient of a two-gradient op (conv and matmul dgrad / wgrad): backward, with
            // the gradient kept for the work model.
            g if gradient_of(g).is_some() && op.has_backward() => {
                let which = gradient_of(g).unwrap_or("data");
                late_notes.borrow_mut().push(SpecNote::at(
                    span_of(d),
                    format!(
                        "direction `{}` read as `backward`, {which} gradient only",
                        d.get_ref()
                    ),
                ));
                *gradient.borrow_mut() = Some(which.to_string());
                Direction::Backward
            }
            // both passes: the plan is for the backward pass, the larger and harder one
            "forward-backward" | "fwd-bwd" | "forward+backward" | "both" | "training"
            | "train" | "fwd-and-bwd"
                if op.has_backward() =>
            {
                late_notes.borrow_mut().push(SpecNote::at(
                    span_of(d),
                    format!(
                        "direction `{}` read as `backward`: this plan is for the backward pass; plan the forward kernel with `direction = \"forward\"`",
                        d.get_ref()
                    ),
                ));
                Direction::Backward
            }
            // Both passes of an op kplan has no backward model for: the forward pass is what
            // kplan can plan; the note says the backward kernel is not in this plan.
            "forward-backward" | "fwd-bwd" | "both" | "training" | "train" => {
                late_notes.borrow_mut().push(SpecNote::at(
                    span_of(d),
                    format!(
                        "direction `{}` read as `forward`: kplan has no backward work model for op `{}`, so this plan is for the forward kernel; plan the backward kernel as `op = \"custom\"` with its flops and bytes",
                        d.get_ref(),
                        op.as_str()
                    ),
                ));
                Direction::Forward
            }
            other => {
                return Err(SpecError::at(
                    span_of(d),
                    format!(
                        "unknown direction `{}`, expected `forward` or `backward` (or `backward-data` / `backward-weight` for one gradient)",
                        d.get_ref()
                    ),
                )
                .suggest(closest_name(other, ["forward", "backward"])))
            }
        },
    };
    if direction == Direction::Backward && !op.has_backward() {
        let with: Vec<&str> = Op::ALL
            .iter()
            .filter(|o| o.has_backward())
            .map(|o| o.as_str())
            .collect();
        return Err(SpecError::at(
            span_of(k.direction.as_ref().unwrap_or(&k.op)),
            format!(
                "kplan has no backward work model for op `{}`, expected `direction = \"backward\"` only for {}; for another gradient kernel use `op = \"custom\"` with its flops and bytes",
                op.as_str(),
                list_expected(with)
            ),
        ));
    }
    let mut kind = alias_kind;
    for (key, v) in [("kind", &m_kind), ("reduce", &m_reduce)] {
        if let Some(s) = v {
            let t = norm_name(s.get_ref());
            let known = op.kinds();
            // `reduce` on a scatter/embedding names the combine op; on a reduction it is the kind.
            if key == "reduce" && matches!(op, Op::Scatter | Op::Embedding | Op::Histogram) {
                continue;
            }
            let mut t = t;
            if !known.is_empty() && !known.contains(&t.as_str()) {
                // a known kind with qualifiers (`l2-norm`, `max-abs`): the one known word in it
                let words: Vec<&str> = t.split(['-', '_']).filter(|w| known.contains(w)).collect();
                if let [w] = words[..] {
                    let w = w.to_string();
                    late_notes.borrow_mut().push(SpecNote::at(
                        span_of(s),
                        format!("{key} `{}` read as `{w}`", s.get_ref()),
                    ));
                    t = w;
                }
            }
            if !known.is_empty() && !known.contains(&t.as_str()) {
                // A misspelt variant would plan the wrong work model: an error. Another
                // variant (`groupnorm`, `logsumexp`) is planned with the op's own model.
                if let Some(typo) = strict_typo(&t, known.iter().copied()) {
                    return Err(SpecError::at(
                        span_of(s),
                        format!(
                            "unknown {key} `{}` for op `{}`, expected one of {}",
                            s.get_ref(),
                            op.as_str(),
                            list_expected(known.iter().copied())
                        ),
                    )
                    .suggest(Some(typo)));
                }
                late_notes.borrow_mut().push(SpecNote::at(
                    span_of(s),
                    format!(
                        "{key} `{}` is not a variant kplan models for op `{}` ({}): planned with the op's general work model and risks",
                        s.get_ref(),
                        op.as_str(),
                        list_expected(known.iter().copied())
                    ),
                ));
            }
            if kind.is_none() || key == "kind" {
                kind = Some(t);
            }
        }
    }
    let reduce = match (&m_reduce, op) {
        (Some(s), Op::Scatter | Op::Embedding | Op::Histogram) => Some(norm_name(s.get_ref())),
        // The combine op in the op name (`scatter-add`, `index-add`, `scatter-max`).
        (None, Op::Scatter) => op_name
            .split('-')
            .find(|w| matches!(*w, "add" | "sum" | "max" | "min" | "mean"))
            .map(str::to_string),
        _ => None,
    };
    use Op::*;
    let modifiers = Modifiers {
        kind,
        reduce,
        deterministic: flag(&m_deterministic, "deterministic", &[])? || req_deterministic,
        causal: flag(&m_causal, "causal", &[Attention, Conv, Softmax])?,
        varlen: flag(
            &m_varlen,
            "varlen",
            &[Attention, Norm, Softmax, Elementwise, Scan],
        )?,
        ragged: flag(
            &m_ragged,
            "ragged",
            &[GroupedGemm, Moe, Sort, Scan, Attention],
        )?,
        stable: flag(&m_stable, "stable", &[Sort, Topk])?,
        exclusive: flag(&m_exclusive, "exclusive", &[Scan])?,
        values: flag(&m_values, "values", &[Sort, Topk])?,
        layout: text_mod(&m_layout, "layout", &[])?,
        format: text_mod(&m_format, "format", &[Spmv, Spmm])?,
        granularity: text_mod(
            &m_granularity,
            "granularity",
            &[Quantize, Dequantize, Gemm, GroupedGemm],
        )?,
        mask: text_mod(&m_mask, "mask", &[Softmax, Attention])?,
        epilogue: text_mod(
            &m_epilogue,
            "epilogue",
            &[Gemm, GroupedGemm, Conv, Attention],
        )?,
        kv_dtype: {
            match &k.kv_dtype {
                Some(s) if !applies("kv_dtype", span_of(s), &[Attention, Scatter])? => None,
                _ => kv_dtype,
            }
        },
        gradient: gradient.borrow().clone(),
        weight_dtype: {
            match &k.weight_dtype {
                Some(s) if !applies("weight_dtype", span_of(s), &[Gemm, GroupedGemm, Moe])? => None,
                _ => weight_dtype,
            }
        },
    };

    let elem_bytes = storage_quant
        .as_ref()
        .map(QuantFormat::bytes_per_element)
        .unwrap_or_else(|| storage.size())
        * if complex_first { 2.0 } else { 1.0 }
        + output.size() * if complex_last { 2.0 } else { 1.0 };
    let (problem, dims, mut knobs, work_unknown) = parse_problem(
        op,
        k.problem.as_ref(),
        span_of(&k.op),
        &modifiers,
        &mut notes,
        custom_op.as_deref(),
        elem_bytes,
    )?;
    // an elementwise kernel's tensors named as lists in [kernel] (`inputs = ["gate", "up",
    // "grad_out"]`): each one is a stream of the problem size, unless `problem` counts them
    if op == Op::Elementwise {
        let given = |key: &str| {
            k.problem
                .as_ref()
                .is_some_and(|p| p.get_ref().contains_key(key))
        };
        for (key, slot) in [
            ("inputs", &mut knobs.inputs),
            ("outputs", &mut knobs.outputs),
        ] {
            if given(key) {
                continue;
            }
            if let Some(n) = kernel_list_len(text, key) {
                if n > 0 {
                    *slot = n as u64;
                    notes.push(SpecNote::at(
                        span_of(&k.op),
                        format!("`{key}` lists {n} tensors: the elementwise work model streams {n} {key} of the problem size"),
                    ));
                }
            }
        }
    }

    let mut features = Vec::new();
    for f in &k.features {
        let n = norm_name(f.get_ref());
        let id = if matches!(
            n.as_str(),
            "atomics" | "atomic" | "atomic-add" | "atomic-adds"
        ) {
            atomic_feature(compute, output).to_string()
        } else if let Some(feat) = kb.feature_named(&n) {
            feat.id.clone()
        } else {
            let ids: Vec<&str> = kb
                .features
                .iter()
                .flat_map(|f| {
                    std::iter::once(f.id.as_str()).chain(f.aliases.iter().map(String::as_str))
                })
                .chain(["atomics"])
                .collect();
            // A spelling of a known feature would plan without it: an error. Another word
            // describes the kernel in terms kplan does not model: a note.
            // `fp4` is not a spelling of `fp8`: names whose numbers differ are other things.
            let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
            if let Some(t) =
                crate::keys::typo_of(&n, ids.iter().copied()).filter(|t| digits(t) == digits(&n))
            {
                return Err(SpecError::at(
                    span_of(f),
                    format!(
                        "unknown feature `{}`, expected a feature id from the knowledge base (`kplan features` lists them) or a generic name (`tensor-cores`, `atomics`, `fp8`, `warp-shuffles`, `cooperative-groups`)",
                        f.get_ref()
                    ),
                )
                .suggest(Some(t)));
            }
            notes.push(SpecNote::at(
                span_of(f),
                format!(
                    "feature `{}` not used by kplan: the knowledge base has no such feature (`kplan features` lists them); the plan checks no target for it",
                    f.get_ref()
                ),
            ));
            continue;
        };
        if kb.feature(&id).is_none() {
            return Err(SpecError::at(
                span_of(f),
                format!(
                    "feature `{}` resolves to `{id}`, which this knowledge base does not define",
                    f.get_ref()
                ),
            ));
        }
        if !features.contains(&id) {
            features.push(id);
        }
    }

    let mut stretch = Vec::new();
    let targets = targets_of(&raw.backends, kb, &mut notes, &mut stretch)?;

    let performance = match &raw.requirements.performance {
        None => PerfReq::Reasonable,
        Some(p) => match norm_name(p.get_ref()).as_str() {
            "near-peak" | "peak" | "max" | "maximum" => PerfReq::NearPeak,
            "reasonable" | "good-enough" => PerfReq::Reasonable,
            // Words: read by what they say, with a note (a one-word typo stays an error).
            other => match performance_words(p.get_ref()) {
                Some((req, why)) => {
                    notes.push(SpecNote::at(
                        span_of(p),
                        format!(
                            "performance `{}` read as `{}` ({why})",
                            p.get_ref(),
                            req.as_str()
                        ),
                    ));
                    req
                }
                None => {
                    return Err(SpecError::at(
                        span_of(p),
                        format!(
                            "unknown performance requirement `{}`, expected `near-peak` or `reasonable`",
                            p.get_ref()
                        ),
                    )
                    .suggest(closest_name(other, ["near-peak", "reasonable"])))
                }
            },
        },
    };
    // `latency_us`, or the same budget in another unit (`latency_ms = 5`), converted.
    let rq = &raw.requirements;
    let latency_given = [
        ("latency_us", rq.latency_us.as_ref(), 1.0),
        ("latency_ns", rq.latency_ns.as_ref(), 1e-3),
        ("latency_ms", rq.latency_ms.as_ref(), 1e3),
        ("latency_s", rq.latency_s.as_ref(), 1e6),
    ]
    .into_iter()
    .find_map(|(k, v, scale)| v.map(|v| (k, v, scale)))
    .or_else(|| rq.latency.as_ref().map(|v| ("latency", v, 1.0)));
    let latency_us = match latency_given {
        None => None,
        Some((key, v, scale)) => {
            let x = match v.get_ref() {
                toml::Value::Integer(i) if key != "latency" => *i as f64 * scale,
                toml::Value::Float(f) if key != "latency" => *f * scale,
                // `"20"`, `"20 us"`, `"5ms"`: the number, in the text's unit (else the key's).
                toml::Value::String(t) if duration_us(t, scale).is_some() => {
                    duration_us(t, scale).unwrap_or_default()
                }
                // `latency = 20` says no unit: not guessed.
                toml::Value::Integer(_) | toml::Value::Float(_) => {
                    notes.push(SpecNote::at(
                        span_of(v),
                        "`latency` without a unit not used: write `latency_us` (or a text with its unit, \"20 us\")",
                    ));
                    f64::NAN
                }
                _ => {
                    return Err(SpecError::at(
                        span_of(v),
                        format!("wrong type for `{key}`, expected a number (or a duration with its unit, \"20 us\")"),
                    ))
                }
            };
            if key != "latency_us" && x.is_finite() && x > 0.0 {
                notes.push(SpecNote::at(
                    span_of(v),
                    format!("`{key}` read as `latency_us = {x}`"),
                ));
            }
            if x.is_nan() && key == "latency" {
                None
            } else if !(x.is_finite() && x > 0.0) {
                return Err(SpecError::at(
                    span_of(v),
                    format!("invalid `latency_us` {x}, expected a positive number of microseconds"),
                ));
            } else {
                Some(x)
            }
        }
    };

    // Expertise only informs the strategy: a skill kplan does not know (a framework, a
    // language) is a note, not an error.
    let mut expertise = Vec::new();
    for e in &raw.team.expertise {
        let n = norm_name(e.get_ref());
        let found = Expertise::ALL
            .into_iter()
            .find(|x| x.as_str() == n)
            .or_else(|| Expertise::ALIASES.iter().find(|a| a.0 == n).map(|a| a.1));
        let Some(x) = found else {
            let names: Vec<&str> = Expertise::ALL
                .iter()
                .map(|x| x.as_str())
                .chain(Expertise::ALIASES.iter().map(|a| a.0))
                .collect();
            let hint = closest_name(&n, names.iter().copied())
                .map(|c| format!(" (if `{c}` was meant, write `{c}`)"))
                .unwrap_or_default();
            late_notes.borrow_mut().push(SpecNote::at(
                span_of(e),
                format!(
                    "expertise `{}` not used by kplan{hint}: the strategy weighs {}",
                    e.get_ref(),
                    list_expected(Expertise::ALL.map(Expertise::as_str))
                ),
            ));
            continue;
        };
        if !expertise.contains(&x) {
            expertise.push(x);
        }
    }

    let mut named_libraries = Vec::new();
    let mut generic_library_level = raw.abstraction.is_none();
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
            let mut unknown_allowed: Vec<SpecNote> = Vec::new();
            for s in a.allowed.get_ref() {
                let n = norm_name(s.get_ref());
                // A library's own name (`cudnn`, `miopen`, `hipblas`, `nccl`, or a library the
                // op knowledge base names): the vendor-library level, admitting that library.
                if Abstraction::ALL.iter().all(|x| x.as_str() != n)
                    && Abstraction::ALIASES.iter().all(|a| a.0 != n)
                {
                    if let Some(same) = library_named(&n, kb) {
                        for l in std::iter::once(n.as_str()).chain(same.iter().map(String::as_str))
                        {
                            if !named_libraries.iter().any(|x| x == l) {
                                named_libraries.push(l.to_string());
                            }
                        }
                        late_notes.borrow_mut().push(SpecNote::at(
                            span_of(s),
                            format!(
                                "abstraction `{}` read as the vendor-library level, admitting that library",
                                s.get_ref()
                            ),
                        ));
                        if !v.contains(&Abstraction::VendorBlas) {
                            v.push(Abstraction::VendorBlas);
                        }
                        continue;
                    }
                }
                let x = Abstraction::ALL
                    .into_iter()
                    .find(|x| x.as_str() == n)
                    .or_else(|| {
                        Abstraction::ALIASES.iter().find(|a| a.0 == n).map(|a| {
                            if matches!(n.as_str(), "cub" | "hipcub" | "rocprim" | "rocwmma") {
                                named_libraries.push(n.clone());
                            } else if a.1 == Abstraction::VendorBlas {
                                generic_library_level = true;
                            }
                            a.1
                        })
                    })
                    .map(Ok)
                    .or_else(|| {
                        // a portability layer or language kplan has no level for is a name of
                        // its own, never a misspelling (`openmp` is not `opencl`)
                        if CXX_LAYERS.contains(&n.as_str()) || OTHER_LAYERS.contains(&n.as_str()) {
                            return None;
                        }
                        let names: Vec<&str> = Abstraction::ALL
                            .iter()
                            .map(|x| x.as_str())
                            .chain(Abstraction::ALIASES.iter().map(|a| a.0))
                            .collect();
                        let typo = crate::keys::typo_of(&n, names.iter().copied())?;
                        Some(Err(SpecError::at(
                            span_of(s),
                            format!(
                                "unknown abstraction `{}`, expected one of {}",
                                s.get_ref(),
                                list_expected(names.iter().copied())
                            ),
                        )
                        .suggest(Some(typo))))
                    })
                    .transpose()?;
                // A tool or library kplan has no level for (a framework of its own, a
                // performance-portability layer): a note; the plan weighs the levels it knows.
                let Some(x) = x else {
                    unknown_allowed.push(SpecNote::at(
                        span_of(s),
                        format!(
                            "abstraction `{}` not used by kplan: it has no level for it; the plan weighs {}",
                            s.get_ref(),
                            list_expected(Abstraction::ALL.map(Abstraction::as_str))
                        ),
                    ));
                    continue;
                };
                if x == Abstraction::VendorBlas && n == "vendor-blas" {
                    generic_library_level = true;
                }
                if !v.contains(&x) {
                    v.push(x);
                }
            }
            // only C++ performance-portability layers (Kokkos, RAJA, OpenMP offload, ...):
            // single-source C++ over per-vendor backends, planned at kplan's nearest levels
            let layers: Vec<String> = a
                .allowed
                .get_ref()
                .iter()
                .map(|s| norm_name(s.get_ref()))
                .filter(|n| CXX_LAYERS.contains(&n.as_str()))
                .collect();
            if v.is_empty() && !layers.is_empty() {
                unknown_allowed.push(SpecNote::at(
                    span_of(&a.allowed),
                    format!(
                        "`allowed` names only C++ portability layers kplan has no level for ({}): planned at the nearest levels, single-source C++ (`hip-single-source`, the layer's device code) and per-backend code where the layer needs it; no Triton and no framework",
                        layers.join(", ")
                    ),
                ));
                v = vec![Abstraction::HipSingleSource, Abstraction::PerBackend];
            }
            if v.is_empty() {
                generic_library_level = true;
                unknown_allowed.push(SpecNote::at(
                    span_of(&a.allowed),
                    "no abstraction level kplan knows in `allowed`: planned with the default levels (framework, vendor-library, triton, hip-single-source, cutlass, per-backend)",
                ));
                v = Abstraction::DEFAULT_ALLOWED.to_vec();
            }
            late_notes.borrow_mut().extend(unknown_allowed);
            v
        }
    };

    let intent = intent_text(text);
    Ok(Spec {
        intent,
        name,
        description: k.description,
        op,
        direction,
        dtypes: dtypes
            .get_ref()
            .iter()
            .map(|d| d.get_ref().clone())
            .collect(),
        storage,
        compute,
        output,
        fp8_encoding: encoding,
        block_scale,
        storage_quant,
        weight_quant,
        extra_inputs,
        complex: complex_first,
        complex_output: complex_last,
        custom_op,
        custom_knowledge,
        work_unknown,
        problem,
        dims,
        knobs,
        modifiers,
        features,
        targets,
        stretch,
        performance,
        framework_expressible: raw.requirements.framework_expressible,
        latency_us,
        expertise,
        allowed,
        library_names_only: !generic_library_level && !named_libraries.is_empty(),
        named_libraries,
        notes: {
            notes.extend(late_notes.into_inner());
            notes.sort_by_key(|n| n.span.start);
            notes
        },
        ci_runners: raw.ci.runners,
    })
}

/// The direction an op name states with its words, where it states one: `backward-data`,
/// `dgrad`, `wgrad`, `backward-weight`, `bwd`, `backward`, `fwd-bwd`.
fn direction_in_name(op_name: &str) -> Option<&'static str> {
    let words: Vec<&str> = op_name
        .split(['-', '_'])
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &[&str]| words.iter().any(|x| w.contains(x));
    // `weight-gradient`, `input-grad`: one gradient named by its operand (a lone `grad` or
    // `gradient` names no direction: `grad-norm` is a norm of gradients).
    for pair in words.windows(2) {
        if matches!(pair[1], "grad" | "gradient" | "gradients") {
            match pair[0] {
                "weight" | "weights" | "filter" | "kernel" => return Some("backward-weight"),
                "data" | "input" | "activation" | "activations" => return Some("backward-data"),
                _ => {}
            }
        }
    }
    let bwd = has(&["backward", "bwd", "dgrad", "wgrad"]);
    let fwd = has(&["forward", "fwd"]);
    if !bwd {
        return None;
    }
    if fwd {
        return Some("forward-backward");
    }
    match gradient_of(op_name) {
        Some("data") => Some("backward-data"),
        Some("weight") => Some("backward-weight"),
        _ => Some("backward"),
    }
}

/// The gradient a direction names when it names one (`backward-data`, `dgrad`,
/// `backward-weight`, `wgrad`, `backward-filter`, `bwd-input`, ...): `data` or `weight`.
fn gradient_of(direction: &str) -> Option<&'static str> {
    let d = direction.replace('_', "-");
    let words: Vec<&str> = d.split('-').filter(|w| !w.is_empty()).collect();
    let data = ["data", "input", "dgrad", "dx", "activation", "activations"];
    let weight = ["weight", "weights", "filter", "wgrad", "dw", "kernel"];
    let bwd = words.iter().any(|w| {
        matches!(
            *w,
            "backward" | "bwd" | "grad" | "gradient" | "dgrad" | "wgrad"
        )
    });
    if !bwd {
        return None;
    }
    if words.iter().any(|w| data.contains(w)) {
        Some("data")
    } else if words.iter().any(|w| weight.contains(w)) {
        Some("weight")
    } else {
        None
    }
}

/// Whether `n` (normalised) names a library: a known vendor library, or the first word of a
/// library the op knowledge base lists (`flashinfer`, `aiter`, `fbgemm`). Returns the other
/// names of the same library family.
fn library_named(n: &str, kb: &Kb) -> Option<&'static [String]> {
    if let Some(same) = names::library_family(n) {
        return Some(same);
    }
    let compact = n.replace('-', "");
    let in_kb = kb.ops.iter().flat_map(|o| o.library.iter()).any(|l| {
        l.name.split(" / ").any(|part| {
            part.split_whitespace()
                .next()
                .map(|w| {
                    w.trim_matches(|c: char| !c.is_ascii_alphanumeric())
                        .to_ascii_lowercase()
                })
                .is_some_and(|w| {
                    w.len() >= 3 && w != "none" && (w == n || w.replace('-', "") == compact)
                })
        })
    });
    in_kb.then_some(&[])
}

/// Whether architecture name `a` is a spelling of `b`: the same after case and separators, or
/// one character typed twice or left out. A character replaced is another architecture
/// (`gfx1151` is not `gfx1101`, `gfx906` not `gfx90a`), and a trailing letter is an
/// architecture-specific variant (`sm_100a` is not `sm_100`).
fn arch_spelling(a: &str, b: &str) -> bool {
    let n = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
    let (a, b) = (n(a), n(b));
    let (long, short) = if a.len() >= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    match long.len() - short.len() {
        0 => long == short,
        1 => {
            let trailing_letter = long.starts_with(short.as_str())
                && long.chars().last().is_some_and(|c| c.is_ascii_alphabetic());
            !trailing_letter
                && long.char_indices().any(|(i, _)| {
                    let mut x = long.clone();
                    x.remove(i);
                    x == *short
                })
        }
        _ => false,
    }
}

/// The known target a name is a spelling of; for architecture names, see [`arch_spelling`]
/// (`gfx9420` is a misspelt `gfx942`; `gfx1151` is no misspelt `gfx1101`).
fn target_suggestion(name: &str, kb: &Kb) -> Option<String> {
    if looks_like_arch(name) {
        return kb
            .target_names()
            .into_iter()
            .find(|c| looks_like_arch(c) && arch_spelling(name, c))
            .map(str::to_string);
    }
    closest_name(name, kb.target_names())
}

/// Whether a target name is written as an architecture (`sm_90a`, `compute_80`, `gfx942`,
/// `cpu-avx2`) rather than a product: an unknown architecture is always an error, because the
/// code kplan plans for it would be wrong if the name were misread.
fn looks_like_arch(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    let digits_after = |p: &str| {
        n.strip_prefix(p).is_some_and(|r| {
            r.trim_start_matches('_')
                .starts_with(|c: char| c.is_ascii_digit())
        })
    };
    digits_after("sm") || digits_after("compute") || digits_after("gfx") || n.starts_with("cpu")
}

/// Whether an architecture-like name has the form of a real one: `sm_` / `compute_` digits
/// with an optional `a`/`f` suffix, `gfx` digits with an optional hex-letter stepping
/// (`gfx90a`), or a CPU name. `sm_8O` (a letter O) is a typo, not an architecture kplan lacks
/// facts for.
fn plausible_arch(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    let tail = |p: &str| n.strip_prefix(p).map(|r| r.trim_start_matches('_'));
    let digits_then = |r: &str, suffix: &dyn Fn(&str) -> bool| {
        let d = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        d > 0 && suffix(&r[d..])
    };
    if n.starts_with("cpu") {
        return true;
    }
    if let Some(r) = tail("gfx") {
        // a target-id feature (`gfx90a:xnack+`) and LLVM's generic targets (`gfx11-generic`,
        // `gfx10-3-generic`) are forms of real names too
        let r = r.split(':').next().unwrap_or(r);
        if r.ends_with("-generic") {
            return r.starts_with(|c: char| c.is_ascii_digit());
        }
        return digits_then(r, &|s: &str| {
            s.is_empty() || (s.len() == 1 && s.chars().all(|c| c.is_ascii_hexdigit()))
        });
    }
    for p in ["sm", "compute"] {
        if let Some(r) = tail(p) {
            return digits_then(r, &|s: &str| matches!(s, "" | "a" | "f"));
        }
    }
    false
}

/// The targets of `[backends]` (`targets`, then `devices`), each resolved against the KB. A
/// device name the KB does not know becomes a note when other entries give the targets (the plan
/// covers those); it is an error when nothing else does, and an unknown architecture name is
/// always an error.
fn targets_of(
    backends: &RawBackends,
    kb: &Kb,
    notes: &mut Vec<SpecNote>,
    stretch_out: &mut Vec<String>,
) -> Result<Vec<String>, SpecError> {
    let lists: Vec<&Spanned<Vec<Spanned<String>>>> =
        [backends.targets.as_ref(), backends.devices.as_ref()]
            .into_iter()
            .flatten()
            .collect();
    // no `targets` but stretch targets the KB knows: the plan covers those (a note says so)
    let stretch_known: Vec<&Spanned<String>> = backends
        .stretch
        .as_ref()
        .map(|l| {
            l.get_ref()
                .iter()
                .filter(|t| kb.resolve(t.get_ref()).is_ok())
                .collect()
        })
        .unwrap_or_default();
    if lists.iter().all(|l| l.get_ref().is_empty()) && !stretch_known.is_empty() {
        if let Some(l) = backends.stretch.as_ref() {
            notes.push(SpecNote::at(
                span_of(l),
                "no `targets` in [backends]: the stretch targets the knowledge base knows are planned as the targets",
            ));
        }
    } else if lists.iter().all(|l| l.get_ref().is_empty()) {
        let span = lists.first().map(|l| span_of(*l)).unwrap_or(0..0);
        return Err(SpecError::at(
            span,
            "no targets in [backends], expected `targets = [...]` with at least one architecture or device (`kplan targets` lists them)",
        ));
    }
    let unknown = |t: &Spanned<String>| {
        SpecError::at(
            span_of(t),
            format!(
                "unknown target `{}`, expected an architecture, device or alias from the knowledge base (`kplan targets` lists them)",
                t.get_ref()
            ),
        )
        .suggest(target_suggestion(t.get_ref(), kb))
    };
    let mut targets = Vec::new();
    let mut unknown_devices: Vec<&Spanned<String>> = Vec::new();
    let stretch = backends
        .stretch
        .as_ref()
        .map(|l| l.get_ref().as_slice())
        .unwrap_or(&[]);
    let mut stretch_planned: Vec<String> = Vec::new();
    for t in lists.iter().flat_map(|l| l.get_ref().iter()).chain(stretch) {
        let is_stretch = stretch.iter().any(|s| std::ptr::eq(s, t));
        if is_stretch {
            // A stretch target is never a reason to reject the spec: one the knowledge base has
            // facts for is planned, any other is said in a note.
            if kb.resolve(t.get_ref()).is_ok() && !targets.contains(t.get_ref()) {
                targets.push(t.get_ref().clone());
                stretch_planned.push(t.get_ref().clone());
            } else if kb.resolve(t.get_ref()).is_err() {
                notes.push(SpecNote::at(
                    span_of(t),
                    format!(
                        "stretch target `{}` not planned: the knowledge base has no sourced facts for it{}; the plan covers the targets it knows (`kplan targets` lists them; `--kb` adds one)",
                        t.get_ref(),
                        target_suggestion(t.get_ref(), kb)
                            .map(|c| format!(" (if `{c}` was meant, write `{c}`)"))
                            .unwrap_or_default()
                    ),
                ));
            }
            continue;
        }
        if kb.resolve(t.get_ref()).is_err() {
            // An architecture name that spells a known one (same number, another form) would
            // plan the wrong code if guessed: an error. Another architecture is one the
            // knowledge base has no facts for: like an unknown device, a note when other
            // targets give the plan.
            if t.get_ref().trim().is_empty()
                || (looks_like_arch(t.get_ref()) && target_suggestion(t.get_ref(), kb).is_some())
                || (looks_like_arch(t.get_ref()) && !plausible_arch(t.get_ref()))
            {
                return Err(unknown(t));
            }
            unknown_devices.push(t);
            continue;
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
    if targets.is_empty() {
        if let Some(t) = unknown_devices.first() {
            return Err(unknown(t));
        }
    }
    stretch_out.extend(stretch_planned.iter().cloned());
    if !stretch_planned.is_empty() {
        if let Some(l) = backends.stretch.as_ref() {
            notes.push(SpecNote::at(
                span_of(l),
                format!(
                    "stretch target{} {} planned like the others (the knowledge base has facts for {}): the plan's risks and CI legs cover {}, but a library that covers the required targets is not given up for {}",
                    if stretch_planned.len() > 1 { "s" } else { "" },
                    stretch_planned.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", "),
                    if stretch_planned.len() > 1 { "them" } else { "it" },
                    if stretch_planned.len() > 1 { "them" } else { "it" },
                    if stretch_planned.len() > 1 { "them" } else { "it" },
                ),
            ));
        }
    }
    for t in unknown_devices {
        let hint = target_suggestion(t.get_ref(), kb)
            .map(|c| format!(" (if `{c}` was meant, write `{c}`)"))
            .unwrap_or_default();
        if looks_like_arch(t.get_ref()) {
            notes.push(SpecNote::at(
                span_of(t),
                format!(
                    "architecture `{}` not planned: the knowledge base has no sourced facts for it (wave size, LDS, registers, matrix units), and kplan does not borrow another architecture's; the plan covers {}; add it to the knowledge base (`--kb`) to plan it",
                    t.get_ref(),
                    targets
                        .iter()
                        .map(|x| format!("`{x}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            continue;
        }
        notes.push(SpecNote::at(
            span_of(t),
            format!(
                "device `{}` not used by kplan: the knowledge base has no such device{hint}; the plan covers {} (`kplan targets` lists the known devices and architectures; an architecture name such as `sm_90` or `gfx942` plans a device kplan does not list)",
                t.get_ref(),
                targets
                    .iter()
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }

    Ok(targets)
}

#[derive(Deserialize)]
struct RawTargetsOnly {
    #[serde(default)]
    kernel: Option<toml::Value>,
    backends: RawBackends,
}

/// The target names of a spec for `kplan header --spec` and `kplan build --spec`: a spec with a
/// `[kernel]` table is validated whole, exactly as `kplan plan` does (so every spec `plan`
/// accepts is accepted, and every one it rejects is rejected the same way); a file with only
/// `[backends]` has just its targets checked, by the same rules.
pub fn parse_spec_targets(text: &str, kb: &Kb) -> Result<Vec<String>, SpecError> {
    let raw: RawTargetsOnly = toml::from_str(text).map_err(|e| SpecError {
        span: e.span(),
        message: e.message().trim_end().replace('\n', " "),
        suggestion: None,
    })?;
    if raw.kernel.is_some() {
        return parse_spec(text, kb).map(|s| s.targets);
    }
    targets_of(&raw.backends, kb, &mut Vec::new(), &mut Vec::new())
}

/// The KB feature the generic `atomics` means for this kernel: integer atomics when the
/// output is an integer (counts, indices), else the atomic add of the accumulate dtype.
pub fn atomic_feature(compute: Dtype, output: Dtype) -> &'static str {
    if output.is_integer() || compute.is_integer() {
        return "int-atomics";
    }
    match compute {
        Dtype::Fp64 => "fp64-atomic-add",
        Dtype::Fp16 => "fp16-atomic-add",
        Dtype::Bf16 => "bf16-atomic-add",
        _ => "fp32-atomic-add",
    }
}

/// Largest size one problem dimension may have (keeps every derived product in range).
const MAX_DIM: i64 = 1 << 40;

type RawProblem = Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

/// What [`parse_problem`] returns: the problem, every size key, the knobs and, where the
/// work model cannot be computed, why.
type ParsedProblem = (Problem, BTreeMap<String, u64>, OpKnobs, Option<String>);

/// How the plan names the op in messages: the spec's name for an op kplan does not model.
fn op_label(op: Op, custom: Option<&str>) -> String {
    match custom {
        Some(c) => format!("`{c}` (planned as `custom`)"),
        None => format!("`{}`", op.as_str()),
    }
}

/// The documented problem key of the op that `key` (a name users guess, any case, dashes or
/// underscores) stands for, when the op reads it.
/// A duration in a text (`"20"`, `"20 us"`, `"5ms"`, `"0.5 s"`) in microseconds; a bare number
/// is in the unit `scale` converts from (the key's: 1e3 for `latency_ms`).
fn duration_us(text: &str, scale: f64) -> Option<f64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let x: f64 = t[..split].replace('_', "").parse().ok()?;
    let unit = match t[split..].trim() {
        "" => scale,
        "ns" | "nsec" => 1e-3,
        "us" | "\u{b5}s" | "usec" | "microseconds" | "micros" => 1.0,
        "ms" | "msec" | "milliseconds" | "millis" => 1e3,
        "s" | "sec" | "seconds" => 1e6,
        _ => return None,
    };
    Some(x * unit)
}

/// A performance requirement written in words (`"good enough that VAE decode is not the
/// bottleneck"`, `"bandwidth-bound is fine"`, `"as fast as possible"`): words that accept less
/// than the best (`fine`, `enough`, `acceptable`, `not needed`) read as `reasonable`, words
/// that ask for the best (`peak`, `roofline`, `fastest`) as `near-peak`; any other phrase of
/// several words as `reasonable`, the default. One unknown word is left to the caller (a typo
/// of `near-peak` or `reasonable` is an error).
fn performance_words(text: &str) -> Option<(PerfReq, &'static str)> {
    let t = format!(
        " {} ",
        text.to_ascii_lowercase().replace(['-', '_', ',', '.'], " ")
    );
    let has = |w: &str| t.contains(&format!(" {w} "));
    let lenient = [
        "fine",
        "enough",
        "acceptable",
        "ok",
        "okay",
        "reasonable",
        "decent",
        "adequate",
        "moderate",
        "secondary",
        "bottleneck",
        "not needed",
        "not required",
        "no need",
        "not critical",
        "doesn't matter",
        "does not matter",
    ];
    let strict = [
        "peak",
        "roofline",
        "fastest",
        "fast as possible",
        "maximum",
        "max",
        "sota",
        "state of the art",
        "best possible",
        "hand tuned",
        "speed of light",
        "high",
        "critical",
        "top",
        "best",
    ];
    if lenient.iter().any(|w| has(w)) {
        return Some((PerfReq::Reasonable, "its words accept less than the best"));
    }
    if strict.iter().any(|w| has(w)) {
        return Some((
            PerfReq::NearPeak,
            "its words ask for the best the hardware gives",
        ));
    }
    (text.split_whitespace().count() > 1).then_some((
        PerfReq::Reasonable,
        "a phrase kplan does not grade: the default",
    ))
}

/// A problem value written another way than one positive integer, and how it is read.
enum Coerced {
    /// The value to read in its place, and the note saying why.
    Value(toml::Value, String),
    /// Per-dimension sizes of a convolution window (`kernel = [3, 3, 3]`: depth, height, width).
    PerDim(Vec<u64>),
    /// A word that changes nothing the model reads (`padding = "same"`): noted, not used.
    Skip(String),
    /// `padding = "causal"`: the convolution is causal.
    Causal(String),
}

/// How a problem value that is not one integer is read, where the intent is clear:
/// - a list of integers: per-dimension window sizes for a convolution's `kernel`; equal
///   entries are that size; a two-entry range `[lo, hi]` is planned at `hi` (the most traffic
///   and the largest grid), and the note says that the low end may be latency-bound; any
///   other list (a set of shapes) is planned at its largest entry;
/// - an integer in quotes (`"4096"`), or with thousands separators (`"16_384"`, `"16,384"`);
/// - a padding word (`same`: the model's assumption; `valid`: 0; `causal`: a causal conv).
///
/// Anything else (`rows = "dynamic"`) is left to the caller's type error.
fn coerce_size(op: Op, canon: &str, v: &toml::Value) -> Option<Coerced> {
    let int = |x: &toml::Value| -> Option<u64> {
        match x {
            toml::Value::Integer(i) if *i >= 0 && *i <= MAX_DIM => Some(*i as u64),
            toml::Value::Float(f) if f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_DIM as f64 => {
                Some(*f as u64)
            }
            _ => None,
        }
    };
    match v {
        toml::Value::Array(items) if !items.is_empty() => {
            let xs: Vec<u64> = items.iter().map(int).collect::<Option<Vec<_>>>()?;
            if canon == "kernel" && op == Op::Conv && (2..=3).contains(&xs.len()) {
                return Some(Coerced::PerDim(xs));
            }
            let hi = *xs.iter().max()?;
            let lo = *xs.iter().min()?;
            let why = if lo == hi {
                format!("= {v} read as {hi} (every entry is the same)")
            } else if xs.len() == 2 && xs[0] <= xs[1] {
                format!(
                    "= {v} read as a range: planned at the upper end {hi} (the most traffic and the largest grid); at the lower end {lo} the kernel may be latency-bound, so measure both ends"
                )
            } else {
                format!(
                    "= {v} read as a set of sizes: planned at the largest, {hi}; the smaller ones change the grid and may be latency-bound"
                )
            };
            (hi >= 1 || canon == "padding")
                .then_some(Coerced::Value(toml::Value::Integer(hi as i64), why))
        }
        toml::Value::String(text) => {
            let t = text.trim().to_ascii_lowercase();
            let digits: String = t.chars().filter(|c| !matches!(c, '_' | ',')).collect();
            if let Ok(i) = digits.parse::<i64>() {
                return Some(Coerced::Value(
                    toml::Value::Integer(i),
                    format!("= \"{text}\" read as the number {i}"),
                ));
            }
            if canon != "padding" {
                return None;
            }
            match t.as_str() {
                "same" | "same-padding" | "same_padding" => Some(Coerced::Skip(
                    "= \"same\": the model's assumption (output size = input size / stride)".into(),
                )),
                "valid" | "none" | "no" => Some(Coerced::Value(
                    toml::Value::Integer(0),
                    format!("= \"{text}\" read as 0"),
                )),
                "causal" => Some(Coerced::Causal(
                    "= \"causal\" read as a causal convolution (left padding only, no future taps); the model counts same-size output".into(),
                )),
                _ => None,
            }
        }
        _ => None,
    }
}

fn problem_key_alias(key: &str, allowed: &[&'static str]) -> Option<&'static str> {
    let k = key.trim().to_ascii_lowercase().replace('-', "_");
    if let Some(&c) = allowed.iter().find(|a| **a == k && k != key) {
        return Some(c);
    }
    // a known size with a qualifier (`head_dim_qk`, `seq_kv_max`, `tokens_total`): that size
    if let Some(&c) = allowed
        .iter()
        .filter(|a| k.len() > a.len() + 1 && k.starts_with(*a) && k.as_bytes()[a.len()] == b'_')
        .max_by_key(|a| a.len())
    {
        return Some(c);
    }
    names::problem_key_candidates(&k)?
        .iter()
        .find_map(|c| allowed.iter().find(|a| **a == c.as_str()))
        .copied()
}

#[allow(clippy::too_many_arguments)]
fn parse_problem(
    op: Op,
    p: Option<&RawProblem>,
    op_span: std::ops::Range<usize>,
    m: &Modifiers,
    notes: &mut Vec<SpecNote>,
    custom: Option<&str>,
    elem_bytes: f64,
) -> Result<ParsedProblem, SpecError> {
    let (allowed, required_hint) = op.problem_keys();
    let knobs0 = OpKnobs {
        inputs: 1,
        outputs: 1,
        flops_per_element: None,
    };
    let Some(p) = p else {
        let why = format!(
            "no `problem` for op {}: the FLOPs, bytes and roofline are unknown (section 8); give `problem = {{ ... }}` with {required_hint} for numbers",
            op_label(op, custom)
        );
        notes.push(SpecNote::at(op_span, why.clone()));
        return Ok((
            Problem::Custom {
                flops: None,
                bytes: None,
            },
            BTreeMap::new(),
            knobs0,
            Some(why),
        ));
    };
    let mut ints: BTreeMap<&str, u64> = BTreeMap::new();
    let mut floats: BTreeMap<&str, f64> = BTreeMap::new();
    let mut causal = m.causal;
    let mut unused: Vec<&str> = Vec::new();
    let mut loose: BTreeMap<&str, u64> = BTreeMap::new();
    let mut loose_unused: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
    for (key, val) in p.get_ref() {
        let kname = key.get_ref().as_str();
        let given = |c: &str| p.get_ref().keys().any(|k| k.get_ref() == c);
        let aliased = (!allowed.contains(&kname))
            .then(|| problem_key_alias(kname, allowed))
            .flatten()
            .filter(|c| !given(c));
        if let Some(c) = aliased {
            notes.push(SpecNote::at(
                key.span(),
                format!(
                    "problem key `{kname}` read as `{c}` (op `{}` is sized by {}): write `{c}`",
                    op.as_str(),
                    list_expected(allowed.iter().copied())
                ),
            ));
        }
        let Some(&canon) = aliased
            .as_ref()
            .or_else(|| allowed.iter().find(|a| **a == kname))
        else {
            // A key of another op is a deliberate word, not a typo of this op's keys; a close
            // spelling of one of this op's keys is a typo (its value would size the problem).
            let of_other: Vec<&str> = Op::ALL
                .iter()
                .filter(|o| **o != op && o.problem_keys().0.contains(&kname))
                .map(|o| o.as_str())
                .collect();
            let dashed = kname.replace('-', "_");
            let typo = allowed
                .iter()
                .find(|a| **a == dashed)
                .map(|a| a.to_string())
                .or_else(|| crate::keys::typo_of(kname, allowed.iter().copied()));
            if of_other.is_empty() {
                if let Some(t) = typo {
                    return Err(SpecError::at(
                        key.span(),
                        format!(
                            "unknown problem key `{kname}` for op `{}`, expected one of {}",
                            op.as_str(),
                            list_expected(allowed.iter().copied())
                        ),
                    )
                    .suggest(Some(t)));
                }
            }
            let whose = if of_other.is_empty() {
                String::new()
            } else {
                format!(" (a key of op {})", list_expected(of_other.iter().copied()))
            };
            if op == Op::Custom {
                // A custom op's own sizes: kept (they may size the bytes below), not modelled.
                if let Some(i) = val
                    .get_ref()
                    .as_integer()
                    .filter(|i| *i >= 1 && *i <= MAX_DIM)
                {
                    loose.insert(kname, i as u64);
                }
                if custom.is_some() {
                    loose_unused.push((kname, key.span()));
                    continue;
                }
            }
            notes.push(SpecNote::at(
                key.span(),
                format!(
                    "problem key `{kname}` not used by kplan: op `{}` is sized by {}{whose}; the plan does not depend on it",
                    op.as_str(),
                    list_expected(allowed.iter().copied())
                ),
            ));
            unused.push(kname);
            continue;
        };
        // Sizes as users write them: a list (a range `[1, 16384]`, per-dimension sizes
        // `[3, 3, 3]`, a set of shapes), a number in quotes, a padding word. Read with a
        // located note saying what was assumed; any other word stays an error below.
        let coerced = coerce_size(op, canon, val.get_ref());
        let val_ref: &toml::Value = match &coerced {
            Some(Coerced::PerDim(dims)) => {
                let names: &[&'static str] = match dims.len() {
                    3 => &["kernel_d", "kernel_h", "kernel_w"],
                    _ => &["kernel_h", "kernel_w"],
                };
                for (n, d) in names.iter().zip(dims) {
                    ints.insert(n, *d);
                }
                notes.push(SpecNote::at(
                    val.span(),
                    format!(
                        "`{canon}` = {} read as one size per dimension ({})",
                        val.get_ref(),
                        names
                            .iter()
                            .zip(dims)
                            .map(|(n, d)| format!("{n} = {d}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
                continue;
            }
            Some(Coerced::Value(v, why)) => {
                notes.push(SpecNote::at(val.span(), format!("`{canon}` {why}")));
                v
            }
            Some(Coerced::Skip(why)) => {
                notes.push(SpecNote::at(val.span(), format!("`{canon}` {why}")));
                continue;
            }
            Some(Coerced::Causal(why)) => {
                causal = true;
                notes.push(SpecNote::at(val.span(), format!("`{canon}` {why}")));
                continue;
            }
            None => val.get_ref(),
        };
        match (canon, val_ref) {
            ("causal", toml::Value::Boolean(b)) => causal = causal || *b,
            ("causal", _) => {
                return Err(SpecError::at(
                    val.span(),
                    "wrong type for `causal`, expected a boolean",
                ))
            }
            ("flops" | "bytes" | "flops_per_element" | "top_p" | "min_p" | "temperature", v) => {
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
            // Padding may be zero; every other size is positive.
            ("padding" | "begin_bit", toml::Value::Integer(i)) if *i >= 0 && *i <= MAX_DIM => {
                ints.insert(canon, *i as u64);
            }
            (_, toml::Value::Integer(i)) if *i >= 1 && *i <= MAX_DIM => {
                ints.insert(canon, *i as u64);
            }
            (_, toml::Value::Float(f)) if f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_DIM as f64 => {
                ints.insert(canon, *f as u64);
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
        let unused_hint = if unused.is_empty() {
            String::new()
        } else {
            format!(
                " (kplan does not read {} for this op)",
                list_expected(unused.iter().copied())
            )
        };
        SpecError::at(
            p.span(),
            format!(
                "incomplete `problem` for op `{}`: missing {what}, expected {required_hint}{unused_hint}",
                op.as_str()
            ),
        )
    };
    let need = |k: &str| {
        ints.get(k)
            .copied()
            .ok_or_else(|| missing(&format!("`{k}`")))
    };
    let mut knobs = OpKnobs {
        inputs: 1,
        outputs: 1,
        flops_per_element: floats.get("flops_per_element").copied(),
    };
    let flat_or_rows = |ints: &BTreeMap<&str, u64>| -> Result<Problem, SpecError> {
        match (ints.get("n"), ints.get("rows"), ints.get("cols")) {
            (Some(&n), None, None) => Ok(Problem::Flat { n }),
            // `rows` and `cols` say more than `n` (often their product, or a total): read them
            (_, Some(&rows), Some(&cols)) => Ok(Problem::Rows { rows, cols }),
            (None, Some(_), None) => Err(missing("`cols`")),
            (None, None, Some(_)) => Err(missing("`rows`")),
            (None, None, None) => Err(missing("the size")),
            // `n` beside `rows` alone: the row length, or the total when `rows` divides it
            (Some(&n), Some(&rows), None) if rows > 0 => Ok(Problem::Rows {
                rows,
                cols: if n > rows && n % rows == 0 {
                    n / rows
                } else {
                    n
                },
            }),
            (Some(_), _, _) => Err(SpecError::at(
                p.span(),
                "both `n` and `rows`/`cols` given, expected one of them",
            )),
        }
    };
    let mut extra: BTreeMap<&str, u64> = BTreeMap::new();
    let mul = |a: u64, b: u64| a.saturating_mul(b);
    let mut custom_assumption: Option<String> = None;
    let built = (|| -> Result<Problem, SpecError> {
        Ok(match op {
            Op::Elementwise => {
                knobs.inputs = ints.get("inputs").copied().unwrap_or(1);
                knobs.outputs = ints.get("outputs").copied().unwrap_or(1);
                match flat_or_rows(&ints)? {
                    Problem::Rows { rows, cols } => Problem::Flat { n: mul(rows, cols) },
                    x => x,
                }
            }
            // Segmented (CSR) reductions and scans: `segments` rows of `nnz / segments` elements
            // on average, each element `cols` features wide.
            Op::Reduction | Op::Scan if ints.contains_key("segments") => {
                let segments = ints["segments"];
                let len = match (ints.get("segment_len"), ints.get("nnz")) {
                    (Some(&l), _) => l,
                    (None, Some(&nnz)) => nnz.div_ceil(segments).max(1),
                    (None, None) => return Err(missing("`nnz` or `segment_len`")),
                };
                Problem::Rows {
                    rows: mul(segments, ints.get("cols").copied().unwrap_or(1)),
                    cols: len,
                }
            }
            Op::Reduction | Op::Scan | Op::Quantize | Op::Dequantize => flat_or_rows(&ints)?,
            Op::Topk => {
                need("k")?;
                let pr = flat_or_rows(&ints)?;
                let len = match pr {
                    Problem::Flat { n } => n,
                    Problem::Rows { cols, .. } => cols,
                    _ => 0,
                };
                if ints["k"] > len {
                    return Err(SpecError::at(
                        p.span(),
                        format!(
                            "invalid `k` {}, expected at most the {len} elements it selects from",
                            ints["k"]
                        ),
                    ));
                }
                pr
            }
            Op::Softmax | Op::Norm => Problem::Rows {
                rows: need("rows")?,
                cols: need("cols")?,
            },
            Op::Gemm => Problem::Gemm {
                batch: ints.get("batch").copied().unwrap_or(1),
                m: need("m")?,
                n: need("n")?,
                k: need("k")?,
            },
            Op::GroupedGemm => {
                let groups = need("groups")?;
                let total_m = match (ints.get("total_m"), ints.get("m"), ints.get("tokens")) {
                    (Some(&t), _, _) => t,
                    (None, Some(&m), _) => mul(m, groups),
                    // MoE expert GEMMs: every token goes to `top_k` experts.
                    (None, None, Some(&t)) => mul(t, ints.get("top_k").copied().unwrap_or(1)),
                    (None, None, None) => {
                        return Err(missing(
                            "`m` (per group), `total_m` or `tokens` (with `top_k`)",
                        ))
                    }
                };
                extra.insert("total_m", total_m);
                Problem::Gemm {
                    batch: 1,
                    m: total_m,
                    n: need("n")?,
                    k: need("k")?,
                }
            }
            Op::Attention => {
                let heads = need("heads")?;
                let seq = ints.get("seq").copied();
                let seq_q = ints
                    .get("seq_q")
                    .copied()
                    .or(seq)
                    .ok_or_else(|| missing("`seq` or `seq_q`"))?;
                // A chunk of new queries over a cached prefix (chunked prefill, prefix caching,
                // speculative verification): the keys are the prefix plus the chunk.
                let seq_kv = ints
                    .get("seq_kv")
                    .copied()
                    .or_else(|| ints.get("prefix_len").map(|p| p + seq_q))
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
                    batch: need("batch")?,
                    heads,
                    kv_heads,
                    seq_q,
                    seq_kv,
                    head_dim: need("head_dim")?,
                    causal,
                }
            }
            Op::Histogram => {
                need("bins")?;
                Problem::Flat { n: need("n")? }
            }
            Op::Spmv => {
                let rows = need("rows")?;
                need("cols")?;
                let nnz = need("nnz")?;
                Problem::Rows {
                    rows,
                    cols: nnz.div_ceil(rows).max(1),
                }
            }
            Op::Spmm => {
                let m = need("m")?;
                need("k")?;
                need("nnz")?;
                Problem::Rows {
                    rows: m,
                    cols: need("n")?,
                }
            }
            Op::Stencil => {
                let nx = need("nx")?;
                let cells = mul(
                    mul(nx, ints.get("ny").copied().unwrap_or(1)),
                    ints.get("nz").copied().unwrap_or(1),
                );
                if !ints.contains_key("points") {
                    return Err(missing("`points`"));
                }
                Problem::Flat { n: cells }
            }
            Op::Conv => {
                let batch = ints.get("batch").copied().unwrap_or(1);
                let spatial_in = ["seq", "height", "width", "depth"]
                    .iter()
                    .filter_map(|k| ints.get(k).copied())
                    .fold(1u64, mul);
                if !["seq", "height", "width", "depth"]
                    .iter()
                    .any(|k| ints.contains_key(k))
                {
                    return Err(missing("the spatial size (`seq`, or `height` and `width`)"));
                }
                let cin = ints
                    .get("in_channels")
                    .or(ints.get("channels"))
                    .copied()
                    .ok_or_else(|| missing("`channels` or `in_channels`"))?;
                let cout = ints
                    .get("out_channels")
                    .or(ints.get("channels"))
                    .copied()
                    .unwrap_or(cin);
                let taps = ["kernel_h", "kernel_w", "kernel_d"]
                    .iter()
                    .filter_map(|k| ints.get(k).copied())
                    .fold(1u64, mul);
                // the spatial dimensions given (`seq` for 1-D, `height`/`width`, `depth`)
                let nd = ["seq", "height", "width", "depth"]
                    .iter()
                    .filter(|k| ints.contains_key(*k))
                    .count() as u32;
                // a scalar `kernel = 3` is square (cubic in 3-D), as `kernel_size=3` is in
                // the frameworks: 3x3 taps over height and width
                let taps = if taps == 1 {
                    ints.get("kernel")
                        .copied()
                        .map_or(1, |k| k.saturating_pow(nd.max(1)))
                } else {
                    taps
                };
                let groups = ints.get("groups").copied().unwrap_or(1);
                if cin % groups != 0 || cout % groups != 0 {
                    return Err(SpecError::at(
                        p.span(),
                        "invalid `groups`, expected a divisor of the input and output channels",
                    ));
                }
                let stride = ints.get("stride").copied().unwrap_or(1);
                // "Same" padding assumed: each spatial dimension shrinks by the stride only.
                let out_spatial = spatial_in.div_ceil(stride.saturating_pow(nd).max(1)).max(1);
                extra.insert("cin", cin);
                extra.insert("cout", cout);
                extra.insert("taps", taps);
                extra.insert("spatial_in", spatial_in);
                extra.insert("spatial_out", out_spatial.max(1));
                // Implicit GEMM: M = batch x output positions, N = out channels per group, K = taps x in channels per group.
                if groups == cin && groups > 1 {
                    Problem::Flat {
                        n: mul(mul(batch, out_spatial.max(1)), cout),
                    }
                } else {
                    Problem::Gemm {
                        batch: groups,
                        m: mul(batch, out_spatial.max(1)),
                        n: cout / groups,
                        k: mul(taps, cin / groups),
                    }
                }
            }
            Op::Moe => {
                let tokens = need("tokens")?;
                let experts = need("experts")?;
                let top_k = need("top_k")?;
                if top_k > experts {
                    return Err(SpecError::at(
                        p.span(),
                        "invalid `top_k`, expected at most `experts`",
                    ));
                }
                Problem::Rows {
                    rows: tokens,
                    cols: experts,
                }
            }
            Op::Embedding => {
                need("vocab")?;
                Problem::Rows {
                    rows: need("tokens")?,
                    cols: need("dim")?,
                }
            }
            Op::Gather => {
                let idx = ints
                    .get("indices")
                    .or(ints.get("n"))
                    .copied()
                    .ok_or_else(|| missing("`indices`"))?;
                extra.insert("indices", idx);
                Problem::Rows {
                    rows: idx,
                    cols: ints.get("dim").copied().unwrap_or(1),
                }
            }
            Op::Scatter => {
                let (rows, dim) = match (ints.get("n"), ints.get("tokens")) {
                    (Some(&n), _) => (n, ints.get("dim").copied().unwrap_or(1)),
                    (None, Some(&t)) => (
                        mul(t, ints.get("kv_heads").copied().unwrap_or(1)),
                        ints.get("head_dim")
                            .or(ints.get("dim"))
                            .copied()
                            .unwrap_or(1),
                    ),
                    (None, None) => return Err(missing("`n` (or `tokens`)")),
                };
                extra.insert("rows_moved", rows);
                extra.insert("row_len", dim);
                Problem::Rows { rows, cols: dim }
            }
            Op::Sort => match (ints.get("n"), ints.get("segments"), ints.get("segment_len")) {
                (Some(&n), None, None) => Problem::Flat { n },
                (_, Some(&s), Some(&l)) => Problem::Rows { rows: s, cols: l },
                (Some(_), _, _) => {
                    return Err(SpecError::at(
                        p.span(),
                        "both `n` and `segments` given, expected one of them",
                    ))
                }
                _ => return Err(missing("`n`, or `segments` and `segment_len`")),
            },
            Op::LinearAttention => {
                let heads = need("heads")?;
                let head_dim = need("head_dim")?;
                let d_state = ints.get("d_state").copied().unwrap_or(head_dim);
                let chunk = ints.get("chunk").copied().unwrap_or(64);
                let (batch, seqlen) = match (
                    ints.get("total_tokens"),
                    ints.get("seqlen").or(ints.get("seq")),
                ) {
                    (Some(&t), _) => (1, t),
                    (None, Some(&s)) => (ints.get("batch").copied().unwrap_or(1), s),
                    (None, None) => return Err(missing("`seqlen` (or `total_tokens`)")),
                };
                let groups = ints.get("groups").copied().unwrap_or(heads);
                if groups > heads || heads % groups != 0 {
                    return Err(SpecError::at(
                        p.span(),
                        "invalid `groups`, expected a divisor of `heads`",
                    ));
                }
                let chunks = seqlen.div_ceil(chunk);
                extra.insert("tokens", mul(batch, seqlen));
                extra.insert("chunks", chunks);
                extra.insert("d_state", d_state);
                extra.insert("chunk", chunk);
                extra.insert("groups", groups);
                // The chunked form: per (sequence, head, chunk) a chunk x chunk product over the
                // state width and a chunk x head_dim product, batched.
                Problem::Gemm {
                    batch: mul(mul(batch, heads), chunks),
                    m: chunk,
                    n: head_dim,
                    k: d_state,
                }
            }
            Op::Sampling => Problem::Rows {
                rows: ints
                    .get("batch")
                    .or(ints.get("rows"))
                    .copied()
                    .ok_or_else(|| missing("`batch` (or `rows`)"))?,
                cols: ints
                    .get("vocab")
                    .or(ints.get("cols"))
                    .copied()
                    .ok_or_else(|| missing("`vocab` (or `cols`)"))?,
            },
            Op::CrossEntropy => {
                let rows = ints
                    .get("tokens")
                    .or(ints.get("rows"))
                    .copied()
                    .ok_or_else(|| missing("`tokens` (or `rows`)"))?;
                let cols = ints
                    .get("vocab")
                    .or(ints.get("cols"))
                    .copied()
                    .ok_or_else(|| missing("`vocab` (or `cols`)"))?;
                match ints.get("hidden") {
                    // Fused with the LM-head matmul: logits = hidden states x weight^T.
                    Some(&h) => Problem::Gemm {
                        batch: 1,
                        m: rows,
                        n: cols,
                        k: h,
                    },
                    None => Problem::Rows { rows, cols },
                }
            }
            Op::Spgemm => {
                let rows = ints
                    .get("rows")
                    .or(ints.get("m"))
                    .copied()
                    .ok_or_else(|| missing("`rows` (or `m`)"))?;
                need("nnz_a")?;
                need("nnz_b")?;
                let inner = ints.get("cols").or(ints.get("k")).copied().unwrap_or(rows);
                extra.insert("inner", inner);
                extra.insert("out_cols", ints.get("n").copied().unwrap_or(inner));
                Problem::Rows { rows, cols: inner }
            }
            Op::Custom => {
                let flops = floats.get("flops").copied();
                let mut bytes = floats.get("bytes").copied();
                if bytes.is_none() {
                    // One read of the input and one write of the output, at the spec's dtypes: the
                    // least traffic a streaming op over `n` (or `rows` x `cols`) elements moves.
                    // Only when those are the problem's only sizes: beside other size keys
                    // (`systems`, `c`, `h`, `w`, `paths`) `n` may be a batch or one dimension,
                    // and an estimate from it alone would be wrong, not just rough.
                    let other_sizes: Vec<&str> = loose
                        .keys()
                        .copied()
                        .filter(|k| !matches!(*k, "n" | "rows" | "cols" | "batch"))
                        .collect();
                    let elems = match (loose.get("n"), loose.get("rows"), loose.get("cols")) {
                        _ if !other_sizes.is_empty() => None,
                        (Some(&n), _, _) => Some((n as f64, "n")),
                        (None, Some(&r), Some(&c)) => Some((r as f64 * c as f64, "rows x cols")),
                        _ => None,
                    };
                    // `batch` independent problems of that size (a batched FFT, a batch of
                    // sequences): every one is read and written
                    let elems = match (elems, loose.get("batch")) {
                        (Some((e, "n")), Some(&b)) if b > 1 => Some((e * b as f64, "batch x n")),
                        (Some((e, _)), Some(&b)) if b > 1 => {
                            Some((e * b as f64, "batch x rows x cols"))
                        }
                        (e, _) => e,
                    };
                    if let Some((e, what)) = elems {
                        bytes = Some(e * elem_bytes);
                        custom_assumption = Some(format!(
                        "assumed: {what} elements read once and written once ({elem_bytes} B per element, storage and output dtypes); give `bytes` for the real traffic"
                    ));
                    }
                }
                Problem::Custom { flops, bytes }
            }
        })
    })();
    let (problem, unknown) = match built {
        Ok(Problem::Custom { flops, bytes }) => {
            let unknown = match (flops, bytes) {
                (_, None) => Some(format!(
                    "op {} without `bytes`{}: kplan has no work model for it, so the bytes, FLOPs and roofline are unknown (section 8); give `problem = {{ flops = ..., bytes = ... }}` for numbers",
                    op_label(op, custom),
                    if flops.is_some() { "" } else { " or `flops`" }
                )),
                _ => None,
            };
            if let Some(a) = &custom_assumption {
                notes.push(SpecNote::at(
                    p.span(),
                    format!("bytes of op {}: {a}", op_label(op, custom)),
                ));
            } else if flops.is_none() && bytes.is_some() {
                notes.push(SpecNote::at(
                    p.span(),
                    format!(
                        "no `flops` for op {}: the roofline counts the bytes only (a lower bound on the time)",
                        op_label(op, custom)
                    ),
                ));
            }
            (Problem::Custom { flops, bytes }, unknown)
        }
        Ok(pr) => (pr, None),
        // A problem that lacks a key the op's work model needs: planned without the model.
        Err(e) if e.message.starts_with("incomplete `problem`") => {
            let why = format!(
                "{}: planned without the work model of op `{}`, so the FLOPs, bytes and roofline are unknown (section 8)",
                e.message,
                op.as_str()
            );
            notes.push(SpecNote::at(
                e.span.clone().unwrap_or(p.span()),
                why.clone(),
            ));
            (
                Problem::Custom {
                    flops: None,
                    bytes: None,
                },
                Some(why),
            )
        }
        Err(e) => return Err(e),
    };
    let sized_by_assumption = custom_assumption.is_some();
    // sizes the streaming estimate could not use: say so once, with the keys
    if matches!(problem, Problem::Custom { bytes: None, .. }) {
        let sizes: Vec<&str> = loose_unused.iter().map(|(k, _)| *k).collect();
        if sizes.iter().any(|k| matches!(*k, "n" | "rows" | "cols"))
            && sizes
                .iter()
                .any(|k| !matches!(*k, "n" | "rows" | "cols" | "batch"))
        {
            notes.push(SpecNote::at(
                p.span(),
                format!(
                    "op {} has no work model and its problem has sizes besides `n` / `rows` x `cols` ({}): kplan does not guess its traffic from one of them; give `bytes` (and `flops`) for a roofline",
                    op_label(op, custom),
                    sizes.join(", ")
                ),
            ));
        }
    }
    for (kname, span) in loose_unused {
        if sized_by_assumption && matches!(kname, "n" | "rows" | "cols" | "batch") {
            continue;
        }
        notes.push(SpecNote::at(
            span,
            format!(
                "problem key `{kname}` not used by kplan: op {} has no work model, so only `flops` and `bytes` (or `n`, `rows` x `cols`, times `batch`, for a streaming estimate) size it; the plan does not depend on it",
                op_label(op, custom)
            ),
        ));
    }
    if unknown.is_none() {
        for (kname, why) in op.keys_outside_work_model() {
            // Permuting tokens moves their hidden vectors: there `hidden` is in the model.
            let moves_rows = op == Op::Moe
                && matches!(m.kind.as_deref(), Some("permute" | "unpermute"))
                && *kname == "hidden";
            if moves_rows {
                continue;
            }
            if let Some((key, _)) = p.get_ref().iter().find(|(k, _)| {
                k.get_ref() == kname || problem_key_alias(k.get_ref(), allowed) == Some(*kname)
            }) {
                notes.push(SpecNote::at(
                    key.span(),
                    format!(
                        "problem key `{}` is not in the work model of op `{}`: {why}",
                        key.get_ref(),
                        op.as_str()
                    ),
                ));
            }
        }
    }
    let mut dims: BTreeMap<String, u64> =
        ints.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    dims.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
    if op == Op::Custom {
        dims.extend(loose.into_iter().map(|(k, v)| (k.to_string(), v)));
    }
    Ok((problem, dims, knobs, unknown))
}

/// The words of a spec's comments and string values, lower case, one piece per line.
fn intent_text(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        // a comment: the whole line, or what follows a `#` outside a string
        let mut in_str: Option<char> = None;
        for (i, c) in line.char_indices() {
            match (in_str, c) {
                (None, '"') | (None, '\'') => in_str = Some(c),
                (Some(q), c) if c == q => in_str = None,
                (None, '#') => {
                    out.push_str(&line[i + 1..]);
                    out.push('\n');
                    break;
                }
                _ => {}
            }
        }
    }
    fn strings(v: &toml::Value, out: &mut String) {
        match v {
            toml::Value::String(s) => {
                out.push_str(&s.replace('\n', " "));
                out.push('\n');
            }
            toml::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            toml::Value::Table(t) => t.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    if let Ok(v) = text.parse::<toml::Table>() {
        v.values().for_each(|x| strings(x, &mut out));
    }
    out.to_lowercase()
}

/// The length of a `[kernel]` list value named `key`, where the spec gives one.
fn kernel_list_len(text: &str, key: &str) -> Option<usize> {
    let t = text.parse::<toml::Table>().ok()?;
    match t.get("kernel")?.get(key)? {
        toml::Value::Array(a) => Some(a.len()),
        _ => None,
    }
}

/// The dtype name a value starts with (`"fp32 main_grad"` -> `fp32`, `"Float64"` -> `float64`).
fn dtype_word(v: &toml::Value) -> Option<String> {
    let s = match v {
        toml::Value::String(s) => s.as_str(),
        toml::Value::Array(a) => return a.iter().find_map(dtype_word),
        toml::Value::Table(t) => return t.get("dtype").and_then(dtype_word),
        _ => return None,
    };
    s.split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')' | ';' | '/'))
        .find(|w| parse_dtype(w).is_some())
        .map(|w| w.to_ascii_lowercase())
}

/// Storage, compute and output dtypes from `(role, value)` pairs: roles naming the output
/// (`out`, `output`, `c`, `d`, `y`, `result`, `grad_weight`) and the accumulation (`acc`,
/// `accum`, `accumulate`, `compute`, `math`) go last; every other role is an input, the first
/// one the storage dtype. A narrow float or int8 storage with no accumulation named
/// accumulates in fp32 (int32 for integers). Returns the names and how they were read.
fn dtypes_by_role<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a toml::Value)>,
) -> (Vec<String>, String) {
    let (mut input, mut acc, mut out) = (None, None, None);
    let mut how = Vec::new();
    for (role, v) in pairs {
        let Some(d) = dtype_word(v) else { continue };
        let r = role.to_ascii_lowercase();
        let is = |ws: &[&str]| {
            ws.iter().any(|w| {
                r == *w || r.starts_with(&format!("{w}_")) || r.ends_with(&format!("_{w}"))
            })
        };
        if is(&[
            "out",
            "output",
            "outputs",
            "c",
            "d",
            "y",
            "result",
            "dst",
            "grad_weight",
            "dweight",
        ]) {
            if out.is_none() {
                out = Some(d.clone());
                how.push(format!("output `{role}` = {d}"));
            }
        } else if is(&[
            "acc",
            "accum",
            "accumulate",
            "accumulator",
            "compute",
            "math",
        ]) {
            if acc.is_none() {
                acc = Some(d.clone());
                how.push(format!("compute `{role}` = {d}"));
            }
        } else if input.is_none() {
            input = Some(d.clone());
            how.push(format!("storage `{role}` = {d}"));
        }
    }
    let Some(storage) = input.or_else(|| out.clone()) else {
        return (Vec::new(), String::new());
    };
    let compute = acc.unwrap_or_else(|| match parse_dtype(&storage).map(|p| p.0) {
        Some(Dtype::Fp16 | Dtype::Bf16 | Dtype::Fp8 | Dtype::Fp6 | Dtype::Fp4) => {
            how.push("compute fp32 (not named)".into());
            "fp32".into()
        }
        Some(Dtype::Int8 | Dtype::Int4) => {
            how.push("compute int32 (not named)".into());
            "int32".into()
        }
        _ => storage.clone(),
    });
    let mut names = vec![storage.clone(), compute];
    if let Some(o) = out {
        names.push(o);
    }
    (names, how.join(", "))
}

/// Dtypes given per tensor in `[kernel]` when `dtypes` is absent: keys named `*dtype*`,
/// `*_type(s)`, `precision`, and tables with a `dtype` field, in spec order.
fn inferred_dtypes(text: &str) -> (Vec<String>, String) {
    let Ok(t) = text.parse::<toml::Table>() else {
        return (Vec::new(), String::new());
    };
    let Some(toml::Value::Table(k)) = t.get("kernel") else {
        return (Vec::new(), String::new());
    };
    let pairs: Vec<(&str, &toml::Value)> = k
        .iter()
        .filter(|(key, v)| {
            let l = key.to_ascii_lowercase();
            l.contains("dtype")
                || l.ends_with("_type")
                || l.ends_with("_types")
                || l == "precision"
                || l == "precisions"
                || matches!(v, toml::Value::Table(x) if x.contains_key("dtype"))
        })
        .map(|(key, v)| (key.as_str(), v))
        .collect();
    // one list under one key (`precision = ["Float64", "Float32"]`): storage, then compute
    if let [(key, toml::Value::Array(a))] = pairs.as_slice() {
        let names: Vec<String> = a.iter().filter_map(dtype_word).collect();
        if !names.is_empty() {
            return (names, format!("`{key}` as storage, compute"));
        }
    }
    dtypes_by_role(pairs.into_iter())
}

/// C++ performance-portability layers: single-source C++ with per-vendor backends.
const CXX_LAYERS: &[&str] = &[
    "kokkos",
    "raja",
    "openmp",
    "openmp-offload",
    "openacc",
    "alpaka",
    "occa",
    "stdpar",
    "std-par",
    "hpx",
    "umpire",
    "thrust",
    "rocthrust",
];

/// Other languages and kernel tools kplan has no level for.
const OTHER_LAYERS: &[&str] = &[
    "julia",
    "cuda-jl",
    "amdgpu-jl",
    "numba",
    "cupy",
    "jax",
    "pallas",
    "tilelang",
    "mojo",
    "halide",
    "tvm",
    "taichi",
    "warp",
    "cubecl",
    "wgpu",
    "vulkan",
];
