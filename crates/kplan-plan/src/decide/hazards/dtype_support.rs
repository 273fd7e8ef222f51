//! `dtype-<feature>`: the storage or compute dtype (bf16, bf16 matrix, tf32 matrix) is missing
//! natively on a GPU target (KB support table).

use super::test_support::GEMM;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Other dtypes missing on some target.
    for d in [spec.storage, spec.compute] {
        let f = match d {
            Dtype::Bf16 if spec.op.uses_matrix_units() => "bf16-matrix",
            Dtype::Bf16 => "bf16",
            Dtype::Tf32 => "tf32-matrix",
            _ => continue,
        };
        let miss: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability(f, &t.arch.id) == Availability::No)
            .collect();
        if !miss.is_empty() && !risks.iter().any(|r: &Risk| r.id == format!("dtype-{f}")) {
            risks.push(
                Risk::builder(format!("dtype-{f}"), "dtype", "high")
                    .title(format!(
                        "{} not supported natively on {}",
                        d.as_str(),
                        join_names(&names(&miss))
                    ))
                    .targets(names(&miss))
                    .mitigation(format!(
                        "store {} but compute in fp32 on these targets (convert on load)",
                        d.as_str()
                    ))
                    .fallback_opt(kb.feature(f).and_then(|x| x.fallback.clone()))
                    .evidence(miss.iter().map(|t| {
                        format!(
                            "{}: `{f}` no [{}]",
                            t.name,
                            kb.support(f, &t.arch.id)
                                .map(|s| s.source.as_str())
                                .unwrap_or("-")
                        )
                    }))
                    .sources(
                        miss.iter()
                            .filter_map(|t| kb.support(f, &t.arch.id).map(|s| s.source.clone())),
                    )
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "dtype-bf16-matrix",
    fires: &[GEMM.dtypes(&["bf16", "fp32"]).targets(&["sm_75", "mi300x"])],
    silent: &[GEMM.dtypes(&["bf16", "fp32"])],
};
