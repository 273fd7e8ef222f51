//! `cuda-arch-gate-no-amd-path`: a `__CUDA_ARCH__` test around most of a kernel or device
//! function body with no AMD path: HIP never defines `__CUDA_ARCH__`, so on AMD the body is
//! compiled out (or the `#else`, often the host path, is compiled into the kernel).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Platform;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "cuda-arch-gate-no-amd-path",
    summary: "`__CUDA_ARCH__` test around a kernel or device function body with no AMD path",
    what: "Finds `#if __CUDA_ARCH__ >= N`, `#ifdef __CUDA_ARCH__` and `#if defined(__CUDA_ARCH__)` inside a \
kernel or device function whose guarded branch holds most of the body, when the condition has no AMD term \
(`|| defined(__HIP_DEVICE_COMPILE__)`). With no `#else` the body is empty on AMD; with an `#else` after a \
plain `#ifdef __CUDA_ARCH__` (the device/host split) the AMD device pass compiles the host branch. Also \
finds, outside functions, a plain `#ifdef __CUDA_ARCH__` / `#else` that gives a function-like macro a device \
and a host definition (a warning), and, in a HIP-only file (`.hip`, or HIP headers and no CUDA header), a `__CUDA_ARCH__` test with an `#else`: never true in an AMD compilation, so AMD never compiles its first \
branch (a warning that names the branch AMD compiles; the first branch is called dead only with no NVIDIA target \
in scope, since HIP on the NVIDIA platform compiles through nvcc, which defines `__CUDA_ARCH__`). A group with an explicit AMD \
alternative (`#elif defined(__HIP_PLATFORM_AMD__)`, `__HIP__`, `__HIPCC__`, an AMD architecture) gives AMD its \
path and is left alone. Outside \
kernels it finds a `__CUDA_ARCH__ < N` test that AMD compilations reach (HIP leaves the macro undefined, so the \
test reads `0 < N` and AMD builds the branch meant for NVIDIA GPUs older than `N`; in host code it is true in \
every host pass), and `__device__` functions defined only under a `__CUDA_ARCH__` test at file scope and called \
from code AMD compiles (the HIP device pass never sees the definition).",
    why: "HIP (clang `-x hip`, hipcc) never defines `__CUDA_ARCH__`, in the device pass either: checked with \
`clang-19 -x hip --cuda-device-only -E -dM`. A kernel whose body is under such a test compiles to an empty \
kernel on AMD: it launches, returns at once and leaves its output unwritten, with no error. Under a device/host \
split the kernel runs the host code path (a host assert, a `printf`, a slow emulation).",
    example: "__global__ void k(float* y, const float* x) {\n#if __CUDA_ARCH__ >= 700\n    int i = threadIdx.x;\n    y[i] = x[i] * 2.f;\n#endif\n}",
    use_instead: "__global__ void k(float* y, const float* x) {\n#if __CUDA_ARCH__ >= 700 || defined(__HIP_DEVICE_COMPILE__)\n    int i = threadIdx.x;\n    y[i] = x[i] * 2.f;\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !cx.has("__CUDA_ARCH__") {
        return;
    }
    check_file_scope(cx);
    check_less_than(cx);
    check_device_defs(cx);
    if cx.src.funcs.is_empty() {
        return;
    }
    let src = cx.src;
    let amd_alt = amd_alternatives(src);
    for (bi, br, g) in nvidia_gates(src) {
        if g.func == 0 {
            continue;
        }
        // `#elif defined(__HIP_PLATFORM_AMD__)` (or `__HIP__`, `__HIPCC__`, an AMD
        // architecture): the author gave AMD its own path
        if amd_alt.get(br.group as usize).copied().unwrap_or(false) {
            continue;
        }
        let cond = src.cond_code(br);
        if !cond.contains("__CUDA_ARCH__") || cond.contains("HIP") || cond.contains("AMD") {
            continue;
        }
        let plain = {
            let t = cond.trim_start_matches('#').trim_start();
            let t = t
                .trim_start_matches("ifdef")
                .trim_start_matches("if")
                .trim();
            matches!(
                t,
                "__CUDA_ARCH__" | "defined(__CUDA_ARCH__)" | "defined __CUDA_ARCH__"
            )
        };
        if g.has_alternative && !plain {
            // `#if __CUDA_ARCH__ >= N` fast path / `#else` portable path: AMD runs the latter,
            // which is meant in a file both vendors compile; a HIP-only file never takes the
            // first branch, so the code under it is dead where the file is built
            // (HIP on the NVIDIA platform compiles through nvcc, which defines `__CUDA_ARCH__`:
            // with an NVIDIA target in scope the first branch is live there, not dead)
            if cx.hip_file() {
                let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
                if !targets.is_empty() {
                    let taken = amd_taken(cx, bi);
                    let nv = cx.ctx.has_vendor(kplan_kb::Vendor::Nvidia);
                    let msg = if nv {
                        format!("`{}` in a HIP file is never true in an AMD compilation (HIP does not define `__CUDA_ARCH__`; only HIP's NVIDIA platform, through nvcc, compiles the first branch): AMD compiles {taken}", cond.trim())
                    } else {
                        format!("`{}` in a HIP-only file built for AMD only is never true (HIP does not define `__CUDA_ARCH__`): the first branch is dead code and AMD compiles {taken}", cond.trim())
                    };
                    cx.report_span(
                        &META,
                        Severity::Warning,
                        targets,
                        br.cond.0 as usize,
                        br.cond.1 as usize,
                        msg,
                        "test what the branch needs on AMD (an architecture macro such as `__gfx90a__`, a feature macro, or `__HIP_DEVICE_COMPILE__`), or remove the dead branch",
                    );
                }
            }
            continue;
        }
        let Some(f) = src.funcs.get(g.func as usize - 1) else {
            continue;
        };
        // an optional fast path compiled out of a device helper is often meant; an empty
        // kernel is not
        if !g.has_alternative && f.kind != crate::lex::FnKind::Global {
            continue;
        }
        let (open, close) = (f.open as usize, (f.close as usize).min(src.toks.len()));
        let body = close.saturating_sub(open + 1);
        if body < 8 {
            continue;
        }
        // tokens of the body inside this branch
        let inside = (open + 1..close)
            .filter(|&i| src.within(src.toks[i].branch, bi as u32))
            .count();
        if inside * 2 < body && !(g.has_alternative && plain) {
            continue;
        }
        let msg = if g.has_alternative {
            format!("`{}` splits device from host code, but HIP's device pass does not define `__CUDA_ARCH__`: on AMD the kernel compiles the host branch", cond.trim())
        } else {
            format!("`{}` holds most of this function's body and HIP never defines `__CUDA_ARCH__`: on AMD the body is compiled out", cond.trim())
        };
        let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
        if targets.is_empty() {
            continue;
        }
        cx.report_span(
            &META,
            META.severity,
            targets,
            br.cond.0 as usize,
            br.cond.1 as usize,
            msg,
            "add the AMD device pass to the condition (`|| defined(__HIP_DEVICE_COMPILE__)`) or give AMD its own branch",
        );
    }
}

/// The first branches of the `#if` groups whose condition is an NVIDIA test (`__CUDA_ARCH__`,
/// ...), live, outside include guards and outside regions only NVIDIA compiles (AMD never
/// sees a group there), each with its index and group.
fn nvidia_gates<'s>(
    src: &'s crate::lex::Src<'_>,
) -> impl Iterator<Item = (usize, &'s crate::lex::Branch, &'s crate::lex::Group)> + 's {
    src.branches
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(move |(bi, br)| {
            if br.is_alternative || br.platform != Platform::Nvidia || br.dead {
                return None;
            }
            let g = src.groups.get(br.group as usize)?;
            (!g.include_guard && src.branch_platform(br.parent) != Platform::Nvidia)
                .then_some((bi, br, g))
        })
}

/// Per `#if` group: whether an `#elif` of it names the AMD compilation (a condition on
/// `__HIP_PLATFORM_AMD__`, `__HIP__`, `__HIPCC__`, `__HIP_DEVICE_COMPILE__`, an AMD
/// architecture). One pass over the branches.
fn amd_alternatives(src: &crate::lex::Src) -> Vec<bool> {
    let mut out = vec![false; src.groups.len()];
    for br in src.branches.iter().skip(1) {
        if !br.is_alternative || br.dead {
            continue;
        }
        let cond = src.cond_text(br);
        // (an `#else` is not an explicit AMD path: it is what HIP's host pass compiles too)
        let names_amd = crate::lex::cond_tokens_pub(cond).iter().any(|w| {
            w.contains("HIP")
                || w.contains("AMD")
                || w.contains("ROCM")
                || w.contains("gfx")
                || w.contains("GFX")
        });
        if names_amd {
            if let Some(slot) = out.get_mut(br.group as usize) {
                *slot = true;
            }
        }
    }
    out
}

/// The branch of branch `first`'s group that an AMD device pass compiles: the first
/// alternative whose condition holds for the AMD targets in scope, named by its directive.
fn amd_taken(cx: &Cx, first: usize) -> String {
    let src = cx.src;
    let Some(br) = src.branches.get(first) else {
        return "the first alternative that holds there".to_string();
    };
    let passes = crate::rules::target_cond::amd_passes(cx);
    for sib in src.branches.iter().skip(first + 1) {
        if sib.group != br.group || !sib.is_alternative {
            continue;
        }
        let text = src.cond_code(sib);
        let holds: Vec<Option<bool>> = passes
            .iter()
            .map(|p| crate::rules::target_cond::directive_holds(cx, text, p))
            .collect();
        if !holds.is_empty() && holds.iter().all(|h| *h == Some(true)) {
            return format!(
                "`{text}` (line {})",
                src.lines.line_col_u32(sib.cond.0 as usize).0
            );
        }
        if holds.iter().any(|h| h.is_none()) {
            break;
        }
    }
    "the first alternative that holds there".to_string()
}

/// `#ifdef __CUDA_ARCH__` / `#define M(...) device form` / `#else` / `#define M(...) host form`
/// outside any function: the device/host split of a macro. HIP's device pass takes the host
/// form.
fn check_file_scope(cx: &mut Cx) {
    let src = cx.src;
    let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
    if targets.is_empty() || src.defines.is_empty() {
        return;
    }
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for (bi, br, g) in nvidia_gates(src) {
        if g.func != 0 || !g.has_alternative {
            continue;
        }
        let cond = src.cond_text(br);
        let words = crate::lex::cond_tokens_pub(cond);
        let plain = matches!(
            words.as_slice(),
            ["#", "ifdef", "__CUDA_ARCH__"]
                | ["#", "if", "defined", "(", "__CUDA_ARCH__", ")"]
                | ["#", "if", "defined", "__CUDA_ARCH__"]
        );
        if !plain {
            continue;
        }
        // function-like macros with a body on both sides (`ASSERT(x)`: device form / host
        // form); an object-like switch (`ARCH 0`) or an empty host form is a choice, not a split
        let split = |d: &&crate::lex::Define| d.function_like && d.body.1 > d.body.0;
        let name_of = |d: &crate::lex::Define| {
            src.text
                .get(d.name_start as usize..d.name_end as usize)
                .unwrap_or("")
        };
        let device: Vec<&str> = src
            .defines
            .iter()
            .filter(|d| d.branch as usize == bi)
            .filter(split)
            .map(name_of)
            .collect();
        let host: Vec<&str> = src
            .defines
            .iter()
            .filter(|d| {
                src.branches
                    .get(d.branch as usize)
                    .is_some_and(|b| b.group == br.group && b.is_alternative)
            })
            .filter(split)
            .map(name_of)
            .collect();
        let both: Vec<&str> = device
            .iter()
            .copied()
            .filter(|n| host.contains(n))
            .take(3)
            .collect();
        if both.is_empty() {
            continue;
        }
        let names = both
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        hits.push((br.cond.0 as usize, br.cond.1 as usize, format!("`#ifdef __CUDA_ARCH__` chooses the device definition of {names}, but HIP's device pass does not define `__CUDA_ARCH__`: AMD kernels get the host definition")));
    }
    cx.report_spans(
        &META,
        Severity::Warning,
        &targets,
        hits,
        "test the device pass of both compilers: `#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)`",
    );
}

/// The `__CUDA_ARCH__ < N` / `<= N` comparison in a directive's words, when there is one.
fn less_than_arch(words: &[&str]) -> Option<usize> {
    (0..words.len().saturating_sub(2)).find(|&k| {
        words[k] == "__CUDA_ARCH__"
            && matches!(words[k + 1], "<" | "<=")
            && words[k + 2]
                .bytes()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
    })
}

/// `#if __CUDA_ARCH__ < 700` reached by AMD compilations: HIP leaves `__CUDA_ARCH__`
/// undefined, the preprocessor reads it as 0, and AMD compiles the branch written for old
/// NVIDIA GPUs (outside device code the test is also true in NVIDIA's host pass).
fn check_less_than(cx: &mut Cx) {
    let src = cx.src;
    let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
    if targets.is_empty() {
        return;
    }
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for br in src.branches.iter().skip(1) {
        if br.is_alternative || br.dead || br.reach & crate::lex::pass::AMD == 0 {
            continue;
        }
        let Some(g) = src.groups.get(br.group as usize) else {
            continue;
        };
        if g.include_guard {
            continue;
        }
        let cond = src.cond_text(br);
        if !cond.contains("__CUDA_ARCH__") {
            continue;
        }
        let words = crate::lex::cond_tokens_pub(cond);
        if words.iter().any(|w| {
            w.contains("HIP") || w.contains("AMD") || w.contains("ROCM") || w.contains("gfx")
        }) {
            continue;
        }
        let Some(k) = less_than_arch(&words) else {
            continue;
        };
        // `defined(__CUDA_ARCH__) && __CUDA_ARCH__ < N`, negated or not: the author tells the
        // passes without the macro apart
        if words.windows(3).any(|w| {
            w[0] == "defined" && (w[1] == "__CUDA_ARCH__" || w[1] == "(" && w[2] == "__CUDA_ARCH__")
        }) {
            continue;
        }
        let test = format!("__CUDA_ARCH__ {} {}", words[k + 1], words[k + 2]);
        let host = g.func == 0 && br.reach & crate::lex::pass::NV_HOST != 0;
        let msg = if host {
            format!("`{test}` is true wherever `__CUDA_ARCH__` is undefined: in every host pass and in every HIP pass, so AMD (and NVIDIA host code) takes the branch meant for NVIDIA GPUs older than the bound")
        } else {
            format!("`{test}` reads `__CUDA_ARCH__` as 0 under HIP, which never defines it: AMD compiles the branch meant for NVIDIA GPUs older than the bound")
        };
        hits.push((br.cond.0 as usize, br.cond.1 as usize, msg));
    }
    cx.report_spans(
        &META,
        Severity::Warning,
        &targets,
        hits,
        "add `defined(__CUDA_ARCH__) &&` to the test and give AMD (and host code) the path it needs, or choose by a runtime or AMD-architecture test",
    );
}

/// `#ifdef __CUDA_ARCH__` at file scope around `__device__` function definitions, when the
/// file calls them from code AMD compiles: HIP's device pass never defines `__CUDA_ARCH__`,
/// so the definitions are missing there and the call does not compile (or resolves to a host
/// form in the `#else`). `__CUDA_ARCH__ < N` polyfills for old NVIDIA parts are left out.
fn check_device_defs(cx: &mut Cx) {
    let src = cx.src;
    let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
    if targets.is_empty() || src.funcs.is_empty() {
        return;
    }
    // (branch, names of the device functions defined in it)
    let mut gates: Vec<(u32, Vec<&str>)> = Vec::new();
    for (bi, br, g) in nvidia_gates(src) {
        if g.func != 0 {
            continue;
        }
        let cond = src.cond_text(br);
        let words = crate::lex::cond_tokens_pub(cond);
        if !words.contains(&"__CUDA_ARCH__")
            || less_than_arch(&words).is_some()
            || words.iter().any(|w| {
                w.contains("HIP") || w.contains("AMD") || w.contains("ROCM") || w.contains("gfx")
            })
        {
            continue;
        }
        let names: Vec<&str> = src
            .funcs
            .iter()
            .filter(|f| {
                src.toks
                    .get(f.marker as usize)
                    .is_some_and(|t| src.within(t.branch, bi as u32))
            })
            .filter_map(|f| f.name.map(|n| src.s(n as usize)))
            .filter(|n| !n.is_empty())
            .collect();
        if !names.is_empty() {
            gates.push((bi as u32, names));
        }
    }
    if gates.is_empty() {
        return;
    }
    // a name also defined outside every gate (another overload, the generic template of a
    // specialization, the AMD or host form) still resolves on AMD
    let gated: std::collections::HashSet<u32> = gates.iter().map(|(b, _)| *b).collect();
    let elsewhere: std::collections::HashSet<&str> = src
        .funcs
        .iter()
        .filter(|f| {
            src.toks.get(f.marker as usize).is_some_and(|t| {
                !gated.iter().any(|&b| src.within(t.branch, b))
                    && src.branch_platform(t.branch) != Platform::Nvidia
            })
        })
        .filter_map(|f| f.name.map(|n| src.s(n as usize)))
        .collect();
    for (_, names) in gates.iter_mut() {
        names.retain(|n| !elsewhere.contains(n));
    }
    // one pass: calls of those names from code AMD compiles, outside the gate itself
    let mut by_name: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (gi, (_, names)) in gates.iter().enumerate() {
        for n in names {
            by_name.entry(n).or_default().push(gi);
        }
    }
    let mut used: Vec<Option<&str>> = vec![None; gates.len()];
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(crate::lex::Tk::Ident) || !src.is(i + 1, "(") {
            continue;
        }
        let w = src.s(i);
        let Some(gis) = by_name.get(w) else {
            continue;
        };
        for &gi in gis {
            let b = gates[gi].0;
            if used[gi].is_none()
                && !src.within(src.toks[i].branch, b)
                && src.platform(i) != Platform::Nvidia
                && src.in_device(i)
            {
                used[gi] = Some(w);
            }
        }
    }
    for ((b, _), u) in gates.iter().zip(used) {
        let Some(name) = u else {
            continue;
        };
        let Some(br) = src.branches.get(*b as usize) else {
            continue;
        };
        let cond = src.cond_code(br);
        let msg = format!("`{name}` is defined only under `{cond}`, which HIP's device pass never defines, but device code AMD compiles calls it: on AMD the definition is missing");
        cx.report_span(
            &META,
            META.severity,
            targets.clone(),
            br.cond.0 as usize,
            br.cond.1 as usize,
            msg,
            "test the device pass of both compilers: `#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)`",
        );
    }
}
