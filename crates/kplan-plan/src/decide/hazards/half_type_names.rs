//! `half-type-names`: one C++ source is compiled for NVIDIA and AMD targets and the kernel
//! uses bf16, fp16 or fp8 values. The type and header names differ: `__nv_bfloat16`
//! (`cuda_bf16.h`) is `__hip_bfloat16` (`hip/hip_bf16.h`), `__half` comes from `cuda_fp16.h`
//! vs `hip/hip_fp16.h`, and the fp8 types are `__nv_fp8_e4m3` vs `__hip_fp8_e4m3` (OCP) and
//! `__hip_fp8_e4m3_fnuz` (gfx942) [CLR]; some conversion and packed-math intrinsics exist only
//! under one name.

use super::Cx;
use crate::model::Risk;
use kplan_kb::{Dtype, Vendor};

pub fn check(cx: &Cx) -> Option<Risk> {
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
    Some(Risk {
        id: "half-type-names".into(),
        title: format!(
            "{} type names and headers differ between CUDA and HIP",
            half.iter().map(|d| d.as_str()).collect::<Vec<_>>().join("/")
        ),
        kind: "toolchain".into(),
        targets: amd,
        severity: "medium".into(),
        mitigation: "name the types once in the portability header (a `kplan_bf16`-style typedef chosen by platform) and convert through functions that exist on both (`__float2bfloat16`, `__bfloat162float`); keep NVIDIA-only intrinsics behind the platform guard; compile both platforms in CI".into(),
        fallback: None,
        evidence: names.iter().map(|n| format!("{n} [CLR]")).collect(),
        sources: vec!["CLR".into()],
    })
}

#[cfg(test)]
mod tests {
    use crate::decide::hazards::test_support::risk_ids;

    const SPEC: &str = "[kernel]\nname = \"n\"\nop = \"norm\"\ndtypes = [DT, \"fp32\"]\nproblem = { rows = 16384, cols = 4096 }\n[backends]\ntargets = [\"sm_90\", \"gfx942\"]\n[abstraction]\nallowed = [\"hip-single-source\"]\n";

    #[test]
    fn fires_for_bf16_in_shared_cpp() {
        let ids = risk_ids(&SPEC.replace("DT", "\"bf16\""));
        assert!(ids.iter().any(|i| i == "half-type-names"), "{ids:?}");
    }

    #[test]
    fn silent_for_fp32() {
        let ids = risk_ids(&SPEC.replace("DT", "\"fp32\""));
        assert!(!ids.iter().any(|i| i == "half-type-names"), "{ids:?}");
    }
}
