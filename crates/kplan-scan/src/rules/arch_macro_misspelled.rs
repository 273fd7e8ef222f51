//! `arch-macro-misspelled`: a target macro in a preprocessor condition spelled without the
//! compiler's trailing `__` (`__gfx90a`, `__gfx940_`, `__HIP_PLATFORM_AMD`): never defined.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "arch-macro-misspelled",
    summary: "target macro in a condition misspelled (`__gfx90a`, `__gfx940_`): never defined, the same on every target",
    what: "Finds, in `#if`/`#elif`/`#ifdef` conditions, identifiers that are a misspelling of a macro the \
compiler defines per target or platform: an architecture macro (`__gfx942__`, `__GFX9__`) or one of \
`__HIP_PLATFORM_AMD__`, `__HIP_PLATFORM_NVIDIA__`, `__HIP_DEVICE_COMPILE__`, `__HIPCC__`, `__HIP__`, \
`__CUDACC__`, `__CUDA_ARCH__`, written with a missing or extra underscore at the end. The file's own \
`#define` of the same name keeps the rule silent.",
    why: "The compilers define these names only with two leading and two trailing underscores. A misspelled \
test is never true, so the branch it guards is dead on the very target it was written for: gfx90a or gfx940 \
takes the generic path, a builtin or an atomic fast path is skipped, and nothing warns, because an undefined \
macro is simply 0 in `#if`.",
    example: "#if defined(__gfx90a__) || defined(__gfx940_)\n  return __builtin_amdgcn_flat_atomic_fadd_f64(addr, value);\n#endif",
    use_instead: "#if defined(__gfx90a__) || defined(__gfx940__)\n  return __builtin_amdgcn_flat_atomic_fadd_f64(addr, value);\n#endif",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

const STEMS: &[&str] = &[
    "HIP_PLATFORM_AMD",
    "HIP_PLATFORM_NVIDIA",
    "HIP_PLATFORM_HCC",
    "HIP_PLATFORM_NVCC",
    "HIP_DEVICE_COMPILE",
    "HIPCC",
    "HIP",
    "CUDACC",
    "CUDA_ARCH",
];

/// The correct spelling of `w` when `w` misspells a compiler-defined target macro.
fn correct(w: &str) -> Option<String> {
    if !w.starts_with("__") || w.ends_with("__") && !w.ends_with("___") {
        return None;
    }
    let stem = w.trim_start_matches('_').trim_end_matches('_');
    let arch = stem.strip_prefix("gfx").is_some_and(|r| {
        !r.is_empty()
            && r.bytes().all(|c| c.is_ascii_hexdigit())
            && r.bytes().any(|c| c.is_ascii_digit())
    }) || stem
        .strip_prefix("GFX")
        .is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()));
    if !arch && !STEMS.contains(&stem) {
        return None;
    }
    // only the trailing underscores are off: the leading ones are the compiler's two
    if w.len() - w.trim_start_matches('_').len() != 2 {
        return None;
    }
    Some(format!("__{stem}__"))
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__gfx") || cx.has("__GFX") || cx.has("__HIP") || cx.has("__CUDA")) {
        return;
    }
    for m in cx.src.cond_macros() {
        let w = m.name;
        let Some(right) = correct(w) else {
            continue;
        };
        let msg = format!(
                "`{w}` is never defined (the macro is `{right}`): the test has the same value on every target, so the branch is taken (or skipped) everywhere instead of on the target it names"
            );
        if let Some((sev, targets)) = cx.ctx.scope_severity(&META) {
            cx.report_span(
                &META,
                sev,
                targets,
                m.start,
                m.start + w.len(),
                msg,
                &format!("spell it `{right}`"),
            );
        }
    }
}
