//! `inline-ptx-guard` / `inline-gcn-asm-guard`: the spec asks for inline assembly, which ties
//! the code to one ISA; every other vendor's target needs the guarded fallback.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Inline assembly in the spec's features.
    for (f, vendor) in [
        ("inline-ptx", Vendor::Nvidia),
        ("inline-gcn-asm", Vendor::Amd),
    ] {
        if spec.features.iter().any(|x| x == f) {
            let other: Vec<&Target> = gpu
                .iter()
                .copied()
                .filter(|t| t.vendor() != vendor)
                .collect();
            risks.push(
                Risk::builder(format!("{f}-guard"), "hazard", "high")
                    .title(format!("`{f}` ties code to one ISA"))
                    .targets(names(&other))
                    .mitigation("wrap every asm block in the header's per-vendor guard with a C++ fallback next to it; test the fallback path on the other vendor's CI leg")
                    .fallback_opt(kb.feature(f).and_then(|x| x.fallback.clone()))
                    .evidence([format!("spec features list `{f}`")])
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "inline-ptx-guard",
    fires: &[ELEMENTWISE.kernel(&["features = [\"inline-ptx\"]"])],
    silent: &[ELEMENTWISE],
};
