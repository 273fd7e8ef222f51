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
plain `#ifdef __CUDA_ARCH__` (the device/host split) the AMD device pass compiles the host branch.",
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
    if !cx.has("__CUDA_ARCH__") || cx.src.funcs.is_empty() {
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
            // `#if __CUDA_ARCH__ >= N` fast path / `#else` portable path: AMD runs the latter
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
