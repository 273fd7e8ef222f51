//! `matrix-operand-layout`: a matrix-unit kernel is written for more than one family of matrix
//! instructions (NVIDIA mma/wgmma/tcgen05, CDNA MFMA, RDNA3 WMMA, RDNA4 WMMA). Each family
//! defines its own mapping of fragment elements to lanes; the RDNA generations differ from
//! each other as well as from MFMA (RDNA3 WMMA is wave32 and replicates the A/B fragments
//! across the two half-waves; RDNA4's WMMA does not). Silent for a GEMV (`m <= 16`), whose
//! tile uses no matrix instruction.

use super::test_support::GEMM;
use super::{Cx, Fixtures};
use crate::model::Risk;
use kplan_kb::{Availability, Vendor};

/// The matrix-instruction family of a target, if it has one.
fn family(cx: &Cx, t: &crate::decide::Target) -> Option<&'static str> {
    let a = &t.arch.id;
    match t.vendor() {
        Vendor::Nvidia => Some("NVIDIA mma/wgmma"),
        Vendor::Amd if cx.kb.availability("mfma", a) == Availability::Yes => Some("CDNA MFMA"),
        Vendor::Amd if cx.kb.availability("rdna-wmma", a) == Availability::Yes => {
            Some(if t.arch.family.contains("RDNA4") {
                "RDNA4 WMMA"
            } else {
                "RDNA3 WMMA"
            })
        }
        _ => None,
    }
}

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let spec = cx.spec;
    let matrix = spec.op.uses_matrix_units()
        || spec.features.iter().any(|f| {
            matches!(
                f.as_str(),
                "tensor-cores" | "matrix-cores" | "mfma" | "rdna-wmma" | "wgmma" | "mma-sync"
            )
        });
    // A GEMV tile streams weights through the vector ALUs: no matrix instruction, no layout.
    if !matrix || crate::decide::tiles::is_gemv(spec) {
        return None;
    }
    let mut fams: Vec<(&str, Vec<String>)> = Vec::new();
    for t in cx.coded_targets() {
        if let Some(f) = family(cx, t) {
            match fams.iter_mut().find(|(x, _)| *x == f) {
                Some((_, v)) => v.push(t.name.clone()),
                None => fams.push((f, vec![t.name.clone()])),
            }
        }
    }
    let amd = fams.iter().any(|(f, _)| !f.starts_with("NVIDIA"));
    if fams.len() < 2 || !amd {
        return None;
    }
    let targets: Vec<String> = fams
        .iter()
        .filter(|(f, _)| !f.starts_with("NVIDIA"))
        .flat_map(|(_, v)| v.clone())
        .collect();
    Some(
        Risk::builder("matrix-operand-layout", "hazard", "high")
            .title(format!(
                "matrix-instruction operand layouts differ between {}",
                fams.iter()
                    .map(|(f, v)| format!("{f} ({})", v.join(", ")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .targets(targets)
            .mitigation("write the fragment (lane) layout per instruction family, not once: MFMA on wave64, RDNA3 WMMA (wave32, A/B fragments replicated across the half-waves) and RDNA4 WMMA each load and store fragments differently; use rocWMMA, CK or Triton where they cover the shape, which own these layouts, and test every family on hardware")
            .fallback("a vector-ALU (FMA) path on the family without a validated layout: several times slower for compute-bound shapes")
            .evidence(fams
                .iter()
                .map(|(f, v)| format!("{}: {f} [IREE]", v.join(", "))))
            .sources(["IREE", "LLVM-AMDGPU"])
            .build(),
    )
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "matrix-operand-layout",
    fires: &[
        GEMM.targets(&["gfx1100", "gfx1201"]),
        GEMM.targets(&["sm_80", "gfx942"]),
    ],
    silent: &[
        GEMM.problem("m = 1, n = 4096, k = 4096")
            .targets(&["gfx1100", "gfx1201"]),
        GEMM.targets(&["gfx942", "gfx90a"]),
        GEMM.targets(&["sm_80", "sm_90"]),
    ],
};
