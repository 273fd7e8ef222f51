//! `amd-launch-bounds`: HIP/C++ kernel code for a wave64 (CDNA) target. Without
//! `__launch_bounds__`, the AMDGPU backend assumes blocks of up to 1024 threads
//! (`amdgpu-flat-work-group-size` defaults to 1,1024 [LLVM-AMDGPU]); 1024 threads are 16 waves
//! of 64 on a CU's four SIMDs, so the register allocator caps each wave at 512 / 4 = 128
//! registers (of a 512-entry file per lane per SIMD [ROCm-specs]) and spills beyond. Triton kernels set the same bound through `num_warps` and tune
//! occupancy with `waves_per_eu`.

use super::test_support::{Fx, ELEMENTWISE};
use super::{Cx, Fixtures};
use crate::model::Risk;

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let cdna: Vec<String> = cx
        .coded
        .iter()
        .filter(|t| t.is_cdna())
        .map(|t| t.name.clone())
        .collect();
    if cdna.is_empty() {
        return None;
    }
    let triton_only = cx
        .coded
        .iter()
        .filter(|t| t.is_cdna())
        .all(|t| cx.abstraction(t) == crate::decide::Abstraction::Triton);
    let mitigation = if triton_only {
        "set num_warps to the block the tile needs (it is the launch bound) and tune waves_per_eu (occupancy hint) per CDNA target in the autotune configs; check the kernel's VGPR count and spills (AMD_LOG_LEVEL / the compiled .s) before comparing configs"
    } else {
        "declare `__launch_bounds__(BLOCK_THREADS)` on every HIP kernel with the block size actually launched (256 leaves up to 512 VGPRs incl. AccVGPRs per wave on gfx90a/gfx942); add `__attribute__((amdgpu_waves_per_eu(N)))` where occupancy matters; read VGPR count and spills from the compiler (-Rpass-analysis=kernel-resource-usage)"
    };
    Some(
        Risk::builder("amd-launch-bounds", "toolchain", "medium")
            .title("without a launch bound, a wave64 kernel is capped at 128 VGPRs (HIP assumes 1024-thread blocks)")
            .targets(cdna)
            .mitigation(mitigation)
            .evidence(["amdgpu-flat-work-group-size defaults to 1,1024: the register budget must fit 16 waves per CU [LLVM-AMDGPU]", "CDNA2/CDNA3: a 512 KiB VGPR file per CU (4 SIMDs x 64 lanes x 4 bytes x 512 registers, AccVGPRs included) [ROCm-specs]"])
            .sources(["LLVM-AMDGPU", "ROCm-specs"])
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = ELEMENTWISE
    .op("stencil")
    .dtypes(&["fp64"])
    .problem("nx = 512, ny = 512, nz = 512, points = 7, radius = 1")
    .targets(&["mi300x"]);

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "amd-launch-bounds",
    fires: &[SPEC],
    silent: &[SPEC.targets(&["sm_90", "gfx1100"])],
};
