//! `shared-memory-budget`: a kernel that stages data in shared memory / LDS, written for
//! targets whose per-block budgets differ by more than 1.5x: a tile sized for the largest does
//! not fit the smallest.

use super::test_support::{ELEMENTWISE, GEMM};
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Shared memory / LDS budget.
    let budgets: Vec<(&Target, u64)> = coded
        .iter()
        .filter_map(|t| t.arch.shared_per_block_bytes.value.map(|b| (*t, b)))
        .collect();
    // Only a kernel that stages data in shared memory / LDS meets the budget difference.
    if let (true, Some(min), Some(max)) = (
        spec.uses_shared_memory() && !crate::decide::tiles::is_gemv(spec),
        budgets.iter().map(|b| b.1).min(),
        budgets.iter().map(|b| b.1).max(),
    ) {
        if max as f64 > 1.5 * min as f64 {
            let small: Vec<&Target> = budgets
                .iter()
                .filter(|b| (b.1 as f64) * 1.5 < max as f64)
                .map(|b| b.0)
                .collect();
            risks.push(
                Risk::builder("shared-memory-budget", "hazard", "medium")
                    .title(format!("shared memory/LDS per block differs: {} to {}", kib(min), kib(max)))
                    .targets(names(&small))
                    .mitigation("derive tile shapes from each target's budget (section 6), never from the largest; query the \
                                 limit at runtime (cudaDevAttrMaxSharedMemoryPerBlockOptin / hipDeviceAttributeMaxSharedMemoryPerBlock) \
                                 and opt in above 48 KiB on NVIDIA with cudaFuncSetAttribute")
                    .fallback("fewer pipeline stages or smaller tiles on the small-LDS targets")
                    .evidence(budgets
                        .iter()
                        .map(|(t, b)| format!("{}: {} per block [{}]", t.name, kib(*b), t.arch.shared_per_block_bytes.source)))
                    .sources(budgets.iter().map(|(t, _)| t.arch.shared_per_block_bytes.source.clone()).collect::<std::collections::BTreeSet<_>>())
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "shared-memory-budget",
    fires: &[GEMM],
    silent: &[ELEMENTWISE],
};
