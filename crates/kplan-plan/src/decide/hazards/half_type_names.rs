//! `half-type-names`: one C++ source is compiled for NVIDIA and AMD targets and the kernel
//! uses bf16, fp16 or fp8 values. The type and header names differ: `__nv_bfloat16`
//! (`cuda_bf16.h`) is `__hip_bfloat16` (`hip/hip_bf16.h`), `__half` comes from `cuda_fp16.h`
//! vs `hip/hip_fp16.h`, and the fp8 types are `__nv_fp8_e4m3` vs `__hip_fp8_e4m3` (OCP) and
//! `__hip_fp8_e4m3_fnuz` (gfx942) [CLR]; some conversion and packed-math intrinsics exist only
//! under one name.

use super::test_support::{Fx, ELEMENTWISE};
use super::{Cx, Fixtures};
use crate::model::Risk;
use kplan_kb::{Dtype, Vendor};

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let half: Vec<Dtype> = {
        let mut v: Vec<Dtype> = cx
            .spec
            .all_dtypes()
            .into_iter()
            .filter(|d| matches!(d, Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp8))
            .collect();
        v.sort_by_key(|d| d.as_str());
        v.dedup();
        v
    };
    if half.is_empty() {
        return None;
    }
    let cpp: Vec<&crate::decide::Target> = cx.cpp_coded().collect();
    let nv = cpp.iter().any(|t| t.vendor() == Vendor::Nvidia);
    let amd: Vec<String> = cpp
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .map(|t| t.name.clone())
        .collect();
    if !nv || amd.is_empty() {
        return None;
    }
    let names: Vec<&str> = half
        .iter()
        .map(|d| match d {
            Dtype::Bf16 => "`__nv_bfloat16` (cuda_bf16.h) vs `__hip_bfloat16` (hip/hip_bf16.h)",
            Dtype::Fp16 => "`__half` from cuda_fp16.h vs hip/hip_fp16.h",
            _ => "`__nv_fp8_e4m3` vs `__hip_fp8_e4m3` (OCP) / `__hip_fp8_e4m3_fnuz` (gfx942)",
        })
        .collect();
    Some(
        Risk::builder("half-type-names", "toolchain", "medium")
            .title(format!(
                "{} type names and headers differ between CUDA and HIP",
                half.iter().map(|d| d.as_str()).collect::<Vec<_>>().join("/")
            ))
            .targets(amd)
            .mitigation("name the types once in the portability header (a `kplan_bf16`-style typedef chosen by platform) and convert through functions that exist on both (`__float2bfloat16`, `__bfloat162float`); keep NVIDIA-only intrinsics behind the platform guard; compile both platforms in CI")
            .evidence(names.iter().map(|n| format!("{n} [CLR]")))
            .sources(["CLR"])
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = ELEMENTWISE
    .op("norm")
    .dtypes(&["bf16", "fp32"])
    .problem("rows = 16384, cols = 4096")
    .targets(&["sm_90", "gfx942"]);

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "half-type-names",
    fires: &[SPEC],
    silent: &[SPEC.dtypes(&["fp32", "fp32"])],
};
