//! `fp8-fnuz-for-every-amd`: an FNUZ fp8 type or format chosen by "this is ROCm/HIP" (or by an
//! architecture list that leaves out gfx950 and gfx12) instead of by gfx942: OCP-only AMD GPUs
//! compile it too.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::target_cond::{amd_passes, branch_taken, AmdPass};
use kplan_kb::Availability;

pub static META: RuleMeta = RuleMeta {
    id: "fp8-fnuz-for-every-amd",
    summary: "fp8 type in the FNUZ encoding chosen for every AMD GPU (`#ifdef USE_ROCM`, or the `#else` of a gfx950 test), not for gfx942 only",
    what: "Finds FNUZ fp8 types and format constants (`__hip_fp8_e4m3_fnuz`, `__HIP_E4M3_FNUZ`, \
`torch::kFloat8_e4m3fnuz`, `at::Float8_e5m2fnuz`, `HIP_R_8F_E4M3_FNUZ`: identifiers that name `fnuz` and an fp8 \
format) in a \
preprocessor branch that an AMD GPU with only OCP fp8 compiles: a branch chosen by the platform (`#ifdef USE_ROCM`, \
`__HIP_PLATFORM_AMD__`) with no architecture test, or the `#else` of an architecture list that names gfx950 but not \
gfx12. The branch is evaluated for the device pass of each OCP-only AMD target in scope, and of gfx950 and gfx1200 \
when none is (then the finding is a note). A line that names both encodings (a mapping, a `?:` on a runtime \
check) is left alone.",
    why: "FNUZ fp8 (e4m3fnuz, e5m2fnuz) is the encoding of CDNA3 (gfx940-gfx942) only. gfx950 (MI350) and RDNA4 \
(gfx12) compute in OCP e4m3fn/e5m2, like NVIDIA. The encodings differ in exponent bias (values off by a factor of \
two when one is read as the other), in NaN and negative zero (0x80 is -0 in OCP and NaN in FNUZ) and in range (448 \
vs 240). Choosing FNUZ because the build is ROCm makes those GPUs produce or expect the wrong bits, or use slow \
software conversion where the hardware has the other format.",
    example: "#ifdef USE_ROCM\n    out[i] = __hip_cvt_float2_to_fp8x2(v, __HIP_SATFINITE, __HIP_E4M3_FNUZ);\n#else\n    out[i] = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);\n#endif",
    use_instead: "#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)\n    out[i] = __hip_cvt_float2_to_fp8x2(v, __HIP_SATFINITE, __HIP_E4M3_FNUZ);\n#elif defined(USE_ROCM)\n    out[i] = __hip_cvt_float2_to_fp8x2(v, __HIP_SATFINITE, __HIP_E4M3);\n#else\n    out[i] = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);\n#endif",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &["fp8-fnuz", "fp8-ocp"],
};

/// An identifier that names the FNUZ fp8 encoding.
fn fnuz(w: &str) -> bool {
    let l = w.to_ascii_lowercase();
    (l.ends_with("fnuz") || l.contains("fnuz_"))
        && (l.contains("e4m3") || l.contains("e5m2") || l.contains("fp8") || l.contains("float8"))
}

/// An identifier that names an OCP fp8 type or format (`__hip_fp8_e4m3`, `kFloat8_e4m3fn`,
/// `__NV_E4M3`, `float8_e5m2`).
fn ocp(w: &str) -> bool {
    let l = w.to_ascii_lowercase();
    !l.contains("fnuz") && (l.contains("e4m3") || l.contains("e5m2"))
}

/// AMD architectures probed when no OCP-only AMD target is in scope.
const PROBES: &[(&str, u32)] = &[("gfx950", 64), ("gfx1200", 32)];

pub fn check(cx: &mut Cx) {
    if !(cx.has("fnuz") || cx.has("FNUZ")) {
        return;
    }
    let kb = cx.ctx.kb;
    let ocp_only = |arch: &str| {
        kb.availability("fp8-ocp", arch) == Availability::Yes
            && kb.availability("fp8-fnuz", arch) == Availability::No
    };
    let in_scope: Vec<AmdPass> = amd_passes(cx)
        .into_iter()
        .filter(|p| ocp_only(&p.arch))
        .collect();
    let probing = in_scope.is_empty();
    let passes: Vec<AmdPass> = if probing {
        if amd_passes(cx).is_empty() {
            return;
        }
        PROBES
            .iter()
            .filter(|(a, _)| ocp_only(a))
            .map(|&(a, w)| AmdPass {
                arch: a.to_string(),
                wave: w,
            })
            .collect()
    } else {
        in_scope
    };
    if passes.is_empty() {
        return;
    }
    let src = cx.src;
    let mut reported_lines: Vec<usize> = Vec::new();
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) || !fnuz(src.s(i)) {
            continue;
        }
        let b = src.toks[i].branch;
        if b == 0 {
            continue;
        }
        // chosen by the platform, or by an architecture test
        let platform = src.branch_platform(b) == Platform::Amd;
        let arch_chain = src.ancestors(b).any(|(_, br)| {
            src.groups
                .get(br.group as usize)
                .is_some_and(|g| g.names_amd_arch)
        });
        if !platform && !arch_chain {
            continue;
        }
        // the line of the use: a mapping or runtime choice that names both encodings
        let (s, _) = src.span(i);
        let ls = src.text[..s].rfind('\n').map_or(0, |p| p + 1);
        let le = src.text[s..].find('\n').map_or(src.text.len(), |p| s + p);
        let line_text = &src.text[ls..le];
        if line_text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(ocp)
        {
            continue;
        }
        if reported_lines.contains(&ls) {
            continue;
        }
        let lack: Vec<String> = passes
            .iter()
            .filter(|p| branch_taken(cx, b, p) == Some(true))
            .map(|p| p.arch.clone())
            .collect();
        if lack.is_empty() {
            continue;
        }
        reported_lines.push(ls);
        let (sev, msg) = if probing {
            (
                Severity::Note,
                format!(
                    "`{}` is FNUZ fp8, chosen for every AMD GPU that compiles this branch: right on gfx942 only; {} (not in scope) would compile it and use OCP fp8",
                    src.s(i),
                    lack.join(" and ")
                ),
            )
        } else {
            (
                META.severity,
                format!(
                    "`{}` is FNUZ fp8, but {} compile{s} this branch and use{s} OCP fp8 (e4m3fn/e5m2)",
                    src.s(i),
                    lack.join(", "),
                    s = if lack.len() == 1 { "s" } else { "" }
                ),
            )
        };
        cx.report_with(
            &META,
            sev,
            lack,
            i,
            i,
            msg,
            "select FNUZ by architecture (`__gfx940__`/`__gfx941__`/`__gfx942__`, or `gcnArchName` on the host) and OCP for gfx950, gfx12 and NVIDIA",
        );
    }
}
