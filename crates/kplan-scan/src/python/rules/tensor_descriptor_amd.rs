//! `triton-tensor-descriptor-amd`: tensor descriptors / TMA, which have no hardware on AMD.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-tensor-descriptor-amd",
    summary: "tensor descriptor / TMA API used without an AMD path",
    what: "Finds Triton tensor descriptors and TMA helpers (`tl.make_tensor_descriptor`, `TensorDescriptor`, \
`tl._experimental_descriptor_load/store`, `create_1d/2d_tma_descriptor`, `fill_1d/2d_tma_descriptor`, \
`TmaDescKernelParam`, device tensormap creation) outside a backend check, and calls of a project's own TMA \
helpers: any function or class whose name has a `tma` or `tensormap` word (`TmaAutoTuneHelper()`, \
`init_tma_descriptor(...)`), except capability probes (`has_tma()`, `supports_tma()`, `is_tma_supported()`).",
    why: "Descriptors lower to the Tensor Memory Accelerator on NVIDIA sm_90+. gfx942 and gfx950 have no TMA: the \
host-side TMA helpers are CUDA-only, and device-side descriptors fall back to ordinary loads at best (the pipelining \
the kernel was written around does not happen) or fail to compile on older Triton releases.",
    example: "desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])\na = desc.load([pid_m * BM, 0])",
    use_instead: "if USE_TMA:  # constexpr, set from target.backend == \"cuda\" and capability >= 9\n    a = desc.load([pid_m * BM, 0])\nelse:\n    a = tl.load(a_ptrs, mask=a_mask)",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &["tma"],
};

const NAMES: &[&str] = &[
    "make_tensor_descriptor",
    "_experimental_make_tensor_descriptor",
    "TensorDescriptor",
    "_experimental_descriptor_load",
    "_experimental_descriptor_store",
    "create_1d_tma_descriptor",
    "create_2d_tma_descriptor",
    "fill_1d_tma_descriptor",
    "fill_2d_tma_descriptor",
    "TmaDescKernelParam",
    "experimental_device_tensormap_create1d",
    "experimental_device_tensormap_create2d",
    "experimental_tensormap_fenceproxy_acquire",
    "load_tensor_descriptor",
    "store_tensor_descriptor",
];

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let mut seen: Vec<(usize, &str)> = Vec::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Kind::Name)
            || !(NAMES.contains(&src.s(k)) || src.s(k + 1) == "(" && tma_helper(src.s(k)))
        {
            continue;
        }
        let Some(line) = src.line_of(k) else { continue };
        if matches!(src.s(line.first), "import" | "from" | "class" | "def") {
            continue;
        }
        if cx.guarded(k) || usage_is_constexpr_switched(cx, k) {
            continue;
        }
        let scope = src.def_at(k).map(|d| d.name).unwrap_or(usize::MAX);
        if seen.contains(&(scope, src.s(k))) {
            continue;
        }
        seen.push((scope, src.s(k)));
        let a = src.dotted_start(k);
        let msg = format!(
            "`{}` relies on TMA, which gfx942 and gfx950 do not have",
            cx.code(a, k)
        );
        cx.report(&META, a, k, msg, "keep a pointer-based (`tl.load` / block pointer) path for AMD and choose it per backend");
    }
}

/// Inside a kernel, under `if USE_TMA:`-style constexpr switches (upper-case names with TMA/DESC).
fn usage_is_constexpr_switched(cx: &Cx, k: usize) -> bool {
    let src = cx.src;
    let Some(line) = src.line_of(k) else {
        return false;
    };
    let li = src.lines.partition_point(|l| l.end <= k);
    let mut indent = line.indent;
    for l in src.lines[..li].iter().rev() {
        if l.indent < indent {
            indent = l.indent;
            if matches!(src.s(l.first), "if" | "elif") {
                let cond = src.snippet(l.first, l.end - 1).to_ascii_uppercase();
                if cond.contains("TMA") || cond.contains("DESC") {
                    return true;
                }
            }
            if src.s(l.first) == "def" {
                break;
            }
        }
    }
    false
}

/// A call of a project's own TMA helper: a name with a `tma` / `tensormap` word
/// (`TmaAutoTuneHelper`, `init_tma_descriptor`), not a capability probe (`has_tma`,
/// `is_tma_supported`, `supports_tma`, `use_tma`).
fn tma_helper(name: &str) -> bool {
    // split `snake_case` and `CamelCase` into lower-case words
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c.is_ascii_digit() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    if !words.iter().any(|w| w == "tma" || w == "tensormap") {
        return false;
    }
    const PROBES: &[&str] = &[
        "has",
        "is",
        "supports",
        "support",
        "supported",
        "check",
        "can",
        "use",
        "enable",
        "enabled",
        "disable",
        "available",
        "allow",
    ];
    !words.iter().any(|w| PROBES.contains(&w.as_str()))
}
