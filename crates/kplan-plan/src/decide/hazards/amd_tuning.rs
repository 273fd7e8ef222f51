//! `amd-tuning`: hand-written code for both NVIDIA and AMD targets: NVIDIA's launch and tuning
//! constants reused on AMD land far below its roofline [PT-132964, ROCM-TRITON-422].

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // AMD tuning gap for memory-bound code.
    let amd: Vec<&Target> = coded
        .iter()
        .copied()
        .filter(|t| t.vendor() == Vendor::Amd)
        .collect();
    if !amd.is_empty() && coded.iter().any(|t| t.vendor() == Vendor::Nvidia) {
        risks.push(
            Risk::builder("amd-tuning", "hazard", "medium")
                .title("AMD paths land 3-5x below their roofline when NVIDIA launch/tuning constants are reused")
                .targets(names(&amd))
                .mitigation("keep tuning constants per backend (vector width, elements per thread, num_warps, waves_per_eu); emit 16-byte \
                             vector loads; launch enough workgroups (MI300X: >= 1024); check achieved bandwidth with `kplan bench` on AMD")
                .evidence(["MI300X torch.sum 33% -> 60% of peak after one reduce-config change (PT-132964, PT-135397)", "Triton RMSNorm on MI300 below half of peak until constexpr N and vector loads (ROCM-TRITON-422)"])
                .sources(["PT-132964", "PT-135397", "ROCM-TRITON-422"])
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "amd-tuning",
    fires: &[ELEMENTWISE],
    silent: &[
        ELEMENTWISE.targets(&["mi300x"]),
        ELEMENTWISE.targets(&["h100", "a100"]),
    ],
};
