//! `int32-index-overflow`: a tensor of the problem (from its sizes, tables and sparse arrays)
//! has 2^31 elements or more, which overflows 32-bit element offsets on a GPU target.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // int32 indices at the problem's size: a tensor of 2^31 elements or more overflows 32-bit
    // offsets (the default index type of most kernels).
    let largest = crate::decide::risks::largest_tensor(spec);
    if largest >= (1u64 << 31) as f64 && !gpu.is_empty() {
        risks.push(
            Risk::builder("int32-index-overflow", "hazard", "high")
                .title(format!("a tensor of {largest:.3e} elements overflows 32-bit indices (2^31 = 2.147e9)"))
                .targets(names(&gpu))
                .mitigation("compute element offsets in 64 bits (size_t / int64 index math, Triton `tl.int64` program offsets); keep 32-bit indices only inside a tile")
                .fallback("split the problem into chunks below 2^31 elements (one launch each)")
                .evidence([format!("largest tensor: {largest:.3e} elements (problem {:?})", spec.dims)])
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "int32-index-overflow",
    fires: &[ELEMENTWISE.problem("n = 4000000000")],
    silent: &[ELEMENTWISE],
};
