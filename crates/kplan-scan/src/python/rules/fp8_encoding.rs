//! `triton-fp8-encoding`: an fp8 encoding a target in scope does not have (OCP vs FNUZ).

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Availability;

pub const META: RuleMeta = RuleMeta {
    id: "triton-fp8-encoding",
    summary: "fp8 dtype in an encoding (OCP e4m3fn/e5m2 or FNUZ) that a target in scope does not have",
    what: "Finds OCP fp8 dtypes (`tl.float8e4nv`, `tl.float8e5`, `torch.float8_e4m3fn`, `torch.float8_e5m2`) when a \
target with only FNUZ fp8 is in scope (gfx942), and FNUZ dtypes (`tl.float8e4b8`, `tl.float8e5b16`, \
`torch.float8_e4m3fnuz`, `torch.float8_e5m2fnuz`) when a target with only OCP fp8 is in scope (NVIDIA sm_89+, \
gfx950, gfx12). Uses under a backend or architecture check are left alone.",
    why: "The two encodings differ in exponent bias, NaN/negative-zero encoding and range (e4m3fn max 448, e4m3fnuz max \
240). gfx942 computes natively only in FNUZ; gfx950 and gfx12 (like NVIDIA) only in OCP. A kernel hard-wired to one \
encoding either fails to compile, is emulated slowly, or reads the bits of the other encoding and produces values off \
by a factor of two.",
    example: "x = tl.load(ptr).to(tl.float8e4nv)",
    use_instead: "# pick the encoding per architecture, and pass it in as a constexpr\nFP8 = tl.float8e4b8 if arch == \"gfx942\" else tl.float8e4nv\nx = tl.load(ptr).to(FP8_DTYPE)",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["fp8-ocp", "fp8-fnuz"],
};

/// OCP or FNUZ, by dtype name.
pub fn fp8_kind(name: &str) -> Option<bool> {
    match name {
        "float8e4nv" | "float8_e4m3fn" | "float8e5" | "float8_e5m2" | "fp8e4nv" | "fp8e5" => {
            Some(true)
        }
        "float8e4b8" | "float8_e4m3fnuz" | "float8e5b16" | "float8_e5m2fnuz" | "fp8e4b8"
        | "fp8e5b16" => Some(false),
        _ => None,
    }
}

/// GPU targets in scope that have `want` fp8 and lack the other one.
pub fn only(cx: &Cx, ocp: bool) -> Vec<String> {
    let (have, lack) = if ocp {
        ("fp8-ocp", "fp8-fnuz")
    } else {
        ("fp8-fnuz", "fp8-ocp")
    };
    cx.ctx
        .targets
        .iter()
        .filter(|t| {
            cx.ctx.kb.availability(have, t.id()) == Availability::Yes
                && cx.ctx.kb.availability(lack, t.id()) == Availability::No
        })
        .map(|t| t.id().to_string())
        .collect()
}

/// Names of block-scaled (microscaling) format code: OCP MX (`mxfp8_quant`, `quantize_mx`,
/// `mx_tensor`) and NVFP4 (`nvfp4_quantize`), whose fp8 element or scale type is OCP e4m3 by
/// definition.
pub fn is_mx_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("mxfp")
        || l.contains("nvfp4")
        || l.contains("microscal")
        || l.split(['_', '-', '.'])
            .any(|w| w == "mx" || w == "mxf8" || w == "mxf4")
}

/// The file, or its folder, is microscaling code (`fused_mxfp8_quant.py`, `mx_formats/`).
pub fn mx_path(path: &std::path::Path) -> bool {
    path.components()
        .rev()
        .take(2)
        .any(|c| is_mx_name(&c.as_os_str().to_string_lossy()))
}

/// A pytest file (`test_*.py`, `*_test.py`, `conftest.py`): tests name every encoding on
/// purpose, to compare them or to skip the ones a device lacks.
fn pytest_file(path: &std::path::Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py"
}

pub fn check(cx: &mut Cx) {
    if pytest_file(cx.path) {
        return;
    }
    let src = cx.src;
    let mx_file = mx_path(cx.path);
    let mut seen: Vec<(usize, &str)> = Vec::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Kind::Name) {
            continue;
        }
        let name = src.s(k);
        let Some(ocp) = fp8_kind(name) else { continue };
        if let Some(l) = src.line_of(k) {
            if matches!(src.s(l.first), "import" | "from") {
                continue;
            }
            // a dtype map or selection that names both encodings covers both kinds of target
            if (l.first..l.end)
                .any(|i| src.kind(i) == Some(Kind::Name) && fp8_kind(src.s(i)) == Some(!ocp))
            {
                continue;
            }
        }
        // dtype selection that branches on the backend or architecture anywhere in the function
        if cx.guarded(k) || cx.scope_has_backend_check(k) {
            continue;
        }
        // block-scaled formats (OCP MXFP8/MXFP4, NVFP4) use OCP fp8 by definition; there is no
        // FNUZ variant to choose
        if ocp && (mx_file || src.def_at(k).is_some_and(|d| is_mx_name(src.s(d.name)))) {
            continue;
        }
        // the targets that lack this encoding but have the other one
        let targets = only(cx, !ocp);
        if targets.is_empty() {
            continue;
        }
        let scope = src.def_at(k).map(|d| d.name).unwrap_or(usize::MAX);
        if seen.contains(&(scope, name)) {
            continue;
        }
        seen.push((scope, name));
        let a = src.dotted_start(k);
        let (enc, other) = if ocp {
            ("OCP", "FNUZ")
        } else {
            ("FNUZ", "OCP")
        };
        let msg = format!(
            "`{}` is {enc} fp8; {} only {} {other} fp8",
            cx.code(a, k),
            targets.join(", "),
            if targets.len() == 1 { "has" } else { "have" }
        );
        let help = if ocp {
            "choose the fp8 dtype per architecture (FNUZ `tl.float8e4b8` on gfx942, OCP `tl.float8e4nv` elsewhere) and pass it as a constexpr"
        } else {
            "FNUZ is gfx942-only: use OCP `tl.float8e4nv` on NVIDIA, gfx950 and gfx12, selected by architecture, not by \"is HIP\""
        };
        cx.report_with(&META, META.severity, targets, a, k, msg, help);
    }
}
