//! `platform-ifdef-in-kernel`: vendor platform conditionals inside kernel and device function
//! bodies, outside the portability header.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "platform-ifdef-in-kernel",
    summary: "vendor platform conditional inside a kernel or device function body",
    what: "Finds `#if`/`#ifdef`/`#elif` tests of vendor platform macros (`__HIP_PLATFORM_AMD__`, `USE_ROCM`, \
`__HIPCC__`, `__NVCC__`, `__gfx942__`, ...) inside `__global__`/`__device__` function bodies of files other than \
the project's portability header. `__CUDA_ARCH__` level checks are not reported.",
    why: "Platform branches scattered through kernels drift apart: one side gets fixed, the other is never \
compiled in CI. Keeping them in one header (a named helper per difference) keeps every kernel single-source.",
    example: "__global__ void k(float* x) {\n#if defined(__HIP_PLATFORM_AMD__)\n    x[0] = __builtin_amdgcn_readfirstlane(1);\n#else\n    x[0] = 1;\n#endif\n}",
    use_instead: "// portability header: KPLAN_READFIRSTLANE(v) defined once per platform\n__global__ void k(float* x) {\n    x[0] = KPLAN_READFIRSTLANE(1);\n}",
    severity: Severity::Note,
    scope: Scope::MultiVendor,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if cx.is_header {
        return;
    }
    let src = cx.src;
    for d in &src.directives {
        if !d.vendor_test || d.func == 0 {
            continue;
        }
        let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
            return;
        };
        let text = src
            .text
            .get(d.start as usize..d.end as usize)
            .unwrap_or("")
            .trim_end();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_end_matches('\\')
            .trim();
        let fname = src
            .funcs
            .get(d.func as usize - 1)
            .and_then(|f| f.name)
            .map(|t| src.s(t as usize))
            .unwrap_or("");
        let msg = if fname.is_empty() {
            format!("platform conditional `{first}` inside a device function body")
        } else {
            format!("platform conditional `{first}` inside the body of `{fname}`")
        };
        let end = d.start as usize + text.lines().next().map(str::len).unwrap_or(0);
        cx.report_span(
            &META,
            sev,
            targets,
            d.start as usize,
            end,
            msg,
            "move the platform difference into the portability header behind a named helper",
        );
    }
}
