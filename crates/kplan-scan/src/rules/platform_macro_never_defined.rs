//! `platform-macro-never-defined`: a preprocessor test on a HIP/AMD platform macro that neither
//! clang nor the HIP headers define (`__HIP_ARCH__`, `__HIP_DEVICE__`, `__AMDGCN_ARCH__`): the
//! test is false on every compiler, so the branch written for AMD never compiles.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "platform-macro-never-defined",
    summary: "test on a HIP/AMD platform macro no compiler or HIP header defines (`__HIP_ARCH__`)",
    what: "Finds identifiers in `#if`/`#elif`/`#ifdef` conditions in the HIP and AMD platform macro families \
(`__HIP_ARCH*`, `__HIP_DEVICE*`, `__HIP_PLATFORM*`, `__AMDGCN*`, `__AMDGPU*`, `__HCC*`) that clang-19 in HIP \
mode does not define for any AMD target, in either pass, and that the HIP headers never mention. \
Misspellings of a real macro are `arch-macro-misspelled`'s, and the macros ROCm 6.0 removed \
(`__HIP_PLATFORM_HCC__`, `__HCC__`) are `hip-platform-macro-removed`'s. A macro the file defines itself \
keeps the rule silent.",
    why: "An undefined macro is 0 in `#if` and false in `defined()`: `#if defined(__CUDA_ARCH__) || \
defined(__HIP_ARCH__)` is the host branch in every HIP device pass, so AMD device code gets the host-only \
path, or the AMD fast path is never compiled, with no warning. The names HIP really has: \
`__HIP_DEVICE_COMPILE__` (device pass), `__HIP__` / `__HIPCC__` (both passes), `__HIP_PLATFORM_AMD__` (HIP \
headers), the architecture macros `__gfx942__` and `__GFX9__` (device pass). The known set is clang-19's \
`-E -dM` for seven targets and both passes, and every such name in Debian's HIP 5.2 headers, ROCm/HIP \
(c5e11fc, 2024-10) and ROCm/clr (f9f995c, 2024-10); `tests/hip_lacks.rs` checks the compiler's part.",
    example: "__host__ __device__ float fast_exp(float x) {\n#if defined(__CUDA_ARCH__) || defined(__HIP_ARCH__)\n    return __expf(x);\n#else\n    return expf(x);\n#endif\n}",
    use_instead: "__host__ __device__ float fast_exp(float x) {\n#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)\n    return __expf(x);\n#else\n    return expf(x);\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Every name of the checked families that clang-19 defines in a HIP pass or that the HIP
/// headers mention (defined, tested or documented as a user switch).
pub const KNOWN: &[&str] = &[
    "__AMDGCN_CUMODE__",
    "__AMDGCN_UNSAFE_FP_ATOMICS__",
    "__AMDGCN_WAVEFRONT_SIZE",
    "__AMDGCN_WAVEFRONT_SIZE__",
    "__AMDGCN__",
    "__AMDGPU__",
    "__HCC_ACCELERATOR__",
    "__HCC__",
    "__HIP_ARCH_GFX701__",
    "__HIP_ARCH_GFX803__",
    "__HIP_ARCH_HAS_3DGRID__",
    "__HIP_ARCH_HAS_DOUBLES__",
    "__HIP_ARCH_HAS_DYNAMIC_PARALLEL__",
    "__HIP_ARCH_HAS_FLOAT_ATOMIC_ADD__",
    "__HIP_ARCH_HAS_GLOBAL_FLOAT_ATOMIC_EXCH__",
    "__HIP_ARCH_HAS_GLOBAL_INT32_ATOMICS__",
    "__HIP_ARCH_HAS_GLOBAL_INT64_ATOMICS__",
    "__HIP_ARCH_HAS_SHARED_FLOAT_ATOMIC_EXCH__",
    "__HIP_ARCH_HAS_SHARED_INT32_ATOMICS__",
    "__HIP_ARCH_HAS_SHARED_INT64_ATOMICS__",
    "__HIP_ARCH_HAS_SURFACE_FUNCS__",
    "__HIP_ARCH_HAS_SYNC_THREAD_EXT__",
    "__HIP_ARCH_HAS_THREAD_FENCE_SYSTEM__",
    "__HIP_ARCH_HAS_WARP_BALLOT__",
    "__HIP_ARCH_HAS_WARP_FUNNEL_SHIFT__",
    "__HIP_ARCH_HAS_WARP_SHUFFLE__",
    "__HIP_ARCH_HAS_WARP_VOTE__",
    "__HIP_DEVICE_BUILTIN",
    "__HIP_DEVICE_COMPILE__",
    "__HIP_PLATFORM_AMD__",
    "__HIP_PLATFORM_HCC__",
    "__HIP_PLATFORM_NVCC__",
    "__HIP_PLATFORM_NVIDIA__",
    "__HIP_PLATFORM_SPIRV__",
];

const FAMILIES: &[&str] = &[
    "__HIP_ARCH",
    "__HIP_DEVICE",
    "__HIP_PLATFORM",
    "__AMDGCN",
    "__AMDGPU",
    "__HCC",
];

/// Whether `w` is in a checked family and no compiler or HIP header has it.
pub fn never_defined(w: &str) -> bool {
    FAMILIES.iter().any(|f| w.starts_with(f)) && !KNOWN.contains(&w)
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__HIP") || cx.has("__AMDG") || cx.has("__HCC")) {
        return;
    }
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for m in cx.src.cond_macros() {
        let w = m.name;
        if !never_defined(w) || seen.contains(w) {
            continue;
        }
        // a misspelling of a real one (`__HIP_PLATFORM_AMD`) is `arch-macro-misspelled`'s
        let stem = w.trim_end_matches('_');
        if KNOWN.iter().any(|k| k.trim_end_matches('_') == stem) || cx.src.defines_macro(w) {
            continue;
        }
        seen.insert(w);
        // `#ifndef X` / `!defined(X)`: the test is true everywhere, so its `#else` never compiles
        let negated = m.negated
            || cx.src.branches.get(m.branch).is_some_and(|br| {
                cx.src
                    .cond_text(br)
                    .trim_start()
                    .trim_start_matches('#')
                    .trim_start()
                    .starts_with("ifndef")
            });
        let msg = if negated {
            format!("`{w}` is not defined by any compiler or by the HIP headers: this negated test is true on every target, so the branch it excludes (written for AMD) never compiles")
        } else {
            format!("`{w}` is not defined by any compiler or by the HIP headers: the test is false on every target, so the branch written for AMD never compiles there")
        };
        if let Some((sev, targets)) = cx.ctx.scope_severity(&META) {
            cx.report_span(
                &META,
                sev,
                targets,
                m.start,
                m.start + w.len(),
                msg,
                "test `__HIP_DEVICE_COMPILE__` (AMD device pass), `__HIP__` / `__HIPCC__` (both passes) or an architecture macro (`__gfx942__`, `__GFX9__`)",
            );
        }
    }
}
