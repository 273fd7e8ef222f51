//! `cpu-fallback-drift`: a CPU target beside GPU targets: the CPU path is separate code that
//! can drift from the GPU kernels (it is also the verification reference).

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // CPU fallback.
    let cpu: Vec<&Target> = targets.iter().filter(|t| !t.is_gpu()).collect();
    if !cpu.is_empty() && !gpu.is_empty() {
        risks.push(
            Risk::builder("cpu-fallback-drift", "hazard", "low")
                .title("the CPU fallback is separate code and can drift from the GPU kernels")
                .targets(cpu.iter().map(|t| t.name.clone()).collect())
                // The op's own comparison (a sort compares the permutation, a histogram its
                // counts) where the op KB has one; otherwise the accumulation clause.
                .mitigation(if let Some(how) = cx.op.and_then(|o| o.cpu_reference.as_deref()) {
                    format!(
                        "use the CPU path as the verification reference for every backend, run it on every CI run, and {how}"
                    )
                } else if spec.compute.is_integer() {
                    format!(
                        "use the CPU path as the verification reference for every backend, run it on every CI run, and \
                         accumulate exactly in {} as the GPU kernels do (integer accumulation is exact: compare bit for bit, \
                         no tolerance, no floating-point conversion)",
                        spec.compute.as_str()
                    )
                } else {
                    format!(
                        "use the CPU path as the verification reference for every backend, run it on every CI run, and keep \
                         the accumulation order and dtype (compute in {}) the same as the GPU kernels",
                        spec.compute.as_str()
                    )
                })
                .evidence(cpu.iter().map(|t| format!("{}: {} ({} SIMD lanes per KB `warp_size`)", t.name, t.arch.family, t.warp().unwrap_or(1))))
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "cpu-fallback-drift",
    fires: &[ELEMENTWISE.targets(&["h100", "cpu-x86_64-avx2"])],
    silent: &[ELEMENTWISE, ELEMENTWISE.targets(&["cpu-x86_64-avx2"])],
};
