//! `multi-die`: hand-written code for a multi-die device (MI250X: one GCD per launch;
//! MI300-class: XCDs with L2s that are not coherent with each other), from the KB's device
//! facts.

use super::test_support::{ELEMENTWISE, GEMM};
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Multi-die devices: MI250X GCDs (one per launch) and MI300-class XCDs (one device, L2 per
    // XCD). XCD placement is a hazard for kernel code written for them (a library call handles
    // its own); a GCD is a device of its own, so one library call sees one GCD too.
    // An op whose blocks neither reuse each other's data through L2 nor communicate (a map,
    // a gather, a cast) is indifferent to which XCD runs a block: the XCD clause is noise there.
    use crate::spec::Op;
    let stateless = matches!(
        spec.op,
        Op::Elementwise | Op::Gather | Op::Embedding | Op::Quantize | Op::Dequantize
    ) && !spec
        .features
        .iter()
        .any(|f| f.contains("atomic") || f.contains("cooperative"));
    let multi: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| {
            t.is_multi_die()
                && (t.has_gcds()
                    || !stateless && t.has_xcds() && coded.iter().any(|c| c.name == t.name))
        })
        .collect();
    if !multi.is_empty() {
        // Only the clauses of the kinds of device in scope: GCDs that are separate devices
        // (MI250X) and XCDs inside one device (MI300-class), the latter for hand-written code.
        let gcd = multi.iter().any(|t| t.has_gcds());
        let xcd = !stateless
            && multi
                .iter()
                .any(|t| t.has_xcds() && coded.iter().any(|c| c.name == t.name));
        let mut title = Vec::new();
        let mut mitigation = Vec::new();
        if gcd {
            title.push("one launch sees one MI250X GCD");
            mitigation.push("plan MI250X per GCD (each is its own HIP device: split work across both explicitly)");
        }
        if xcd {
            title.push("MI300-class XCDs have separate L2s");
            mitigation.push("on MI300-class parts workgroups are dispatched round-robin over the XCDs whose L2s are not coherent with each other: keep a block's data in its own XCD (remap block ids), publish cross-block flags with release/acquire at agent scope, and check the partition mode (SPX/CPX) of the machine");
        }
        risks.push(Risk {
            id: "multi-die".into(),
            title: format!("multi-die GPUs: {}", title.join("; ")),
            kind: "hazard".into(),
            targets: names(&multi),
            severity: "medium".into(),
            mitigation: mitigation.join("; "),
            fallback: None,
            evidence: multi
                .iter()
                .map(|t| {
                    let d = t.device.as_deref().unwrap();
                    format!(
                        "{}: {} compute units ({}) [{}]",
                        t.name,
                        d.compute_units
                            .value
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "unknown".into()),
                        d.compute_units.note.as_deref().unwrap_or(""),
                        d.compute_units.source
                    )
                })
                .collect(),
            sources: multi
                .iter()
                .filter_map(|t| t.device.as_deref().map(|d| d.compute_units.source.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        });
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "multi-die",
    fires: &[
        ELEMENTWISE.targets(&["mi250x"]),
        // a library call on an MI250X runs on one GCD as well
        GEMM.dtypes(&["bf16", "fp32"])
            .targets(&["mi250x"])
            .allowed(&["vendor-library"]),
    ],
    silent: &[
        // the library places its own workgroups over the XCDs of one device
        GEMM.dtypes(&["bf16", "fp32"])
            .targets(&["mi300x"])
            .allowed(&["vendor-library"]),
        ELEMENTWISE.targets(&["h100"]),
        // a map has no inter-block reuse or communication for the XCD placement to break
        ELEMENTWISE.targets(&["mi300x"]),
    ],
};

#[cfg(test)]
mod scope_tests {
    use crate::decide::hazards::test_support::plan;

    fn text(targets: &str) -> String {
        let spec = format!("[kernel]\nname = \"k\"\nop = \"reduction\"\ndtypes = [\"fp32\"]\nproblem = {{ n = 1048576 }}\n[backends]\ntargets = [{targets}]\n[abstraction]\nallowed = [\"hip-single-source\"]\n");
        let r = plan(&spec)
            .risks
            .into_iter()
            .find(|r| r.id == "multi-die")
            .expect("raised");
        format!("{} {}", r.title, r.mitigation)
    }

    /// An MI300-only plan says nothing of MI250X GCDs, an MI250X-only plan nothing of XCDs.
    #[test]
    fn only_the_dies_in_scope_are_described() {
        let t = text("\"mi300x\"");
        assert!(t.contains("XCD") && !t.contains("MI250X"), "{t}");
        let t = text("\"mi250x\"");
        assert!(t.contains("GCD") && !t.contains("XCD"), "{t}");
    }
}
