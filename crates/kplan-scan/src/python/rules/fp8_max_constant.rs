//! `triton-fp8-max-constant`: 448 (e4m3fn max) or 240 (e4m3fnuz max) hard-coded as the fp8 range.

use super::fp8_encoding::{is_mx_name, mx_path, only};
use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-fp8-max-constant",
    summary: "fp8 range hard-coded as 448 (e4m3fn) or 240 (e4m3fnuz)",
    what: "In files that use fp8, finds the literals 448 and 240 on lines that scale, clamp or name a maximum: \
448 is the largest e4m3fn (OCP) value, 240 the largest e4m3fnuz (FNUZ) value. 448 is reported when a FNUZ-only \
target (gfx942) is in scope, 240 when an OCP-only target (NVIDIA sm_89+, gfx950, gfx12) is.",
    why: "Quantisation scales computed as `amax / 448` saturate on gfx942, where e4m3fnuz tops out at 240: values \
between 240 and 448 become NaN or clamp, and accuracy drops silently. A hard-coded 240 wastes almost half of the OCP \
range on gfx950, gfx12 and NVIDIA.",
    example: "FP8_MAX = 448.0\nscale = amax / FP8_MAX",
    use_instead: "FP8_MAX = torch.finfo(fp8_dtype).max  # 448 for e4m3fn, 240 for e4m3fnuz\nscale = amax / FP8_MAX",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["fp8-ocp", "fp8-fnuz"],
};

pub fn check(cx: &mut Cx) {
    if !cx.fp8_context {
        return;
    }
    let src = cx.src;
    let mx_file = mx_path(cx.path);
    for k in 0..src.toks.len() {
        let Some(v) = src.number(k) else { continue };
        let ocp = if v == 448.0 {
            true
        } else if v == 240.0 {
            false
        } else {
            continue;
        };
        let Some(line) = src.line_of(k) else { continue };
        let names = |words: &[&str]| {
            (line.first..line.end).any(|i| {
                src.kind(i) == Some(Kind::Name) && {
                    let l = src.s(i).to_ascii_lowercase();
                    words.iter().any(|w| l.contains(w))
                }
            })
        };
        // an fp8 word on the line, or a range word with a float literal (448.0) or a negated one
        let float_like = src.s(k).contains('.') || src.s(k.wrapping_sub(1)) == "-";
        let about_range = names(&["fp8", "float8", "e4m3", "finfo"])
            || (float_like && names(&["max", "clamp", "clip", "scale", "amax", "sat", "range"]));
        if !about_range || cx.guarded(k) || cx.scope_has_backend_check(k) {
            continue;
        }
        // 448 is the element maximum of OCP microscaling (MXFP8) code, which has no FNUZ form
        if ocp && (mx_file || src.def_at(k).is_some_and(|d| is_mx_name(src.s(d.name)))) {
            continue;
        }
        let targets = only(cx, !ocp);
        if targets.is_empty() {
            continue;
        }
        let msg = if ocp {
            format!(
                "`{}` is the e4m3fn (OCP) maximum; {} use e4m3fnuz, whose maximum is 240",
                src.s(k),
                targets.join(", ")
            )
        } else {
            format!(
                "`{}` is the e4m3fnuz (FNUZ) maximum; {} use OCP e4m3fn, whose maximum is 448",
                src.s(k),
                targets.join(", ")
            )
        };
        cx.report_with(&META, META.severity, targets, k, k, msg, "derive the range from the dtype in use (`torch.finfo(dtype).max`), chosen per architecture");
    }
}
