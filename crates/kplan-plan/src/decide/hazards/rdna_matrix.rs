//! `rdna-matrix-path`: a matrix kernel (a matrix op class, or a feature naming the matrix units)
//! on an RDNA target: RDNA has WMMA on wave32 (RDNA3 and RDNA4 with different operand layouts),
//! not CDNA's matrix instructions, so CDNA kernels, their tile tunings and the CDNA-only libraries (CK FMHA,
//! AITER) do not carry over. Fires from the KB's `rdna-wmma` support table.

use super::test_support::GEMM;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let (spec, kb) = (cx.spec, cx.kb);
    let matrix = spec.op.uses_matrix_units()
        || spec.features.iter().any(|f| {
            matches!(
                f.as_str(),
                "tensor-cores" | "matrix-cores" | "rdna-wmma" | "wmma" | "mfma"
            )
        });
    if !matrix {
        return Vec::new();
    }
    let rdna: Vec<&Target> = cx.gpu.iter().copied().filter(|t| t.is_rdna()).collect();
    if rdna.is_empty() {
        return Vec::new();
    }
    let evidence: Vec<String> = rdna
        .iter()
        .map(|t| support_evidence(kb, t, "rdna-wmma"))
        .collect();
    let sources = support_sources(kb, &rdna, "rdna-wmma");
    vec![Risk::builder("rdna-matrix-path", "hazard", "medium")
        .title("RDNA matrix units are WMMA on wave32 (RDNA3 and RDNA4 differ): kernels, tunings and libraries made for CDNA do not carry over")
        .targets(names(&rdna))
        .mitigation("write or pick the RDNA path on its own terms: WMMA tiles on 32-lane waves (RDNA3 and RDNA4 operand layouts differ), the matrix dtypes the KB lists per RDNA target, and the libraries that list RDNA support (rocBLAS / hipBLASLt, MIOpen, Triton's AMD backend); test on each RDNA generation in scope")
        .fallback("vector (non-matrix) code on RDNA: several times below the WMMA peak")
        .evidence(evidence)
        .sources(sources)
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "rdna-matrix-path",
    fires: &[GEMM.targets(&["gfx1100", "mi300x"])],
    silent: &[
        GEMM,
        super::test_support::ELEMENTWISE.targets(&["gfx1100", "h100"]),
    ],
};
