//! `separate-language-<arch>`: an Intel or Apple GPU target, programmed in another language
//! (SYCL, OpenCL, Metal) outside the CUDA/HIP source: a third implementation to keep in step.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Intel / Apple: a third code path in another language.
    for t in gpu
        .iter()
        .filter(|t| matches!(t.vendor(), Vendor::Intel | Vendor::Apple))
    {
        let lang: &str = cx.abstraction(t).into();
        let mut evidence = vec![format!(
            "{}: {} warp/sub-group size {} [{}]",
            t.name,
            t.arch.family,
            warp_text(t),
            t.arch.warp_size.source
        )];
        if let Some(n) = &t.arch.warp_size.note {
            evidence.push(format!("{}: {n}", t.name));
        }
        evidence.extend(t.arch.notes.iter().map(|n| format!("{}: {n}", t.name)));
        risks.push(
            Risk::builder(format!("separate-language-{}", t.arch.id), "hazard", "medium")
                .title(format!("{} is programmed in {}, outside the CUDA/HIP source", t.name, if lang == "none" { "another language" } else { lang }))
                .targets(vec![t.name.clone()])
                .mitigation(format!(
                    "keep the algorithm's parameters (tile sizes, vector width, sub-group size) in one shared description and verify this leg against the same CPU reference; pin the sub-group/SIMD-group size explicitly{}",
                    if t.vendor() == Vendor::Apple { "; Metal has no fp64 and needs a macOS runner to compile" } else { " (reqd_sub_group_size)" }
                ))
                .fallback("the framework's backend for this device (XPU / MPS) where the kernel is not worth a third implementation")
                .evidence(evidence)
                .sources([t.arch.warp_size.source.clone()])
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "separate-language-intel-xe-hpc",
    fires: &[ELEMENTWISE
        .targets(&["h100", "intel-xe-hpc"])
        .allowed(&["hip-single-source", "sycl"])],
    silent: &[ELEMENTWISE],
};
