//! `blackwell-arch-specific`: an `sm_100a` target beside another datacenter Blackwell target:
//! arch-specific cubins run on compute capability 10.0 only [CUDA-FS].

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
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "blackwell-arch-specific",
    fires: &[ELEMENTWISE.targets(&["sm_100a", "sm_103"])],
    silent: &[ELEMENTWISE.targets(&["sm_100a"])],
};
