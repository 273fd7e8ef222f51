//! `sync-mask-param-32`: a project's own `__shfl_*_sync` / `__ballot_sync`-style function
//! (an overload or a shim) whose lane-mask parameter is 32 bits wide.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "sync-mask-param-32",
    summary: "project overload or shim of a `*_sync` warp intrinsic whose mask parameter is 32 bits",
    what: "Finds function definitions named like the CUDA sync warp intrinsics (`__shfl_sync`, \
`__shfl_xor_sync`, `__ballot_sync`, `__any_sync`, ...) whose first parameter, the lane mask, is declared \
`unsigned`, `unsigned int`, `int` or `uint32_t`.",
    why: "HIP's sync intrinsics take a 64-bit lane mask, and a wavefront has 64 lanes on CDNA. An overload \
that takes a 32-bit mask either fails to resolve against HIP's declarations or truncates every mask it \
forwards, so lanes 32-63 are dropped from the shuffle or vote.",
    example: "__device__ half __shfl_down_sync(const unsigned mask, half v, unsigned d) {\n    return __shfl_down_sync(mask, __half(v), d);\n}",
    use_instead: "__device__ half __shfl_down_sync(const unsigned long long mask, half v, unsigned d) {\n    return __shfl_down_sync(mask, __half(v), d);\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

fn sync_intrinsic(s: &str) -> bool {
    // `__sync` itself overlaps the prefix and the suffix: strip one, then the other.
    let Some(core) = s.strip_prefix("__").and_then(|c| c.strip_suffix("_sync")) else {
        return false;
    };
    core.starts_with("shfl")
        || matches!(
            core,
            "ballot" | "any" | "all" | "match_any" | "match_all" | "reduce_add"
        )
}

pub fn check(cx: &mut Cx) {
    if !cx.has("_sync") {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for i in 1..n.saturating_sub(2) {
        if src.kind(i) != Some(Tk::Ident) || !sync_intrinsic(src.s(i)) || !src.is(i + 1, "(") {
            continue;
        }
        // a declaration: preceded by a return type, not a call (`return f(`, `= f(`, `, f(`)
        let prev = src.s(i - 1);
        let decl = src.kind(i - 1) == Some(Tk::Ident)
            && !matches!(prev, "return" | "else" | "case" | "do")
            || prev == "*"
            || prev == "&";
        if !decl || src.in_device(i) || cx.nv_only(i) {
            continue;
        }
        let Some(close) = src.mate(i + 1) else {
            continue;
        };
        // the first parameter's tokens
        let end = (i + 2..close).find(|&j| src.is(j, ",")).unwrap_or(close);
        if end <= i + 3 {
            continue;
        }
        let ty: Vec<&str> = (i + 2..end - 1).map(|j| src.s(j)).collect();
        let narrow = ty
            .iter()
            .any(|t| matches!(*t, "unsigned" | "int" | "uint32_t" | "uint"))
            && !ty
                .iter()
                .any(|t| matches!(*t, "long" | "uint64_t" | "size_t" | "lane_mask_t"));
        if !narrow {
            continue;
        }
        let msg = format!(
            "`{}` is declared with a 32-bit lane mask `{}`; HIP's sync intrinsics take a 64-bit mask",
            src.s(i),
            cx.snippet(i + 2, end - 1)
        );
        cx.report(&META, i + 2, end - 1, msg, "declare the mask `unsigned long long` (or a project lane-mask type that is 64 bits on AMD)");
    }
}
