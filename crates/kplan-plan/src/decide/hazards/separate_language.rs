//! `separate-language-<arch>`: an Intel or Apple GPU target, programmed in another language
//! (SYCL, OpenCL, Metal) outside the CUDA/HIP source: a third implementation to keep in step.

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
            "{}: {} warp/sub-group size {}{} [{}]",
            t.name,
            t.arch.family,
            t.warp()
                .map(|w| w.to_string())
                .unwrap_or_else(|| "unknown".into()),
            if t.arch.warp_sizes.len() > 1 {
                format!(
                    " (selectable: {})",
                    t.arch
                        .warp_sizes
                        .iter()
                        .map(|w| w.to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                )
            } else {
                String::new()
            },
            t.arch.warp_size.source
        )];
        if let Some(n) = &t.arch.warp_size.note {
            evidence.push(format!("{}: {n}", t.name));
        }
        evidence.extend(t.arch.notes.iter().map(|n| format!("{}: {n}", t.name)));
        risks.push(Risk {
            id: format!("separate-language-{}", t.arch.id),
            title: format!("{} is programmed in {}, outside the CUDA/HIP source", t.name, if lang == "none" { "another language" } else { lang }),
            kind: "hazard".into(),
            targets: vec![t.name.clone()],
            severity: "medium".into(),
            mitigation: format!(
                "keep the algorithm's parameters (tile sizes, vector width, sub-group size) in one shared description and verify this leg against the same CPU reference; pin the sub-group/SIMD-group size explicitly{}",
                if t.vendor() == Vendor::Apple { "; Metal has no fp64 and needs a macOS runner to compile" } else { " (reqd_sub_group_size)" }
            ),
            fallback: Some("the framework's backend for this device (XPU / MPS) where the kernel is not worth a third implementation".into()),
            evidence,
            sources: vec![t.arch.warp_size.source.clone()],
        });
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "separate-language-intel-xe-hpc",
    fires: &[r#"[kernel]
name = "k"
op = "elementwise"
dtypes = ["fp32"]
problem = { n = 1048576 }
[backends]
targets = ["h100", "intel-xe-hpc"]
[abstraction]
allowed = ["hip-single-source", "sycl"]
"#],
    silent: &[r#"[kernel]
name = "k"
op = "elementwise"
dtypes = ["fp32"]
problem = { n = 1048576 }
[backends]
targets = ["h100", "mi300x"]
[abstraction]
allowed = ["hip-single-source"]
"#],
};
