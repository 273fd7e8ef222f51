//! The cpu-simt backend end to end: kernels written for 32 lanes pass at W = 32 and fail at
//! W = 64 (reported as a warp-size dependence), their portable rewrites pass at both, kplan's
//! four kernels pass at both, compile errors name the user's file, unwritten outputs fail.
//! Needs a C++ compiler; without one every test is skipped with the reason (required when
//! KPLAN_REQUIRE_TOOLCHAINS=1).

use kplan_run::harness::Harness;
use kplan_run::harness_verify::{
    run_harness, HarnessBackend, HarnessPlan, HarnessReport, HarnessStatus,
};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/simt")
}

fn run(path: &Path, backend: HarnessBackend, warps: &[u32]) -> Option<HarnessReport> {
    let h = Harness::load(path).unwrap_or_else(|e| panic!("{e}"));
    let plan = HarnessPlan {
        backend,
        warps: warps.to_vec(),
        sizes: vec![],
        seed: None,
    };
    let r = run_harness(&h, &plan, &mut |_| {}).unwrap();
    if let Some(s) = &r.skip {
        kplan_test_support::toolchain::skip(&s.reason);
        return None;
    }
    Some(r)
}

fn per_warp(r: &HarnessReport, w: u32) -> (usize, usize) {
    let s = r.warps.iter().find(|s| s.warp == w).unwrap();
    (s.runs, s.failures)
}

/// Passes at 32, fails at 64, with the dependence named.
fn assert_warp32_only(name: &str) -> Option<HarnessReport> {
    let r = run(&fixtures().join(name), HarnessBackend::CpuSimt, &[32, 64])?;
    assert!(r.compile_errors.is_empty(), "{:?}", r.compile_errors);
    let (runs32, fails32) = per_warp(&r, 32);
    let (runs64, fails64) = per_warp(&r, 64);
    assert!(runs32 > 0 && runs64 == runs32);
    assert_eq!(fails32, 0, "{}", r.render_human());
    assert!(fails64 > 0, "{}", r.render_human());
    assert_eq!(r.status, HarnessStatus::Failed);
    let d = r.warp_dependence.as_ref().expect("warp-size dependence");
    assert_eq!(d.passes, vec![32]);
    assert_eq!(d.fails, vec![64]);
    let text = r.render_human();
    assert!(
        text.contains("warp-size dependence: passes at W=32, fails at W=64"),
        "{text}"
    );
    let bad = r.cases.iter().find(|c| !c.passed).unwrap();
    assert!(bad.describe().contains("W=64") && bad.describe().contains("data x="));
    Some(r)
}

fn first_mismatch(r: &HarnessReport) {
    let bad = r.cases.iter().find(|c| !c.passed).unwrap();
    let m = bad.mismatch.as_ref().expect("a first bad element");
    assert!(!m.got.is_empty() && !m.want.is_empty() && m.got != m.want);
}

fn assert_passes_both(path: &Path) {
    let Some(r) = run(path, HarnessBackend::CpuSimt, &[32, 64]) else {
        return;
    };
    assert_eq!(r.status, HarnessStatus::Passed, "{}", r.render_human());
    assert!(per_warp(&r, 32).0 > 0 && per_warp(&r, 64).0 > 0);
    assert!(r.warp_dependence.is_none());
}

#[test]
fn reduction_written_for_32_lanes_fails_at_64() {
    if let Some(r) = assert_warp32_only("reduce_w32.toml") {
        first_mismatch(&r);
    }
}

#[test]
fn reduction_rewritten_portably_passes_both_widths() {
    assert_passes_both(&fixtures().join("reduce_portable.toml"));
    // Spelling 32 without reading across 32-lane halves is width-safe: no false alarm.
    assert_passes_both(&fixtures().join("reduce_mod32.toml"));
}

#[test]
fn ballot_stored_in_32_bits_fails_at_64() {
    if let Some(r) = assert_warp32_only("ballot_w32.toml") {
        first_mismatch(&r);
    }
    assert_passes_both(&fixtures().join("ballot_portable.toml"));
}

#[test]
fn full_mask_shuffle_over_a_partial_warp_fails_at_64() {
    // At W = 64 the 32-thread block fills half the warp: the full mask claims lanes that do not
    // execute the shuffle, which AMD's toolchain rejects; the run stops naming the call site.
    if let Some(r) = assert_warp32_only("partial_warp_full_mask.toml") {
        let bad = r.cases.iter().find(|c| !c.passed).unwrap();
        let e = bad.error.as_deref().unwrap_or("");
        assert!(
            e.contains("__shfl_down_sync at") && e.contains("partial_warp_full_mask.cu:7"),
            "{e}"
        );
        assert!(
            e.contains("does not equal the lanes that execute it"),
            "{e}"
        );
    }
    assert_passes_both(&fixtures().join("partial_warp_portable.toml"));
}

#[test]
fn cooperative_groups_dynamic_shared_half_and_atomics() {
    assert_passes_both(&fixtures().join("cg_atomic.toml"));
}

#[test]
fn kplan_kernels_pass_at_both_widths() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    for k in [
        "reduce_sum",
        "add",
        "softmax",
        "rmsnorm",
        "softmax_rows",
        "rmsnorm_rows",
    ] {
        assert_passes_both(&kernels.join(format!("{k}.toml")));
    }
}

#[test]
fn one_lane_backend_runs_the_same_harness() {
    let Some(r) = run(
        &fixtures().join("reduce_portable.toml"),
        HarnessBackend::Cpu,
        &[],
    ) else {
        return;
    };
    assert_eq!(r.status, HarnessStatus::Passed, "{}", r.render_human());
    assert_eq!(r.warps.len(), 1);
    assert_eq!(r.warps[0].warp, 1);
}

fn scratch(tag: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix(tag).tempdir().unwrap();
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).unwrap();
    }
    std::fs::copy(
        fixtures().join("block_sum_ref.cpp"),
        d.path().join("ref.cpp"),
    )
    .unwrap();
    d
}

fn harness(source: &str) -> String {
    std::fs::read_to_string(fixtures().join("reduce_portable.toml"))
        .unwrap()
        .replace("reduce_portable.cu", source)
        .replace("block_sum_ref.cpp", "ref.cpp")
}

#[test]
fn compile_errors_point_at_the_users_file() {
    let d = scratch(
        "user-err-",
        &[(
            "broken.cu",
            "__global__ void block_sum(const float* x, float* out, int n) {\n    float v = x[0]\n    out[0] = v;\n}\n",
        )],
    );
    std::fs::write(d.path().join("h.toml"), harness("broken.cu")).unwrap();
    let Some(r) = run(&d.path().join("h.toml"), HarnessBackend::CpuSimt, &[64]) else {
        return;
    };
    assert_eq!(r.status, HarnessStatus::Failed);
    let e = r.compile_errors.join("\n");
    let user = std::fs::canonicalize(d.path().join("broken.cu")).unwrap();
    // g++ reports the missing `;` of line 2 at the next token, line 3
    assert!(e.contains(&format!("{}:3:5: error", user.display())), "{e}");
    assert!(
        !e.contains("/src/0-broken.cu"),
        "kplan's copy named in: {e}"
    );
}

#[test]
fn inline_asm_is_a_compile_error_naming_it() {
    let d = scratch(
        "user-asm-",
        &[(
            "asm.cu",
            "__global__ void block_sum(const float* x, float* out, int n) {\n    unsigned lane;\n    asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n    out[0] = x[lane];\n}\n",
        )],
    );
    std::fs::write(d.path().join("h.toml"), harness("asm.cu")).unwrap();
    let Some(r) = run(&d.path().join("h.toml"), HarnessBackend::CpuSimt, &[32]) else {
        return;
    };
    let e = r.compile_errors.join("\n");
    assert!(
        e.contains("asm.cu:3:5: error: inline assembly (`asm`) is not emulated"),
        "{e}"
    );
}

#[test]
fn an_unwritten_output_element_fails() {
    let d = scratch(
        "user-poison-",
        &[(
            "skip_last.cu",
            "__global__ void block_sum(const float* x, float* out, int n) {\n    if (threadIdx.x != 0 || blockIdx.x + 1 == gridDim.x) return;\n    float s = 0.0f;\n    for (int i = blockIdx.x * blockDim.x; i < n && i < (int)((blockIdx.x + 1) * blockDim.x); ++i) s += x[i];\n    out[blockIdx.x] = s;\n}\n",
        )],
    );
    std::fs::write(d.path().join("h.toml"), harness("skip_last.cu")).unwrap();
    let Some(r) = run(&d.path().join("h.toml"), HarnessBackend::CpuSimt, &[32]) else {
        return;
    };
    assert_eq!(r.status, HarnessStatus::Failed);
    let bad = r.cases.iter().find(|c| !c.passed).unwrap();
    let m = bad.mismatch.as_ref().unwrap();
    assert_eq!(m.got, "NaN", "{}", bad.describe());
}

#[test]
fn a_tile_wider_than_the_warp_is_a_compile_error() {
    let d = scratch(
        "user-tile-",
        &[(
            "tile64.cu",
            "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n__global__ void block_sum(const float* x, float* out, int n) {\n    auto t = cg::tiled_partition<64>(cg::this_thread_block());\n    out[blockIdx.x] = t.shfl(x[0], 0);\n}\n",
        )],
    );
    std::fs::write(d.path().join("h.toml"), harness("tile64.cu")).unwrap();
    let Some(r) = run(&d.path().join("h.toml"), HarnessBackend::CpuSimt, &[32]) else {
        return;
    };
    let e = r.compile_errors.join("\n");
    assert!(e.contains("larger than the warp"), "{e}");
}

#[test]
fn cuda_backend_runs_the_same_harness_or_says_why_not() {
    let h = Harness::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/add.toml"))
        .unwrap();
    let plan = HarnessPlan {
        backend: HarnessBackend::Cuda,
        warps: vec![],
        sizes: vec![("n".into(), vec![1, 33, 1000])],
        seed: None,
    };
    let r = run_harness(&h, &plan, &mut |_| {}).unwrap();
    match &r.skip {
        Some(s) => {
            assert_eq!(r.status, HarnessStatus::Skipped);
            assert!(!s.reason.is_empty());
            assert_eq!(r.runs, 0);
        }
        None => assert_eq!(r.status, HarnessStatus::Passed, "{}", r.render_human()),
    }
}
