//! `triton-dot-tf32`: `tl.dot` forced to TF32, which gfx950 and RDNA reject.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::{Availability, Vendor};

pub const META: RuleMeta = RuleMeta {
    id: "triton-dot-tf32",
    summary: "`tl.dot` with `input_precision=\"tf32\"` (or `allow_tf32=True`) on a target without TF32",
    what: "Finds `tl.dot(...)` calls whose `input_precision` is the literal `\"tf32\"` or `\"tf32x3\"`, or that pass \
`allow_tf32=True`, when a GPU target without a TF32 matrix path is in scope (gfx950, RDNA3).",
    why: "Triton checks the precision against the target: on gfx950 and gfx1100 the allowed values are `ieee`, \
`bf16x3` and `bf16x6`, so the kernel fails to compile there (\"input_precision must be one of ...\"). NVIDIA and \
gfx942 accept it. Leaving the precision to the backend's default keeps one source compiling everywhere.",
    example: "acc = tl.dot(a, b, acc, input_precision=\"tf32\")",
    use_instead: "acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)  # constexpr chosen per target, or omit it",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["tf32-matrix"],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let lacking: Vec<String> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| {
            t.vendor() != Vendor::Cpu
                && cx.ctx.kb.availability("tf32-matrix", t.id()) == Availability::No
                && t.vendor() == Vendor::Amd
        })
        .map(|t| t.id().to_string())
        .collect();
    if lacking.is_empty() {
        return;
    }
    for k in 0..src.toks.len() {
        if !src.is_name(k, "dot") || src.s(k + 1) != "(" || src.s(k.wrapping_sub(1)) != "." {
            continue;
        }
        for (name, vs, ve) in src.kwargs(k + 1) {
            let key = src.s(name);
            let value = src.s(vs).trim_matches(['"', '\'']).to_ascii_lowercase();
            let hit = vs == ve
                && ((key == "input_precision"
                    && src.kind(vs) == Some(Kind::Str)
                    && value.starts_with("tf32"))
                    || (key == "allow_tf32" && src.is_name(vs, "True")));
            if !hit || cx.guarded(k) {
                continue;
            }
            let msg = format!(
                "`{}` does not compile for {}: TF32 is not an allowed dot precision there",
                cx.code(name, ve),
                lacking.join(", ")
            );
            cx.report_with(&META, META.severity, lacking.clone(), name, ve, msg, "omit the precision (each backend's default) or choose it per target as a constexpr");
        }
    }
}
