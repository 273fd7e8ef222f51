//! `wavefront-size-macro`: `__AMDGCN_WAVEFRONT_SIZE` as the source of truth for the warp width.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "wavefront-size-macro",
    summary: "`__AMDGCN_WAVEFRONT_SIZE` used as the warp width",
    what: "Finds uses of `__AMDGCN_WAVEFRONT_SIZE` / `__AMDGCN_WAVEFRONT_SIZE__`, in code and in `#if` conditions, \
and host functions that use a warp-width macro the file defines from device-only architecture macros \
(`#if defined(__GFX9__)` / `#define WARP_SIZE 64` / `#else` / `#define WARP_SIZE 32`).",
    why: "The macro is the device pass's width only. clang in HIP mode defines it in the host pass too, as 64 \
whatever the target (`clang -x hip --cuda-host-only --offload-arch=gfx1100 -E -dM` shows \
`__AMDGCN_WAVEFRONT_SIZE 64`), so host code that sizes launches or buffers from it, or an `#if` on it that the \
host pass evaluates, silently gets 64 for wave32 RDNA parts. The macro is also deprecated (ROCm 6.3 release \
notes) and being removed from clang, so device code built on it stops compiling or falls to a fallback. The \
same holds for `__GFX9__`, `__gfx942__` and `__HIP_DEVICE_COMPILE__`, which the host pass does not define at \
all: a width chosen from them is the fallback (32) in host code while kernels on MI-series GPUs run 64 \
lanes; launch sizes and dispatch decisions made on the host then disagree with the kernels.",
    example: "#define WARP_SIZE __AMDGCN_WAVEFRONT_SIZE",
    use_instead: "// device code: the architecture families, in device passes only\n#if defined(__HIP_DEVICE_COMPILE__)\n#if defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)\n#define WARP_SIZE 32\n#else\n#define WARP_SIZE 64\n#endif\n#endif\n// host code: the device property\nint ws = prop.warpSize;",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if cx.is_header {
        return;
    }
    check_host_uses(cx);
    if !cx.has("__AMDGCN_WAVEFRONT_SIZE") {
        return;
    }
    let src = cx.src;
    let help = "in device code choose the width from the architecture families (`__GFX10__`, `__GFX11__`, `__GFX12__`: 32; else 64) under `__HIP_DEVICE_COMPILE__`; on the host, query `hipDeviceProp_t::warpSize`";
    for i in 0..src.toks.len() {
        let w = src.s(i);
        if w == "__AMDGCN_WAVEFRONT_SIZE" || w == "__AMDGCN_WAVEFRONT_SIZE__" {
            let msg = match token_context(cx, i) {
                Ctx::Device => format!("`{w}` is deprecated and being removed from clang: device code built on it stops compiling or takes a fallback width"),
                Ctx::Host => format!("`{w}` is 64 in every host pass, also for wave32 targets such as gfx1100: this host code silently sees 64 (the macro is also deprecated)"),
                Ctx::Unknown => format!("`{w}` is the device pass's width only: the host pass defines it as 64 for every target (gfx1100 too), and the macro is deprecated"),
            };
            cx.report(&META, i, i, msg, help);
        }
    }
    for d in &src.directives {
        let text = src.text.get(d.start as usize..d.end as usize).unwrap_or("");
        if let Some(p) = text.find("__AMDGCN_WAVEFRONT_SIZE") {
            let s = d.start as usize + p;
            let len = if text[p..].starts_with("__AMDGCN_WAVEFRONT_SIZE__") {
                25
            } else {
                23
            };
            // the directive reaches a host pass unless an enclosing condition is device-only
            let host = d.func == 0 && directive_reaches_host(cx, d.start);
            let msg = if host {
                "`__AMDGCN_WAVEFRONT_SIZE` tested in a preprocessor condition the host pass also evaluates, where it is 64 for every target (gfx1100 too): host code takes the wave64 branch; the macro is also deprecated"
            } else {
                "`__AMDGCN_WAVEFRONT_SIZE` tested in a device-only preprocessor condition: the macro is deprecated and being removed from clang"
            };
            if let Some((sev, t)) = cx.ctx.scope_severity(&META) {
                cx.report_span(&META, sev, t, s, s + len, msg.to_string(), help);
            }
        }
    }
}

/// Where a token's code runs.
enum Ctx {
    /// A device function body, or a branch only device passes reach.
    Device,
    /// A host function body reached by the host pass.
    Host,
    /// A macro body or a declaration whose use decides.
    Unknown,
}

fn token_context(cx: &Cx, i: usize) -> Ctx {
    let src = cx.src;
    let Some(t) = src.toks.get(i) else {
        return Ctx::Unknown;
    };
    let reach = src
        .branches
        .get(t.branch as usize)
        .map_or(crate::lex::pass::ALL, |b| b.reach);
    if src.in_device(i) || reach & crate::lex::pass::AMD_HOST == 0 {
        Ctx::Device
    } else if in_host_function(cx, i) {
        Ctx::Host
    } else {
        Ctx::Unknown
    }
}

/// Whether the directive starting at byte `start` sits in code the HIP host pass reads.
fn directive_reaches_host(cx: &Cx, start: u32) -> bool {
    let src = cx.src;
    // branches are in file order: the one this directive opens, then its parent
    let Ok(k) =
        src.branches[1.min(src.branches.len())..].binary_search_by_key(&start, |b| b.cond.0)
    else {
        return true;
    };
    let br = &src.branches[k + 1];
    src.branches
        .get(br.parent as usize)
        .map_or(true, |p| p.reach & crate::lex::pass::AMD_HOST != 0)
}

/// An `#if` condition that only device compilation can make true.
fn device_only_condition(c: &str) -> bool {
    c.contains("__GFX")
        || c.contains("__gfx")
        || c.contains("__AMDGCN_WAVEFRONT_SIZE")
        || c.contains("__HIP_DEVICE_COMPILE__")
}

/// Warp-width macros this file defines under a device-only condition (either branch of it).
fn device_only_widths<'a>(cx: &Cx<'_, 'a, '_>) -> Vec<&'a str> {
    let src = cx.src;
    let mut out: Vec<&str> = Vec::new();
    for d in &src.defines {
        let name = src
            .text
            .get(d.name_start as usize..d.name_end as usize)
            .unwrap_or("");
        let l = name.to_ascii_lowercase();
        if !(l.contains("warp") || l.contains("wave")) || out.contains(&name) {
            continue;
        }
        let mut b = d.branch;
        let mut guard = 0;
        let mut hit = false;
        while b != 0 && guard < 10_000 && !hit {
            let Some(br) = src.branches.get(b as usize) else {
                break;
            };
            // every branch of the group: an `#else` takes its meaning from the `#if`
            for sib in src.branches.iter().filter(|x| x.group == br.group) {
                let c = src
                    .text
                    .get(sib.cond.0 as usize..sib.cond.1 as usize)
                    .unwrap_or("");
                if device_only_condition(c) {
                    hit = true;
                }
            }
            b = br.parent;
            guard += 1;
        }
        if hit {
            out.push(name);
        }
    }
    out
}

/// Token `i` sits in the body of a host function: outside device code, inside braces whose
/// opening is preceded by a parameter list.
pub fn in_host_function(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    if t.func != 0 || t.depth == 0 || t.flags & crate::lex::IN_DEFINE != 0 {
        return false;
    }
    let mut k = i;
    let mut steps = 0;
    while k > 0 && steps < 200_000 {
        k -= 1;
        steps += 1;
        if src.is(k, "{") && src.mate(k).is_some_and(|m| m > i) {
            let mut p = k;
            while p > 0 && matches!(src.s(p - 1), "const" | "noexcept" | "override" | "final") {
                p -= 1;
            }
            if p > 0 && src.is(p - 1, ")") {
                // a function body, unless it is a control statement's block
                let open = src.mate(p - 1).unwrap_or(0);
                if open > 0
                    && matches!(src.s(open - 1), "if" | "for" | "while" | "switch" | "catch")
                {
                    continue;
                }
                return true;
            }
            if matches!(
                src.s(p.saturating_sub(1)),
                "else" | "do" | "try" | ";" | "{" | "}"
            ) {
                continue;
            }
            return false;
        }
    }
    false
}

fn check_host_uses(cx: &mut Cx) {
    if !(cx.has("__GFX")
        || cx.has("__gfx")
        || cx.has("__HIP_DEVICE_COMPILE__")
        || cx.has("__AMDGCN_WAVEFRONT_SIZE"))
    {
        return;
    }
    let names: Vec<String> = device_only_widths(cx)
        .into_iter()
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return;
    }
    let src = cx.src;
    let mut reported: Vec<usize> = Vec::new();
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(crate::lex::Tk::Ident) || !names.iter().any(|n| src.is(i, n)) {
            continue;
        }
        if cx.nv_only(i) || !in_host_function(cx, i) {
            continue;
        }
        let line = src.line(i) as usize;
        if reported.contains(&line) {
            continue;
        }
        reported.push(line);
        let msg = format!("`{}` is chosen from device-only architecture macros, but this host code sees only the host pass's fallback value", src.s(i));
        cx.report(&META, i, i, msg, "on the host, query the device (`hipDeviceProp_t::warpSize`, `at::cuda::warp_size()`); keep the compile-time width for device code");
    }
}
