//! `hip-platform-macro-removed`: a platform test on a HIP macro that ROCm 6.0 removed
//! (`__HIP_PLATFORM_HCC__`, `__HCC__`, `__HIP_ROCclr__`): current HIP
//! compilers never define it, so the AMD build takes the other branch.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::arch_list_partial_family::cond_idents;

pub static META: RuleMeta = RuleMeta {
    id: "hip-platform-macro-removed",
    summary: "platform test on a HIP macro that ROCm 6.0 removed (`__HIP_PLATFORM_HCC__`, `__HCC__`): the AMD build takes the other branch",
    what: "Finds `#if`/`#elif`/`#ifdef`/`#ifndef` conditions that tell the platform apart only by one of the HIP \
macros ROCm 6.0 removed for the AMD platform (`__HIP_PLATFORM_HCC__`, `__HCC__`, `__HIP_ROCclr__`), when no condition of the same `#if` chain also tests a macro that current HIP defines \
(`__HIP_PLATFORM_AMD__`, `__HIP_PLATFORM_NVIDIA__`, `__HIPCC__`, `__HIP__`, `__HIP_DEVICE_COMPILE__`) and the file \
does not define the removed macro itself (a compatibility shim). A test whose fallback (the `#else` of \
`#ifdef __HCC__`, the body of `#ifndef __HCC__`) holds HIP code (`hip*` calls, `__builtin_amdgcn_*`) is left \
alone: current ROCm takes an AMD path there.",
    why: "The HIP 6.0 changelog (ROCm/clr `CHANGELOG.md`, \"Deprecated And Removed\") removed the Heterogeneous \
Compute platform macros `__HIP_PLATFORM_HCC__`, `__HCC__`, `__HIP_ROCclr__` and `__HIP_PLATFORM_NVCC__`: neither \
the HIP headers nor hipcc define them any more. A test written against them is false on every AMD build with a \
current ROCm, so the AMD path is silently replaced by the CUDA one (`CUDART_VERSION`, a CUDA-only intrinsic, a \
host-only fallback): a compile error at best, the wrong code path at worst. Build systems that still pass \
`-D__HIP_PLATFORM_HCC__` hide the problem until one of them stops.",
    example: "int runtime_version() {\n#if !defined(__HIP_PLATFORM_HCC__)\n  return CUDART_VERSION;\n#else\n  return HIP_VERSION;\n#endif\n}",
    use_instead: "int runtime_version() {\n#if !defined(__HIP_PLATFORM_AMD__)\n  return CUDART_VERSION;\n#else\n  return HIP_VERSION;\n#endif\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The macros ROCm 6.0 removed, and the current macro that replaces each.
fn replacement(w: &str) -> Option<&'static str> {
    match w {
        "__HIP_PLATFORM_HCC__" | "__HCC__" | "__HIP_ROCclr__" => Some("__HIP_PLATFORM_AMD__"),
        _ => None,
    }
}

/// Macros current HIP defines: a chain that tests one of them has a path for current ROCm.
fn current(w: &str) -> bool {
    matches!(
        w,
        "__HIP_PLATFORM_AMD__"
            | "__HIP_PLATFORM_NVIDIA__"
            | "__HIPCC__"
            | "__HIP__"
            | "__HIP_DEVICE_COMPILE__"
            | "__AMDGCN__"
    )
}

/// An identifier of HIP's API or AMD's builtins (`hipMalloc`, `__hip_move_dpp`,
/// `__builtin_amdgcn_readfirstlane`, `HIP_VERSION`).
fn hip_ident(w: &str) -> bool {
    w.starts_with("hip")
        || w.starts_with("__hip")
        || w.starts_with("HIP")
        || w.starts_with("__HIP")
        || w.starts_with("__builtin_amdgcn")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("HCC__") || cx.has("__HIP_ROCclr__")) {
        return;
    }
    let src = cx.src;
    // groups whose chain tests a macro current HIP defines
    let mut modern = vec![false; src.groups.len()];
    for br in src.branches.iter().skip(1) {
        // a current macro gives current ROCm a path only where it is tested positively and not
        // only together with the removed one (`defined(__HIP_PLATFORM_HCC__) &&
        // !defined(__HIP_PLATFORM_NVIDIA__)` is still false on every current AMD build)
        // `!defined(__HCC__) && !defined(__HIPCC__)` is "neither", which the current macro
        // decides alone on a current ROCm: a negated current macro beside a negated removed
        // one counts too
        let text = src.cond_text(br);
        let ids = cond_idents(text);
        let removed_pos = ids
            .iter()
            .any(|&(_, w, neg)| replacement(w).is_some() && !neg);
        let removed_neg = ids
            .iter()
            .any(|&(_, w, neg)| replacement(w).is_some() && neg);
        let with_removed = removed_pos || removed_neg;
        let joined_by_or = text.contains("||");
        if ids.iter().any(|&(_, w, neg)| {
            current(w)
                && ((!neg && (!with_removed || joined_by_or))
                    || (neg && removed_neg && !removed_pos))
        }) {
            if let Some(m) = modern.get_mut(br.group as usize) {
                *m = true;
            }
        }
    }
    let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
        return;
    };
    // branches (with their nested ones) that hold HIP code: the path current ROCm takes is
    // an AMD one when the branch it falls to has it (`#ifdef __HCC__ old API #else hip API`)
    let mut hip_code = vec![false; src.branches.len()];
    for (i, t) in src.toks.iter().enumerate() {
        if src.kind(i) == Some(crate::lex::Tk::Ident) && hip_ident(src.s(i)) {
            let mut b = t.branch as usize;
            let mut guard = 0;
            while b != 0 && guard < 1000 && !hip_code[b] {
                hip_code[b] = true;
                b = src.branches.get(b).map_or(0, |br| br.parent as usize);
                guard += 1;
            }
        }
    }
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if br.dead || modern.get(br.group as usize).copied().unwrap_or(true) {
            continue;
        }
        if src
            .groups
            .get(br.group as usize)
            .is_some_and(|g| g.include_guard)
        {
            continue;
        }
        let s = br.cond.0 as usize;
        let cond = src.cond_text(br);
        for (off, w, negated) in cond_idents(cond) {
            let Some(right) = replacement(w) else {
                continue;
            };
            if src.defines_macro(w) {
                continue;
            }
            // the code current ROCm compiles: this branch under `!defined(X)` / `#ifndef X`,
            // else the alternatives of the chain; HIP code there is the AMD path
            let falls_here = negated
                || cond
                    .trim_start_matches('#')
                    .trim_start()
                    .starts_with("ifndef");
            let fallback_hip = if falls_here {
                hip_code.get(bi).copied().unwrap_or(false)
            } else {
                src.branches
                    .iter()
                    .enumerate()
                    .skip(bi + 1)
                    .filter(|(_, o)| o.group == br.group && o.is_alternative)
                    .any(|(j, _)| hip_code[j])
            };
            if fallback_hip {
                continue;
            }
            let msg = format!(
                "`{w}` was removed in ROCm 6.0 (HIP no longer defines it): with a current ROCm this test is false on every AMD build, which then takes the other branch"
            );
            cx.report_span(
                &META,
                sev,
                targets.clone(),
                s + off,
                s + off + w.len(),
                msg,
                &format!("test `{right}` (or both, for old ROCm releases)"),
            );
        }
    }
}
