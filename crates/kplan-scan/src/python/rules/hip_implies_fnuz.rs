//! `triton-hip-implies-fnuz`: FNUZ fp8 chosen because the backend is HIP, not because it is gfx942.

use super::fp8_encoding::fp8_kind;
use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::{Availability, Vendor};

pub const META: RuleMeta = RuleMeta {
    id: "triton-hip-implies-fnuz",
    summary: "FNUZ fp8 selected for every AMD GPU (`torch.version.hip`, `is_hip()`) instead of for gfx942",
    what: "Finds FNUZ fp8 dtypes (`float8_e4m3fnuz`, `tl.float8e4b8`, ...) chosen under a HIP/ROCm check \
(`torch.version.hip`, `is_hip()`, `backend == \"hip\"`) with no architecture check (`gfx942`, `gcnArchName`) nearby.",
    why: "FNUZ fp8 is the CDNA3 (gfx942) encoding. gfx950 (MI350) and RDNA4 (gfx12) use OCP fp8 like NVIDIA. \
Mapping \"running on HIP\" to FNUZ makes those GPUs read and write the wrong encoding: values off by a factor of two, \
different NaN handling, or a compile error.",
    example: "fp8 = torch.float8_e4m3fnuz if torch.version.hip else torch.float8_e4m3fn",
    use_instead: "arch = triton.runtime.driver.active.get_current_target().arch\nfp8 = torch.float8_e4m3fnuz if arch == \"gfx942\" else torch.float8_e4m3fn",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &["fp8-fnuz", "fp8-ocp"],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let amd: Vec<String> = cx.ctx.vendor_targets(Vendor::Amd);
    if amd.is_empty() {
        return;
    }
    let ocp_amd: Vec<String> = amd
        .iter()
        .filter(|a| {
            cx.ctx.kb.availability("fp8-ocp", a) == Availability::Yes
                && cx.ctx.kb.availability("fp8-fnuz", a) == Availability::No
        })
        .cloned()
        .collect();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Kind::Name) || fp8_kind(src.s(k)) != Some(false) {
            continue;
        }
        let Some(line) = src.line_of(k) else { continue };
        if matches!(src.s(line.first), "import" | "from") {
            continue;
        }
        // HIP check on the line or the branch; no architecture check in the function.
        let (ha, hb) = match src.def_at(k) {
            Some(d) => (d.start, d.body.1),
            None => (line.first, line.end),
        };
        let hip = cx.guarded(k) && (ha..hb).any(|i| is_hip_check(src.s(i), src.kind(i)));
        let arch = (ha..hb).any(|i| is_arch_check(src.s(i), src.kind(i)));
        if !hip || arch {
            continue;
        }
        let a = src.dotted_start(k);
        let (sev, targets, msg) = if ocp_amd.is_empty() {
            (Severity::Note, amd.clone(), format!("`{}` is chosen for every HIP GPU; it is right on gfx942 only (gfx950 and gfx12 use OCP fp8)", cx.code(a, k)))
        } else {
            (
                META.severity,
                ocp_amd.clone(),
                format!(
                    "`{}` is chosen for every HIP GPU, but {} use OCP fp8",
                    cx.code(a, k),
                    ocp_amd.join(", ")
                ),
            )
        };
        cx.report_with(
            &META,
            sev,
            targets,
            a,
            k,
            msg,
            "select FNUZ by architecture (gfx942), not by backend",
        );
    }
}

fn is_hip_check(s: &str, kind: Option<Kind>) -> bool {
    let l = s.to_ascii_lowercase();
    match kind {
        Some(Kind::Name) => l.contains("hip") || l.contains("rocm") || l == "is_amd",
        Some(Kind::Str) => l.contains("hip") || l.contains("rocm"),
        _ => false,
    }
}

fn is_arch_check(s: &str, kind: Option<Kind>) -> bool {
    let l = s.to_ascii_lowercase();
    match kind {
        Some(Kind::Name) => {
            l.starts_with("gfx")
                || l.contains("gcnarch")
                || l.contains("cdna")
                || l == "arch"
                || l.contains("mi300")
                || l.contains("is_fp8_fnuz")
                || l.contains("fnuz_supported")
        }
        Some(Kind::Str) => {
            l.contains("gfx9") || l.contains("gfx12") || l.contains("cdna") || l.contains("mi3")
        }
        _ => false,
    }
}
