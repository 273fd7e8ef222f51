//! `triton-cuda-libdevice`: `triton.language.extra.cuda` (NVIDIA libdevice) used directly.

use crate::diag::Severity;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-cuda-libdevice",
    summary: "`triton.language.extra.cuda` (NVIDIA libdevice) used instead of the backend-neutral `extra.libdevice`",
    what: "Finds imports and uses of `triton.language.extra.cuda` / `tl.extra.cuda` (`libdevice.rsqrt`, `globaltimer`, \
`smid`, ...) in a file with no backend-neutral `triton.language.extra.libdevice` alternative and no backend check.",
    why: "`tl.extra.cuda.libdevice` calls NVIDIA's `__nv_*` device library. On AMD those symbols do not exist and \
the kernel fails to compile or link. `triton.language.extra.libdevice` dispatches to the right library (libdevice on \
NVIDIA, OCML on AMD).",
    example: "from triton.language.extra.cuda.libdevice import rsqrt",
    use_instead: "from triton.language.extra.libdevice import rsqrt",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    // a backend-neutral alternative anywhere in the file (try/except import fallbacks)
    let neutral = (0..src.toks.len()).any(|k| {
        src.is_name(k, "extra")
            && src.s(k + 1) == "."
            && (src.is_name(k + 2, "libdevice") || src.is_name(k + 2, "hip"))
    });
    if neutral {
        return;
    }
    for k in 0..src.toks.len() {
        if !(src.is_name(k, "extra") && src.s(k + 1) == "." && src.is_name(k + 2, "cuda")) {
            continue;
        }
        if cx.guarded(k) {
            continue;
        }
        let a = src.dotted_start(k);
        let mut b = k + 2;
        while src.s(b + 1) == "." && src.kind(b + 2) == Some(crate::python::lex::Kind::Name) {
            b += 2;
        }
        let msg = format!(
            "`{}` is NVIDIA's libdevice; it does not exist on AMD targets",
            cx.code(a, b)
        );
        cx.report(&META, a, b, msg, "use `triton.language.extra.libdevice`, which maps to libdevice on NVIDIA and OCML on AMD");
    }
}
