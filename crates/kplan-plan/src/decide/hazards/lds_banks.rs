//! `lds-bank-layout`: the kernel stages data in shared memory / LDS and the targets it is
//! written for have different bank counts (32 four-byte banks on NVIDIA and CDNA1-3, 64 on
//! gfx950 and RDNA [IREE]), so a padding or swizzle chosen for one is not conflict-free on all.

use super::test_support::{Fx, ELEMENTWISE};
use super::{Cx, Fixtures};
use crate::model::Risk;
use std::collections::BTreeMap;

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    if !cx.spec.uses_shared_memory() || crate::decide::tiles::is_gemv(cx.spec) {
        return None;
    }
    let mut by_banks: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    let mut evidence = Vec::new();
    let mut sources = Vec::new();
    for t in cx.coded_targets() {
        if let Some(b) = t.arch.shared_banks.value {
            by_banks.entry(b).or_default().push(t.name.as_str());
            evidence.push(format!(
                "{}: {b} banks [{}]",
                t.name, t.arch.shared_banks.source
            ));
            if !sources.contains(&t.arch.shared_banks.source) {
                sources.push(t.arch.shared_banks.source.clone());
            }
        }
    }
    if by_banks.len() < 2 {
        return None;
    }
    let groups: Vec<String> = by_banks
        .iter()
        .map(|(b, ts)| format!("{b} on {}", ts.join(", ")))
        .collect();
    Some(
        Risk::builder("lds-bank-layout", "hazard", "medium")
            .title(format!(
                "shared memory / LDS bank structure differs per target: {} banks",
                groups.join("; ")
            ))
            .targets(by_banks.values().flatten().map(|s| s.to_string()).collect())
            .mitigation("derive the padding or XOR swizzle of every shared/LDS tile from a per-target bank-count constant (a +1-element pad per 32 words is conflict-free on 32 banks but not on 64); check the bank-conflict counters per target (Nsight Compute shared-memory conflicts, rocprof LDS bank conflicts)")
            .evidence(evidence)
            .sources(sources)
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = ELEMENTWISE
    .op("histogram")
    .dtypes(&["uint8", "uint32"])
    .problem("n = 1000000, bins = 256")
    .targets(&["sm_86", "gfx1100"]);

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "lds-bank-layout",
    fires: &[SPEC],
    silent: &[SPEC.targets(&["sm_86", "gfx942"])],
};
