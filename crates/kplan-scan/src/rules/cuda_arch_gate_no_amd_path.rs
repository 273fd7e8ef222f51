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
and a host definition (a warning), and, in a HIP-only file (`.hip`, or HIP headers and no CUDA header), a \
`__CUDA_ARCH__` test with an `#else`: never true there, so its first branch is dead (a warning).",
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
    if cx.src.funcs.is_empty() {
        return;
    }
    let src = cx.src;
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if br.is_alternative || br.platform != Platform::Nvidia || br.dead {
            continue;
        }
        let Some(g) = src.groups.get(br.group as usize) else {
            continue;
        };
        if g.func == 0 || g.include_guard {
            continue;
        }
        let cond = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        let cond = cond.split("//").next().unwrap_or("");
        let cond = cond.split("/*").next().unwrap_or("").trim();
        if !cond.contains("__CUDA_ARCH__") || cond.contains("HIP") || cond.contains("AMD") {
            continue;
        }
        // the group sits in an NVIDIA-only region already: AMD never sees it
        if src.branch_platform(br.parent) == Platform::Nvidia {
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
            if cx.hip_file() {
                let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
                if !targets.is_empty() {
                    let msg = format!("`{}` in a HIP-only file is never true (HIP does not define `__CUDA_ARCH__`): the first branch is dead code and AMD always compiles the `#else`", cond.trim());
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
            .filter(|&i| {
                let mut b = src.toks[i].branch;
                let mut guard = 0;
                while b != 0 && guard < 1000 {
                    if b as usize == bi {
                        return true;
                    }
                    b = src.branches.get(b as usize).map(|x| x.parent).unwrap_or(0);
                    guard += 1;
                }
                false
            })
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
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if br.is_alternative || br.platform != Platform::Nvidia || br.dead {
            continue;
        }
        let Some(g) = src.groups.get(br.group as usize) else {
            continue;
        };
        if g.func != 0 || g.include_guard || !g.has_alternative {
            continue;
        }
        if src.branch_platform(br.parent) == Platform::Nvidia {
            continue;
        }
        let cond = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
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
    for (s, e, msg) in hits {
        cx.report_span(
            &META,
            Severity::Warning,
            targets.clone(),
            s,
            e,
            msg,
            "test the device pass of both compilers: `#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)`",
        );
    }
}
