//! `cuda-intrinsic-missing-in-hip`: a CUDA device intrinsic that HIP's headers do not declare
//! (`__stcg`, `__stwb`, `__dp4a`, `__trap`, ...) called where the HIP compiler reads it.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "cuda-intrinsic-missing-in-hip",
    summary: "a CUDA device intrinsic that HIP does not declare (`__stcg`, `__stwb`, `__dp4a`, `__trap`, ...)",
    what: "Finds calls of CUDA device intrinsics that HIP's headers do not declare, outside CUDA-only \
branches, unless the file or the project defines the name itself (a shim): the cache-hinted loads and \
stores `__ldlu`, `__ldcv`, `__stwb`, `__stcg`, `__stcs`, `__stwt`; the byte and half-word dot products \
`__dp4a`, `__dp2a_lo`, `__dp2a_hi`; the SIMD-within-a-word video intrinsics `__vabsdiff*`, `__vset*`, \
`__vcmp*`, `__vadd*`, `__vsub*`, `__vmax*`, `__vmin*`, `__vavg*`, `__vneg*`, `__vabs*`, `__vsads*`; the \
address-space tests and conversions `__isGlobal`, `__isShared`, `__isConstant`, `__isLocal`, \
`__cvta_generic_to_*`, `__cvta_*_to_generic`; `__trap`, `__brkpt`, `__prof_trigger`; the IEEE-rounded \
`__fmaf_ieee_*`.",
    why: "hipify maps most of CUDA's device API one to one, but these names have no HIP declaration: \
compiling the calls with clang-19 in HIP mode against Debian's HIP 5.2 headers fails with \"use of \
undeclared identifier\", and ROCm's own headers (ROCm/clr `hipamd/include/hip/amd_detail`, read at \
f9f995c, 2024-10) declare none of them either (`__ldcg`, `__ldca` and `__ldcs` exist there for `__half` \
and `__half2` only). The AMD build fails at that line; the portable forms are plain loads and stores (or \
`__builtin_nontemporal_store` for streaming), `__builtin_amdgcn_sdot4` / `amd_mixed_dot` for the dot \
products, and `abort()` or `__builtin_trap()`.",
    example: "__global__ void store(int4* out, int4 v) {\n    __stcg(out + threadIdx.x, v);\n}",
    use_instead: "__global__ void store(int4* out, int4 v) {\n#if defined(__CUDA_ARCH__)\n    __stcg(out + threadIdx.x, v);\n#else\n    out[threadIdx.x] = v;\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Exact names HIP does not declare.
pub const MISSING: &[&str] = &[
    "__ldlu",
    "__ldcv",
    "__stwb",
    "__stcg",
    "__stcs",
    "__stwt",
    "__dp4a",
    "__dp2a_lo",
    "__dp2a_hi",
    "__isGlobal",
    "__isShared",
    "__isConstant",
    "__isLocal",
    "__trap",
    "__brkpt",
    "__prof_trigger",
    "__fmaf_ieee_rn",
    "__fmaf_ieee_rz",
    "__fmaf_ieee_ru",
    "__fmaf_ieee_rd",
];

/// Families of the SIMD video intrinsics (`__vabsdiffu4`, `__vsetltu2`) and address conversions.
const PREFIXES: &[&str] = &[
    "__vabsdiff",
    "__vset",
    "__vcmp",
    "__vadd",
    "__vsub",
    "__vmax",
    "__vmin",
    "__vavg",
    "__vneg",
    "__vabs",
    "__vsads",
    "__vhaddu",
    "__cvta_generic_to_",
    "__cvta_shared_to_",
    "__cvta_global_to_",
    "__cvta_constant_to_",
    "__cvta_local_to_",
];

/// Whether `w` is one of the intrinsics HIP lacks.
pub fn missing_in_hip(w: &str) -> bool {
    if !w.starts_with("__") {
        return false;
    }
    MISSING.contains(&w)
        || PREFIXES.iter().any(|p| {
            w.strip_prefix(p).is_some_and(|r| {
                // `__vabsdiffu4`, `__vsetltu2`, `__vaddss4`: a size digit ends the name
                !r.is_empty() && (r.ends_with(['2', '4']) || p.starts_with("__cvta"))
            })
        })
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let mut sites = Vec::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Ident) || src.s(k + 1) != "(" {
            continue;
        }
        let w = src.s(k);
        if !missing_in_hip(w) {
            continue;
        }
        // a declaration or a shim of its own (`#define __trap() abort()`, `inline void __stcg(...)`)
        let prev = if k > 0 { src.s(k - 1) } else { "" };
        if matches!(
            prev,
            "void" | "int" | "unsigned" | "define" | "::" | "." | "->"
        ) || src.defines_macro(w)
            || cx.index.intrinsic_shims.contains(w)
        {
            continue;
        }
        if src.platform(k) == Platform::Nvidia {
            continue;
        }
        sites.push(k);
    }
    for k in sites {
        let msg = format!(
            "`{}` is a CUDA intrinsic HIP does not declare: the AMD build fails here",
            src.s(k)
        );
        cx.report(
            &META,
            k,
            k,
            msg,
            "keep it under `#if defined(__CUDA_ARCH__)` with a portable form for HIP (a plain load or store, `__builtin_amdgcn_sdot4`, `abort()`)",
        );
    }
}
