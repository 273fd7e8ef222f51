//! The availability table of `amd-builtin-unavailable`, checked against the real compiler: each
//! builtin is compiled (to assembly, so the backend's instruction selection runs too) for every
//! target the table judges, and clang-19 must accept it exactly where the table says the target
//! has it.
//!
//! Needs clang-19 with the AMDGPU backend (`KPLAN_HIP_CLANG` or `clang-19` on PATH); no HIP
//! headers are used. Without it the test is skipped with a printed reason, unless
//! `KPLAN_REQUIRE_TOOLCHAINS=1`, when it fails.

use kplan_scan::rules::amd_builtin_unavailable::has_builtin;
use kplan_test_support::toolchain;
use rayon::prelude::*;
use std::process::Command;

const TARGETS: &[&str] = &[
    "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1151", "gfx1201",
];

const PRELUDE: &str = "typedef short s2 __attribute__((ext_vector_type(2)));\ntypedef unsigned short u2 __attribute__((ext_vector_type(2)));\ntypedef _Float16 h2 __attribute__((ext_vector_type(2)));\ntypedef _Float16 h4 __attribute__((ext_vector_type(4)));\ntypedef _Float16 h8 __attribute__((ext_vector_type(8)));\ntypedef _Float16 h16 __attribute__((ext_vector_type(16)));\ntypedef short s4 __attribute__((ext_vector_type(4)));\ntypedef float f2 __attribute__((ext_vector_type(2)));\ntypedef float f4 __attribute__((ext_vector_type(4)));\ntypedef float f8 __attribute__((ext_vector_type(8)));\ntypedef float f16v __attribute__((ext_vector_type(16)));\ntypedef double d4 __attribute__((ext_vector_type(4)));\ntypedef int i4 __attribute__((ext_vector_type(4)));\ntypedef int i8v __attribute__((ext_vector_type(8)));\ntypedef int i2 __attribute__((ext_vector_type(2)));\n";

/// (builtin without `__builtin_amdgcn_`, function body calling it)
const CALLS: &[(&str, &str)] = &[
    ("sdot2", "{ s2 a={}, b={}; return __builtin_amdgcn_sdot2(a, b, 0, false); }"),
    ("udot2", "{ u2 a={}, b={}; return __builtin_amdgcn_udot2(a, b, 0u, false); }"),
    ("sdot4", "{ return __builtin_amdgcn_sdot4(x, x, 0, false); }"),
    ("udot4", "{ return __builtin_amdgcn_udot4(ux, ux, 0u, false); }"),
    ("sudot4", "{ return __builtin_amdgcn_sudot4(true, x, false, x, 0, false); }"),
    ("sdot8", "{ return __builtin_amdgcn_sdot8(x, x, 0, false); }"),
    ("udot8", "{ return __builtin_amdgcn_udot8(ux, ux, 0u, false); }"),
    ("sudot8", "{ return __builtin_amdgcn_sudot8(true, x, false, x, 0, false); }"),
    ("fdot2", "{ h2 a={}, b={}; return (int)__builtin_amdgcn_fdot2(a, b, 0.f, false); }"),
    ("fdot2_f16_f16", "{ h2 a={}, b={}; return (int)__builtin_amdgcn_fdot2_f16_f16(a, b, (_Float16)0); }"),
    ("fdot2_bf16_bf16", "{ s2 a={}, b={}; return (int)__builtin_amdgcn_fdot2_bf16_bf16(a, b, (short)0); }"),
    ("fdot2_f32_bf16", "{ s2 a={}, b={}; return (int)__builtin_amdgcn_fdot2_f32_bf16(a, b, 0.f, false); }"),
    ("permlane16", "{ return __builtin_amdgcn_permlane16(ux, ux, ux, ux, false, false); }"),
    ("permlanex16", "{ return __builtin_amdgcn_permlanex16(ux, ux, ux, ux, false, false); }"),
    ("permlane64", "{ return __builtin_amdgcn_permlane64(ux); }"),
    ("ballot_w32", "{ return __builtin_amdgcn_ballot_w32(x != 0); }"),
    ("ballot_w64", "{ return (int)__builtin_amdgcn_ballot_w64(x != 0); }"),
    ("s_memtime", "{ return (int)__builtin_amdgcn_s_memtime(); }"),
    ("s_memrealtime", "{ return (int)__builtin_amdgcn_s_memrealtime(); }"),
    ("s_sendmsg_rtnl", "{ return (int)__builtin_amdgcn_s_sendmsg_rtnl(0x83); }"),
    ("ds_bpermute", "{ return __builtin_amdgcn_ds_bpermute(x, x); }"),
    ("ds_swizzle", "{ return __builtin_amdgcn_ds_swizzle(x, 0x1f); }"),
    ("mov_dpp", "{ return __builtin_amdgcn_mov_dpp(x, 0x111, 0xf, 0xf, false); }"),
    ("update_dpp", "{ return __builtin_amdgcn_update_dpp(x, x, 0x111, 0xf, 0xf, false); }"),
    ("mfma_f32_32x32x8f16", "{ h4 a={}, b={}; f16v c={}; return (int)__builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0)[0]; }"),
    ("mfma_f32_16x16x16f16", "{ h4 a={}, b={}; f4 c={}; return (int)__builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0)[0]; }"),
    ("mfma_f32_16x16x16bf16_1k", "{ s4 a={}, b={}; f4 c={}; return (int)__builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0)[0]; }"),
    ("mfma_f64_16x16x4f64", "{ d4 c={}; return (int)__builtin_amdgcn_mfma_f64_16x16x4f64(1.0, 1.0, c, 0, 0, 0)[0]; }"),
    ("mfma_i32_16x16x32_i8", "{ i4 c={}; return __builtin_amdgcn_mfma_i32_16x16x32_i8(l, l, c, 0, 0, 0)[0]; }"),
    ("mfma_f32_16x16x32_fp8_fp8", "{ f4 c={}; return (int)__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(l, l, c, 0, 0, 0)[0]; }"),
    ("mfma_f32_16x16x8_xf32", "{ f2 a={}, b={}; f4 c={}; return (int)__builtin_amdgcn_mfma_f32_16x16x8_xf32(a, b, c, 0, 0, 0)[0]; }"),
    ("wmma_f32_16x16x16_f16_w32", "{ h16 a={}, b={}; f8 c={}; return (int)__builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c)[0]; }"),
    ("wmma_f32_16x16x16_f16_w32_gfx12", "{ h8 a={}, b={}; f8 c={}; return (int)__builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c)[0]; }"),
    ("wmma_i32_16x16x16_iu8_w32", "{ i4 a={}, b={}; i8v c={}; return __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, a, true, b, c, false)[0]; }"),
    ("cvt_pk_fp8_f32", "{ return __builtin_amdgcn_cvt_pk_fp8_f32(1.f, 1.f, x, false); }"),
    ("cvt_f32_fp8", "{ return (int)__builtin_amdgcn_cvt_f32_fp8(x, 0); }"),
    ("global_atomic_fadd_f64", "{ return (int)__builtin_amdgcn_global_atomic_fadd_f64(gd, 1.0); }"),
    ("global_atomic_fadd_f32", "{ return (int)__builtin_amdgcn_global_atomic_fadd_f32(gf, 1.f); }"),
    ("flat_atomic_fadd_f64", "{ return (int)__builtin_amdgcn_flat_atomic_fadd_f64(pd, 1.0); }"),
    ("ds_atomic_fadd_f32", "{ return (int)__builtin_amdgcn_ds_atomic_fadd_f32(sf, 1.f); }"),
    ("global_atomic_fadd_v2f16", "{ h2 v={}; return (int)__builtin_amdgcn_global_atomic_fadd_v2f16(gh2, v)[0]; }"),
    ("global_atomic_fadd_v2bf16", "{ s2 v={}; return (int)__builtin_amdgcn_global_atomic_fadd_v2bf16(gs2, v)[0]; }"),
    ("s_setprio", "{ __builtin_amdgcn_s_setprio(1); return 0; }"),
    ("iglp_opt", "{ __builtin_amdgcn_iglp_opt(0); return 0; }"),
    ("sched_group_barrier", "{ __builtin_amdgcn_sched_group_barrier(8, 1, 0); return 0; }"),
    ("readfirstlane", "{ return __builtin_amdgcn_readfirstlane(x); }"),
    ("s_sleep", "{ __builtin_amdgcn_s_sleep(1); return 0; }"),
    ("fmed3h", "{ return (int)__builtin_amdgcn_fmed3h((_Float16)1, (_Float16)1, (_Float16)1); }"),
    ("perm", "{ return __builtin_amdgcn_perm(ux, ux, ux); }"),
    ("s_wait_event_export_ready", "{ __builtin_amdgcn_s_wait_event_export_ready(); return 0; }"),
    ("s_barrier_signal", "{ __builtin_amdgcn_s_barrier_signal(-1); return 0; }"),
];

#[test]
fn builtin_availability_matches_clang() {
    let Some(clang) = toolchain::hip_clang() else {
        return toolchain::skip(
            "no clang with the AMDGPU backend (set KPLAN_HIP_CLANG or install clang-19)",
        );
    };
    let dir = kplan_test_support::tempdir("amdgcn-builtins");
    let sig = "__attribute__((device)) int f(int x, unsigned ux, long l, __attribute__((address_space(1))) double* gd, __attribute__((address_space(1))) float* gf, double* pd, __attribute__((address_space(3))) float* sf, __attribute__((address_space(1))) h2* gh2, __attribute__((address_space(1))) s2* gs2, __attribute__((address_space(1))) i2* gi2) ";
    // the control: a builtin every target has
    let control = dir.path().join("control.hip");
    std::fs::write(
        &control,
        format!("{PRELUDE}{sig}{{ return __builtin_amdgcn_readfirstlane(x); }}\n"),
    )
    .unwrap();
    let compiles = |file: &std::path::Path, target: &str| -> bool {
        Command::new(&clang)
            .args(["-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc"])
            .arg(format!("--offload-arch={target}"))
            .args(["-S", "-o", "/dev/null"])
            .arg(file)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !compiles(&control, "gfx942") {
        return toolchain::skip(format!(
            "{} cannot compile HIP device code for gfx942",
            clang.display()
        ));
    }
    let wrong: Vec<String> = CALLS
        .par_iter()
        .flat_map(|(name, body)| {
            let file = dir.path().join(format!("{name}.hip"));
            std::fs::write(&file, format!("{PRELUDE}{sig}{body}\n")).unwrap();
            TARGETS
                .iter()
                .filter_map(|t| {
                    let want = has_builtin(name, t)?;
                    let got = compiles(&file, t);
                    (want != got)
                        .then(|| format!("{name} on {t}: table says {want}, clang-19 says {got}"))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // every builtin of the sample is judged on some target
    for (name, _) in CALLS {
        assert!(
            TARGETS.iter().any(|t| has_builtin(name, t).is_some()),
            "{name} not in the table"
        );
    }
}
