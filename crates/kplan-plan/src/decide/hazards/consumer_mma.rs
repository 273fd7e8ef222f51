//! `nvidia-consumer-mma`: a matrix kernel (a matrix op class, a block-scaled or fp8 dtype, or
//! a tensor-core feature) on an NVIDIA target of compute capability 12.x (GeForce and
//! workstation Blackwell): these have neither Hopper's wgmma nor datacenter Blackwell's tcgen05
//! and tensor memory, and about 100 KB of shared memory per block, so kernels written for
//! sm_90a / sm_100a do not run there. Fires from the KB's feature table and shared-memory facts.

use super::test_support::GEMM;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let (spec, kb) = (cx.spec, cx.kb);
    let matrix = spec.op.uses_matrix_units()
        || spec.block_scale.is_some()
        || spec.features.iter().any(|f| {
            matches!(
                f.as_str(),
                "tensor-cores" | "mma-sync" | "wgmma" | "tcgen05" | "wmma" | "fp8-matrix"
            ) || f.contains("tensor-core")
        });
    if !matrix {
        return Vec::new();
    }
    let lacking = |t: &Target, f: &str| kb.availability(f, &t.arch.id) == Availability::No;
    let hit: Vec<&Target> = cx
        .gpu
        .iter()
        .copied()
        .filter(|t| t.vendor() == Vendor::Nvidia)
        .filter(|t| t.sm().is_some_and(|s| s >= 120))
        .filter(|t| lacking(t, "wgmma") && lacking(t, "tcgen05"))
        .collect();
    if hit.is_empty() {
        return Vec::new();
    }
    let evidence = hit.iter().map(|t| {
        let smem = t
            .arch
            .shared_per_block_bytes
            .value
            .map(|b| format!("{} KiB", b / 1024))
            .unwrap_or_else(|| "unknown".into());
        format!(
            "{}: wgmma no, tcgen05 no [PTX-wgmma, PTX-tcgen05]; shared memory per block {smem} [{}]",
            t.name, t.arch.shared_per_block_bytes.source
        )
    });
    vec![Risk::builder("nvidia-consumer-mma", "hazard", "high")
        .title("sm_120-class Blackwell has no wgmma, no tcgen05/TMEM and less shared memory: Hopper and datacenter-Blackwell kernels do not run")
        .targets(names(&hit))
        .mitigation("use kernels built for sm_120 itself (mma.sync with the block-scaled fp8/fp4 extensions; CUTLASS's sm_120 collectives, cuBLASLt), size tiles and stages for the smaller shared memory, and do not assume a kernel or library path that exists for sm_90a/sm_100a exists here")
        .fallback("mma.sync tiles sized for the smaller shared memory: below the datacenter kernels' tile sizes")
        .evidence(evidence)
        .sources(["PTX-wgmma", "PTX-tcgen05", "CUDA-120"])
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "nvidia-consumer-mma",
    fires: &[GEMM.targets(&["sm_120"])],
    silent: &[
        GEMM.targets(&["sm_100a", "h100"]),
        super::test_support::ELEMENTWISE.targets(&["sm_120"]),
    ],
};
