//! `rdna-wave32`: hand-written HIP code for both RDNA (wave32) and CDNA (wave64) targets: one
//! AMD source, two wavefront sizes, two tuning configurations.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // RDNA wave32 vs CDNA wave64: same vendor, same HIP source, different wavefront.
    let rdna: Vec<&Target> = coded.iter().copied().filter(|t| t.is_rdna()).collect();
    let cdna: Vec<&Target> = coded.iter().copied().filter(|t| t.is_cdna()).collect();
    if !rdna.is_empty() && !cdna.is_empty() {
        risks.push(
            Risk::builder("rdna-wave32", "hazard", "medium")
                .title("RDNA runs wave32 while CDNA runs wave64 from the same HIP source")
                .targets(names(&rdna))
                .mitigation(format!(
                    "RDNA runs wave32 under HIP (the HIP runtime does not support wave64 on RDNA), so wave32 is a supported \
                     configuration of every kernel, not a fallback: build RDNA targets wave32 and test them as a separate leg; \
                     do not tune AMD once for both: {} and {} need separate block-size/tile configs (section 6)",
                    join_names(&names(&rdna)),
                    join_names(&names(&cdna))
                ))
                .fallback("make the wave size a template parameter of the kernel and instantiate 32 and 64 (selected per target \
                     by `KPLAN_WARP_SIZE`), so one source serves both without forcing wave64 on RDNA")
                .evidence(rdna
                    .iter()
                    .chain(cdna.iter())
                    .map(|t| format!("{}: {} warp size {} [{}]", t.name, t.arch.family, t.warp().unwrap_or(0), t.arch.warp_size.source)))
                .sources(rdna.iter().chain(cdna.iter()).map(|t| t.arch.warp_size.source.clone()).collect::<std::collections::BTreeSet<_>>())
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "rdna-wave32",
    fires: &[ELEMENTWISE.targets(&["rx7900xtx", "mi300x"])],
    silent: &[ELEMENTWISE],
};
