//! `fp64-rate`: an fp64 (or complex128) kernel on a GPU target whose fp64 rate is a small
//! fraction of its fp32 rate (consumer and inference parts: under 1/8), or whose fp32 rate the
//! KB has but not its fp64 rate.
//! Fires from the spec's dtypes and the KB's device peaks.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let spec = cx.spec;
    if !spec.all_dtypes().contains(&Dtype::Fp64) {
        return Vec::new();
    }
    let mut slow: Vec<&Target> = Vec::new();
    let mut evidence: Vec<String> = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    for t in cx.gpu.iter().copied() {
        let Some(d) = t.device.as_deref() else {
            continue;
        };
        let fp64 = d.vector_peak(Dtype::Fp64).or(d.peak(Dtype::Fp64));
        let fp32 = d.vector_peak(Dtype::Fp32).or(d.peak(Dtype::Fp32));
        let src = d
            .peak_fact(Dtype::Fp64)
            .map(|f| f.source.clone())
            .unwrap_or_default();
        match (fp64, fp32) {
            (Some(a), Some(b)) if b > 0.0 && a / b < 0.125 => {
                evidence.push(format!(
                    "{}: fp64 {a} TFLOP/s against fp32 {b} (1/{:.0}) [{src}]",
                    t.name,
                    b / a
                ));
            }
            // The sources gave an fp32 rate but no fp64 rate: unknown, to be measured.
            (None, Some(b)) => {
                evidence.push(format!(
                    "{}: fp32 {b} TFLOP/s but no fp64 peak in the knowledge base for {} [{src}]",
                    t.name, d.name
                ));
            }
            _ => continue,
        }
        if !src.is_empty() && !sources.contains(&src) {
            sources.push(src);
        }
        slow.push(t);
    }
    if slow.is_empty() {
        return Vec::new();
    }
    vec![Risk::builder("fp64-rate", "hazard", "high")
        .title("fp64 (double) runs at a small fraction of the fp32 rate on these targets, or at a rate the KB does not know")
        .targets(names(&slow))
        .mitigation("measure the fp64 kernel (or the library call) on these targets before committing to them; keep fp64 only where the algorithm needs it (mixed precision with fp64 refinement, fp32 with compensated sums), or run the fp64 work on a datacenter part")
        .fallback("fp32 compute with fp64 accumulation or iterative refinement: accuracy to be checked per problem")
        .evidence(evidence)
        .sources(sources)
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "fp64-rate",
    fires: &[ELEMENTWISE.dtypes(&["fp64"]).targets(&["l4", "h100"])],
    silent: &[
        ELEMENTWISE.dtypes(&["fp64"]).targets(&["h100", "mi300x"]),
        ELEMENTWISE.targets(&["l4", "h100"]),
    ],
};
