//! Checks the AMD occupancy model against the real compiler: clang's
//! `-Rpass-analysis=kernel-resource-usage` reports the VGPRs a kernel uses and the waves per
//! SIMD LLVM expects; kplan's model, fed the same VGPR count, must agree.
//!
//! Needs a HIP-capable clang: `KPLAN_HIP_CLANG` (set by scripts/test-env.sh) or `clang-19` on
//! PATH. Without one the test is skipped with a printed reason, unless
//! `KPLAN_REQUIRE_TOOLCHAINS=1`, when it fails.

use kplan_kb::{occupancy, Kb};
use kplan_test_support::toolchain;
use std::path::PathBuf;
use std::process::Command;

/// (VGPRs used, waves per SIMD) for each kernel, as clang reports them.
fn clang_report(clang: &PathBuf, arch: &str, block: u32, vgprs: &[u32]) -> Vec<(u32, u32)> {
    let dir = std::env::temp_dir().join(format!("kplan-kb-occ-{}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("k.hip");
    let mut text = String::new();
    for v in vgprs {
        // The clobber of v{N-1} forces the kernel to allocate N VGPRs.
        text.push_str(&format!(
            "extern \"C\" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, {block}))) \
             void k{v}(float* p) {{ asm volatile(\"\" ::: \"v{}\"); p[__builtin_amdgcn_workitem_id_x()] = 1.0f; }}\n",
            v - 1
        ));
    }
    std::fs::write(&src, text).unwrap();
    let out = Command::new(clang)
        .args([
            "-x",
            "hip",
            "-nogpulib",
            "-nogpuinc",
            "--cuda-device-only",
            "-O2",
            "-S",
        ])
        .arg(format!("--offload-arch={arch}"))
        .arg(&src)
        .arg("-o")
        .arg(dir.join("k.s"))
        .arg("-Rpass-analysis=kernel-resource-usage")
        .output()
        .expect("run clang");
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "clang failed for {arch}:\n{stderr}");
    let field = |line: &str, key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let mut used = Vec::new();
    let mut occ = Vec::new();
    for line in stderr.lines() {
        if let Some(v) = field(line, "remark:     VGPRs: ") {
            used.push(v);
        }
        if let Some(o) = field(line, "Occupancy [waves/SIMD]: ") {
            occ.push(o);
        }
    }
    assert_eq!(
        used.len(),
        vgprs.len(),
        "unexpected clang output for {arch}:\n{stderr}"
    );
    used.into_iter().zip(occ).collect()
}

#[test]
fn amd_vgpr_occupancy_matches_llvm() {
    let Some(clang) = toolchain::hip_clang() else {
        return toolchain::skip("no HIP clang (set KPLAN_HIP_CLANG or install clang-19)");
    };
    let kb = Kb::builtin();
    let mut checked = 0;
    // gfx950 is not a clang-19 target; its entry follows gfx942's rules (see its notes).
    for arch_id in ["gfx908", "gfx90a", "gfx942", "gfx1100", "gfx1201"] {
        let arch = kb.arch(arch_id).unwrap();
        let simds = arch.simds_per_cu.as_ref().unwrap().value.unwrap()
            * arch.cus_per_wgp.as_ref().and_then(|f| f.value).unwrap_or(1);
        let wave = arch.warp_size.value.unwrap();
        // One wave per SIMD per block: blocks per unit then equal waves per SIMD.
        let block = wave * simds;
        for (vgprs, llvm_waves) in clang_report(&clang, arch_id, block, &[64, 100, 128, 200]) {
            let o = occupancy(arch, block, Some(vgprs), 0).unwrap();
            assert_eq!(
                o.warps_per_sm / simds,
                llvm_waves,
                "{arch_id}: {vgprs} VGPRs: kplan {o:?}, LLVM {llvm_waves} waves/SIMD"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 20);
}
