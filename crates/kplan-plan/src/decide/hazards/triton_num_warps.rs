//! `triton-num-warps`: Triton code on a wave64 target, where `num_warps` counts 64-lane
//! wavefronts (twice the threads of the same setting on NVIDIA) [PT-125084, TRITON-6106].

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Triton num_warps semantics on wave64.
    let triton_used = cx
        .strategy
        .per_target
        .iter()
        .any(|p| p.abstraction == Abstraction::Triton);
    let wave64: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.warp() == Some(64))
        .collect();
    if triton_used && !wave64.is_empty() {
        risks.push(Risk {
            id: "triton-num-warps".into(),
            title: "Triton `num_warps` counts 64-lane wavefronts on wave64 AMD targets".into(),
            kind: "hazard".into(),
            targets: names(&wave64),
            severity: "medium".into(),
            mitigation: if gpu.iter().any(|t| t.vendor() == kplan_kb::Vendor::Nvidia) {
                "autotune num_warps per backend (num_warps = 8 is 256 threads on NVIDIA but 512 on CDNA; at most 16 on wave64 \
                 with the 1024-thread limit); halve NVIDIA's num_warps as the AMD starting point; never hard-code 32 lanes in launch code"
                    .into()
            } else {
                // No NVIDIA target: no NVIDIA setting to start from.
                "autotune num_warps per target: it counts 64-lane wavefronts here (num_warps = 8 is 512 threads; at most 16 \
                 with the 1024-thread limit), so settings copied from wave32 or NVIDIA code launch twice the threads; never hard-code 32 lanes in launch code"
                    .into()
            },
            fallback: None,
            evidence: vec!["halving num_warps on AMD restored 16-B vectorization, ~10% (PT-125084)".into(), "Triton caps num_warps by the device warp size (TRITON-6106)".into()],
            sources: vec!["PT-125084".into(), "TRITON-6106".into()],
        });
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "triton-num-warps",
    fires: &[ELEMENTWISE.allowed(&["triton"])],
    silent: &[
        ELEMENTWISE
            .targets(&["h100", "rx7900xtx"])
            .allowed(&["triton"]),
        ELEMENTWISE,
    ],
};
