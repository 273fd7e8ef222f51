//! `cuda-intrinsic-missing-in-hip`: a CUDA device intrinsic that HIP's headers do not declare
//! (`__stcg`, `__stwb`, `__dp4a`, `__trap`, ...) called where the HIP compiler reads it.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "cuda-intrinsic-missing-in-hip",
    summary: "a CUDA device intrinsic that HIP does not declare (`__stcg`, `__stwb`, `__dp4a`, `__trap`, ...)",
    what: "Finds calls of CUDA device functions that HIP's headers do not declare, outside CUDA-only \
branches, unless the file or the project defines the name itself (a shim): the cache-hinted loads and \
stores (`__ldlu`, `__ldcv`, `__stwb`, `__stcg`, `__stcs`, `__stwt`); the byte and half-word dot products \
(`__dp4a`, `__dp2a_lo`, `__dp2a_hi`); the SIMD-within-a-word video intrinsics (`__vabsdiffu4`, `__vsetltu2`, \
`__vsubss4`, ...); the DPX min/max-plus family (`__viaddmax_s32`, `__vimax3_u32`, ...); float and double \
arithmetic with a directed rounding (`__fadd_rd`, `__fmul_ru`, `__dsqrt_rz`, packed `__fadd2_rn`, ...); the \
address-space tests and conversions (`__isShared`, `__cvta_generic_to_shared`, ...); `__trap`, `__brkpt`, \
`__prof_trigger`, `__pm0`..`__pm3`; `__barrier_sync`, `__uni_sync`; 128-bit and system-scope inc/dec atomics. \
The list (217 names) is every name of CUDA 13.0's device headers that HIP does not declare. The first call of \
each name in a file is reported, with the number of calls.",
    why: "hipify maps most of CUDA's device API one to one, but these names have no HIP declaration: \
compiling the calls with clang-19 in HIP mode against Debian's HIP 5.2 headers fails with \"use of \
undeclared identifier\", and ROCm's own headers (ROCm/clr `hipamd/include/hip/amd_detail`, read at \
f9f995c, 2024-10) declare none of them either (`__ldcg`, `__ldca` and `__ldcs` exist there for `__half` \
and `__half2` only). The AMD build fails at that line; the portable forms are plain loads and stores (or \
`__builtin_nontemporal_store` for streaming), `__builtin_amdgcn_sdot4` / `amd_mixed_dot` for the dot \
products, and `abort()` or `__builtin_trap()`.",
    example: "__global__ void store(int4* out, int4 v) {\n    __stcg(out + threadIdx.x, v);\n}",
    use_instead: "__global__ void store(int4* out, int4 v) {\n#if defined(__HIP_PLATFORM_AMD__)\n    __builtin_nontemporal_store(v, out + threadIdx.x);\n#else\n    __stcg(out + threadIdx.x, v);\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The CUDA device functions HIP does not declare, sorted (byte order): every name declared by
/// CUDA 13.0's device headers (`crt/device_functions.h`, `crt/device_double_functions.h`,
/// `crt/sm_*_rt.h`, `sm_*_intrinsics.h`, `*atomic_functions.h` of the `nvidia-cuda-crt` 13.0.88
/// wheel) that clang-19 in HIP mode reports undeclared with Debian's HIP 5.2 headers and that
/// ROCm/clr's `hipamd/include` (f9f995c, 2024-10) never mentions. Cluster functions are left to
/// `nvidia-only-feature`. `tests/hip_lacks.rs` checks every name against the real compiler.
pub const MISSING: &[&str] = &[
    "__barrier_sync",
    "__barrier_sync_count",
    "__brkpt",
    "__cvta_constant_to_generic",
    "__cvta_generic_to_constant",
    "__cvta_generic_to_global",
    "__cvta_generic_to_grid_constant",
    "__cvta_generic_to_local",
    "__cvta_generic_to_shared",
    "__cvta_global_to_generic",
    "__cvta_grid_constant_to_generic",
    "__cvta_local_to_generic",
    "__cvta_shared_to_generic",
    "__dadd_rd",
    "__dadd_ru",
    "__dadd_rz",
    "__ddiv_rd",
    "__ddiv_ru",
    "__ddiv_rz",
    "__dmul_rd",
    "__dmul_ru",
    "__dmul_rz",
    "__dp2a_hi",
    "__dp2a_lo",
    "__dp4a",
    "__drcp_rd",
    "__drcp_ru",
    "__drcp_rz",
    "__dsqrt_rd",
    "__dsqrt_ru",
    "__dsqrt_rz",
    "__dsub_rd",
    "__dsub_ru",
    "__dsub_rz",
    "__fadd2_rd",
    "__fadd2_rn",
    "__fadd2_ru",
    "__fadd2_rz",
    "__fadd_rd",
    "__fadd_ru",
    "__fadd_rz",
    "__fdiv_rd",
    "__fdiv_ru",
    "__fdiv_rz",
    "__ffma2_rd",
    "__ffma2_rn",
    "__ffma2_ru",
    "__ffma2_rz",
    "__fma_rd",
    "__fma_ru",
    "__fma_rz",
    "__fmaf_ieee_rd",
    "__fmaf_ieee_rn",
    "__fmaf_ieee_ru",
    "__fmaf_ieee_rz",
    "__fmaf_rd",
    "__fmaf_ru",
    "__fmaf_rz",
    "__fmul2_rd",
    "__fmul2_rn",
    "__fmul2_ru",
    "__fmul2_rz",
    "__fmul_rd",
    "__fmul_ru",
    "__fmul_rz",
    "__frcp_rd",
    "__frcp_ru",
    "__frcp_rz",
    "__fsqrt_rd",
    "__fsqrt_ru",
    "__fsqrt_rz",
    "__fsub_rd",
    "__fsub_ru",
    "__fsub_rz",
    "__isConstant",
    "__isCtaShared",
    "__isGlobal",
    "__isGridConstant",
    "__isLocal",
    "__isShared",
    "__ldcv",
    "__ldlu",
    "__pm0",
    "__pm1",
    "__pm2",
    "__pm3",
    "__prof_trigger",
    "__stcg",
    "__stcs",
    "__stwb",
    "__stwt",
    "__trap",
    "__u128AtomicCAS",
    "__u128AtomicCAS_system",
    "__u128AtomicExch",
    "__u128AtomicExch_system",
    "__uni_sync",
    "__vabs2",
    "__vabs4",
    "__vabsdiffs2",
    "__vabsdiffs4",
    "__vabsdiffu2",
    "__vabsdiffu4",
    "__vabsss2",
    "__vabsss4",
    "__vadd2",
    "__vadd4",
    "__vaddss2",
    "__vaddss4",
    "__vaddus2",
    "__vaddus4",
    "__vavgs2",
    "__vavgs4",
    "__vavgu2",
    "__vavgu4",
    "__vcmpeq2",
    "__vcmpeq4",
    "__vcmpges2",
    "__vcmpges4",
    "__vcmpgeu2",
    "__vcmpgeu4",
    "__vcmpgts2",
    "__vcmpgts4",
    "__vcmpgtu2",
    "__vcmpgtu4",
    "__vcmples2",
    "__vcmples4",
    "__vcmpleu2",
    "__vcmpleu4",
    "__vcmplts2",
    "__vcmplts4",
    "__vcmpltu2",
    "__vcmpltu4",
    "__vcmpne2",
    "__vcmpne4",
    "__vhaddu2",
    "__vhaddu4",
    "__viaddmax_s16x2",
    "__viaddmax_s16x2_relu",
    "__viaddmax_s32",
    "__viaddmax_s32_relu",
    "__viaddmax_u16x2",
    "__viaddmax_u32",
    "__viaddmin_s16x2",
    "__viaddmin_s16x2_relu",
    "__viaddmin_s32",
    "__viaddmin_s32_relu",
    "__viaddmin_u16x2",
    "__viaddmin_u32",
    "__vibmax_s16x2",
    "__vibmax_s32",
    "__vibmax_u16x2",
    "__vibmax_u32",
    "__vibmin_s16x2",
    "__vibmin_s32",
    "__vibmin_u16x2",
    "__vibmin_u32",
    "__vimax3_s16x2",
    "__vimax3_s16x2_relu",
    "__vimax3_s32",
    "__vimax3_s32_relu",
    "__vimax3_u16x2",
    "__vimax3_u32",
    "__vimax_s16x2_relu",
    "__vimax_s32_relu",
    "__vimin3_s16x2",
    "__vimin3_s16x2_relu",
    "__vimin3_s32",
    "__vimin3_s32_relu",
    "__vimin3_u16x2",
    "__vimin3_u32",
    "__vimin_s16x2_relu",
    "__vimin_s32_relu",
    "__vmaxs2",
    "__vmaxs4",
    "__vmaxu2",
    "__vmaxu4",
    "__vmins2",
    "__vmins4",
    "__vminu2",
    "__vminu4",
    "__vneg2",
    "__vneg4",
    "__vnegss2",
    "__vnegss4",
    "__vsads2",
    "__vsads4",
    "__vsadu2",
    "__vsadu4",
    "__vseteq2",
    "__vseteq4",
    "__vsetges2",
    "__vsetges4",
    "__vsetgeu2",
    "__vsetgeu4",
    "__vsetgts2",
    "__vsetgts4",
    "__vsetgtu2",
    "__vsetgtu4",
    "__vsetles2",
    "__vsetles4",
    "__vsetleu2",
    "__vsetleu4",
    "__vsetlts2",
    "__vsetlts4",
    "__vsetltu2",
    "__vsetltu4",
    "__vsetne2",
    "__vsetne4",
    "__vsub2",
    "__vsub4",
    "__vsubss2",
    "__vsubss4",
    "__vsubus2",
    "__vsubus4",
    "atomicDec_system",
    "atomicInc_system",
];

/// Whether `w` is one of the CUDA intrinsics HIP lacks.
pub fn missing_in_hip(w: &str) -> bool {
    (w.starts_with("__") || w.starts_with("atomic")) && MISSING.binary_search(&w).is_ok()
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    // per name: its first call outside CUDA-only code, and how many there are
    let mut first: Vec<(usize, usize)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
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
        match index.get(w) {
            Some(&n) => first[n].1 += 1,
            None => {
                index.insert(w, first.len());
                first.push((k, 1));
            }
        }
    }
    for (k, count) in first {
        let more = if count > 1 {
            format!(" ({count} calls in this file)")
        } else {
            String::new()
        };
        let msg = format!(
            "`{}` is a CUDA intrinsic HIP does not declare (not in HIP 5.2's headers nor in ROCm clr's of 2024-10): the AMD build fails here{more}",
            src.s(k)
        );
        cx.report(
            &META,
            k,
            k,
            msg,
            "keep it in the NVIDIA branch of a platform test (`#if defined(__HIP_PLATFORM_AMD__) ... #else ... #endif`) with a form HIP has in the AMD branch (a plain or `__builtin_nontemporal_store` store, `__builtin_amdgcn_sdot4`, `abort()`)",
        );
    }
}
