//! `unbalanced-conditional`: an `#if` never closed, or an `#endif`/`#else` with no `#if`.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Unmatched;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "unbalanced-conditional",
    summary: "preprocessor conditional without its partner (`#if` without `#endif`, `#endif` or `#else` without `#if`)",
    what: "Finds `#if`/`#ifdef`/`#ifndef` directives that are never closed by `#endif`, and `#endif`, \
`#else` or `#elif` directives with no open `#if`. The finding points at the unmatched directive.",
    why: "The compiler rejects the file, or, when the directive sits in a header that another file closes, the \
platform branches are not where they appear to be. A scanner that trusted the broken structure would read \
everything after an unclosed `#if` as guarded for one platform (or as dead code) and report nothing there; \
kplan reports the directive and reads the rest of the file as if the unmatched directive were not there.",
    example: "#if defined(__HIP_PLATFORM_AMD__)\n#define WARP 64\n__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }",
    use_instead: "#if defined(__HIP_PLATFORM_AMD__)\n#define WARP 64\n#endif\n__global__ void k(int* x) { x[threadIdx.x % warpSize] = 0; }",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    if src.unbalanced.is_empty() {
        return;
    }
    let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
        return;
    };
    for u in &src.unbalanced {
        let (s, e) = (u.start as usize, u.end as usize);
        let directive = src
            .text
            .get(s..e)
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or("#");
        let (msg, help) = match u.kind {
            Unmatched::If => (
                format!("`{directive}` is never closed by `#endif`"),
                "add the missing `#endif`; the rest of the file is scanned as if this directive were not there",
            ),
            Unmatched::Endif | Unmatched::Else => (
                format!("`{directive}` without a matching `#if`"),
                "remove the stray directive or restore its `#if`; it is ignored by the scan",
            ),
        };
        // the directive name only (`#endif`), not a long condition
        let end = (s + directive.len()).min(e.max(s));
        cx.report_span(&META, sev, targets.clone(), s, end, msg, help);
    }
}
