//! `feature-<id>-<status>`: a spec feature the KB marks missing, partial or unknown on a GPU
//! target (`no`, `partial`, `unknown`), or an NVIDIA API other vendors provide through a
//! translation (`nvidia-origin`). Fires from the spec's features and the KB's support table.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Spec features: missing/partial/unknown somewhere, and every NVIDIA-specific one.
    for f in &spec.features {
        let Some(feat) = kb.feature(f) else { continue };
        let mut by: BTreeMap<&'static str, Vec<&Target>> = BTreeMap::new();
        for t in gpu.iter() {
            let a = kb.availability(f, &t.arch.id);
            let k = match a {
                Availability::Yes => "yes",
                Availability::No => "no",
                Availability::Partial => "partial",
                Availability::Unknown => "unknown",
            };
            by.entry(k).or_default().push(t);
        }
        let evidence: Vec<String> = gpu.iter().map(|t| support_evidence(kb, t, f)).collect();
        let sources: Vec<String> = support_sources(kb, &gpu, f)
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let fallback = feat.fallback.clone();
        for (status, sev) in [("no", "high"), ("partial", "medium"), ("unknown", "medium")] {
            if let Some(ts) = by.get(status) {
                risks.push(
                    Risk::builder(format!("feature-{f}-{status}"), "feature", sev)
                        .title(match status {
                            "no" => format!("`{f}` ({}) is missing on {}", feat.name, join_names(&names(ts))),
                            "partial" => format!("`{f}` ({}) is only partly available on {}", feat.name, join_names(&names(ts))),
                            _ => format!("availability of `{f}` unknown on {}", join_names(&names(ts))),
                        })
                        .targets(names(ts))
                        .mitigation(match status {
                            "no" => format!(
                                "guard the use behind the header's feature macro and dispatch to the fallback on {}",
                                join_names(&names(ts))
                            ),
                            "partial" => "check the KB note for which variants exist; test the partial path on its own CI leg".into(),
                            _ => "verify on the hardware or in the vendor docs before relying on it; add the fact to the KB with a source".into(),
                        })
                        .fallback_opt(fallback.clone())
                        .evidence(evidence.clone())
                        .sources(sources.clone())
                        .build(),
                );
            }
        }
        let non_nv: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| t.vendor() != Vendor::Nvidia)
            .collect();
        if feat.origin == "nvidia"
            && !non_nv.is_empty()
            && !by.contains_key("no")
            && !by.contains_key("partial")
            && !by.contains_key("unknown")
        {
            risks.push(
                Risk::builder(format!("feature-{f}-nvidia-origin"), "feature", "low")
                    .title(format!("`{f}` is NVIDIA's API; other targets provide it through a translation", ))
                    .targets(names(&non_nv))
                    .mitigation("use it through the header's portable name; check mask width and semantics differences on each non-NVIDIA target")
                    .fallback_opt(fallback)
                    .evidence(evidence)
                    .sources(sources)
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "feature-wgmma-no",
    fires: &[ELEMENTWISE.kernel(&["features = [\"wgmma\"]"])],
    silent: &[
        ELEMENTWISE
            .kernel(&["features = [\"wgmma\"]"])
            .targets(&["h100"]),
        ELEMENTWISE,
    ],
};
