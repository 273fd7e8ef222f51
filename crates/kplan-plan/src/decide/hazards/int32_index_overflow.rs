//! `int32-index-overflow`: a tensor of the problem (from its sizes, tables and sparse arrays)
//! has 2^31 elements or more, which overflows 32-bit element offsets on a GPU target; or (at
//! medium severity) fewer elements but 2^31 bytes or more, which overflows 32-bit byte offsets.

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
    // The elements fit, the bytes do not: 32-bit byte offsets (pointer arithmetic in int,
    // 32-bit buffer offsets) wrap past 2^31 bytes of one tensor.
    let elem = spec.storage_size().max(spec.output_size()).max(1.0);
    let bytes = largest * elem;
    if largest < (1u64 << 31) as f64 && bytes >= (1u64 << 31) as f64 && !gpu.is_empty() {
        risks.push(
            Risk::builder("int32-index-overflow", "hazard", "medium")
                .title(format!("a tensor of {bytes:.3e} bytes overflows 32-bit byte offsets (2^31 = 2.147e9), though its {largest:.3e} elements fit"))
                .targets(names(&gpu))
                .mitigation("keep element indices in 32 bits only where they are multiplied by the element size in 64 bits (size_t / int64 byte offsets, 64-bit base pointers per tile); check any 32-bit buffer offset the code or its compiler uses; test with a tensor over 2 GiB")
                .fallback("split the tensor into chunks under 2 GiB (one launch or one base pointer each)")
                .evidence([format!("largest tensor: {largest:.3e} elements x {elem} B (problem {:?})", spec.dims)])
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "int32-index-overflow",
    fires: &[
        ELEMENTWISE.problem("n = 4000000000"),
        ELEMENTWISE.problem("n = 1000000000"),
    ],
    silent: &[ELEMENTWISE],
};
