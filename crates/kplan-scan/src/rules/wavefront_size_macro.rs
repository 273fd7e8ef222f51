//! `wavefront-size-macro`: `__AMDGCN_WAVEFRONT_SIZE` as the source of truth for the warp width.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "wavefront-size-macro",
    summary: "`__AMDGCN_WAVEFRONT_SIZE` used as the warp width",
    what: "Finds uses of `__AMDGCN_WAVEFRONT_SIZE` / `__AMDGCN_WAVEFRONT_SIZE__`, in code and in `#if` conditions.",
    why: "The macro is defined only while compiling device code, so host code sizing launches or buffers from it \
sees a different (or no) value; ROCm deprecates it in favour of `warpSize` at run time. As the only source of \
truth it gives wrong sizes on the host and breaks when it disappears.",
    example: "#define WARP_SIZE __AMDGCN_WAVEFRONT_SIZE",
    use_instead: "// device code: warpSize at run time; host code: hipDeviceProp_t::warpSize\nint ws = prop.warpSize;",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !cx.has("__AMDGCN_WAVEFRONT_SIZE") {
        return;
    }
    if cx.is_header {
        return;
    }
    let src = cx.src;
    let help = "use `warpSize` in device code and the device property (`hipDeviceProp_t::warpSize`) on the host";
    for i in 0..src.toks.len() {
        let w = src.s(i);
        if w == "__AMDGCN_WAVEFRONT_SIZE" || w == "__AMDGCN_WAVEFRONT_SIZE__" {
            let msg = format!("`{w}` is a device-only, deprecated macro used as the warp width");
            cx.report(&META, i, i, msg, help);
        }
    }
    for d in &src.directives {
        let text = src.text.get(d.start as usize..d.end as usize).unwrap_or("");
        if let Some(p) = text.find("__AMDGCN_WAVEFRONT_SIZE") {
            let s = d.start as usize + p;
            let len = if text[p..].starts_with("__AMDGCN_WAVEFRONT_SIZE__") { 25 } else { 23 };
            if let Some((sev, t)) = cx.ctx.scope_severity(&META) {
                cx.report_span(&META, sev, t, s, s + len, "`__AMDGCN_WAVEFRONT_SIZE` tested in a preprocessor condition is defined only for device code".to_string(), help);
            }
        }
    }
}
