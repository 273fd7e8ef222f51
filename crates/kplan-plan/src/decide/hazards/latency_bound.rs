//! `latency-bound`: the spec sets a per-call latency budget (`[requirements] latency_us`) for
//! GPU targets: launch overhead and occupancy decide, not bandwidth. The plan turns it into
//! `latency-infeasible` when the budget is below every GPU target's roofline time.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Latency-bound: a latency budget, or a problem whose roofline time is a few microseconds.
    if let Some(b) = spec.latency_us {
        if !gpu.is_empty() {
            risks.push(
                Risk::builder("latency-bound", "hazard", "medium")
                    .title(format!("a {b} us per-call budget: launch overhead and occupancy decide, not bandwidth"))
                    .targets(names(&gpu))
                    .mitigation(crate::decide::scoped("capture the call in a graph ({nvidia: CUDA graphs | amd: HIP graphs}), fuse with neighbouring kernels, size the grid to fill every compute unit ({nvidia: SM | amd: CU}) (split the work: split-KV, split rows), and measure end-to-end latency with `kplan bench` rather than bandwidth", targets))
                    .evidence([format!("[requirements] latency_us = {b}")])
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "latency-bound",
    fires: &[ELEMENTWISE.tables("[requirements]\nlatency_us = 50")],
    silent: &[ELEMENTWISE],
};
