//! `blackwell-arch-specific`: an `sm_100a` target beside another datacenter Blackwell target:
//! arch-specific cubins run on compute capability 10.0 only [CUDA-FS]. Also, at medium
//! severity, an `sm_100a` target alone when the kernel needs its arch-specific instructions
//! (a matrix op, a block-scaled or sub-byte float dtype, tcgen05): the build runs on CC 10.0
//! only, and the next parts of the family (CC 10.3, B300/GB300) need the family target.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Blackwell arch-specific code: sm_100a cubins run on compute capability 10.0 only.
    let bw_a: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.arch.id == "sm_100a")
        .collect();
    let bw_other: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.arch.id != "sm_100a" && t.arch.family == "Blackwell (datacenter)")
        .collect();
    if !bw_a.is_empty() && !bw_other.is_empty() {
        risks.push(
            Risk::builder("blackwell-arch-specific", "toolchain", "high")
                .title("sm_100a (arch-specific) code does not run on the other Blackwell targets")
                .targets(names(&bw_other))
                .mitigation("build the family target (compute_100f, CUDA 12.9+) for code that must run on every Blackwell part, or ship one cubin per exact target (sm_100a, sm_103a) plus PTX")
                .fallback("portable sm_100 code without tcgen05 (the wgmma-free, mma.sync path)")
                .evidence(bw_a.iter().chain(bw_other.iter()).map(|t| format!("{}: {} [CUDA-FS]", t.name, t.arch.notes.join(" "))))
                .sources(["CUDA-FS"])
                .build(),
        );
    }
    // Alone: the arch-specific build is what the kernel needs, and it ties the binary to CC 10.0.
    let needs_a = spec.op.uses_matrix_units()
        || spec.block_scale.is_some()
        || spec
            .all_dtypes()
            .iter()
            .any(|d| d.size() < 1.0 && !d.is_integer())
        || spec.features.iter().any(|f| f == "tcgen05");
    if !bw_a.is_empty() && bw_other.is_empty() && needs_a {
        risks.push(
            Risk::builder("blackwell-arch-specific", "toolchain", "medium")
                .title("sm_100a (arch-specific) builds run on compute capability 10.0 only: the next Blackwell parts need the family target")
                .targets(names(&bw_a))
                .mitigation("build with the family target (compute_100f / sm_100f, CUDA 12.9+) where the instructions used are in the family set, or add one cubin per exact target (sm_103a for B300/GB300); pin library builds (CUTLASS, FlashInfer, cuBLASLt) that list the parts the fleet will have")
                .fallback("one arch-specific build per part: more binaries and CI legs")
                .evidence(bw_a.iter().map(|t| format!("{}: {} [CUDA-FS]", t.name, t.arch.notes.join(" "))))
                .sources(["CUDA-FS"])
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "blackwell-arch-specific",
    fires: &[
        ELEMENTWISE.targets(&["sm_100a", "sm_103"]),
        super::test_support::GEMM.targets(&["sm_100a"]),
    ],
    silent: &[
        ELEMENTWISE.targets(&["sm_100a"]),
        super::test_support::GEMM.targets(&["sm_100", "h100"]),
    ],
};
