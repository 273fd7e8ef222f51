//! `kplan build` on Triton kernels: real cross-compilation through Triton's own compiler for
//! NVIDIA and AMD targets (no GPU needed). Skips with a printed reason when Python/Triton is
//! absent, unless KPLAN_REQUIRE_TOOLCHAINS=1 (CI), where that is a failure.

use kplan_build::triton::{
    build_with_kb, TargetStatus, TritonBuildReport, TritonBuildRequest, TritonError,
};
use std::path::PathBuf;

use kplan_test_support::workspace_root as root;

fn toolchain() -> bool {
    kplan_test_support::toolchain::require(
        kplan_build::triton::available()
            .map_err(|e| format!("Triton is unavailable ({e}); source scripts/test-env.sh")),
    )
    .is_some()
}

fn build(path: PathBuf, targets: &[&str]) -> Result<TritonBuildReport, TritonError> {
    let req = TritonBuildRequest {
        path,
        targets: targets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    build_with_kb(&req, kplan_kb::Kb::builtin())
}

#[test]
fn reference_kernels_compile_for_nvidia_and_amd() {
    if !toolchain() {
        return;
    }
    for file in ["softmax.py", "rmsnorm.py"] {
        let report = build(
            root().join("kernels/triton").join(file),
            &["sm_90a", "gfx942", "gfx1100"],
        )
        .unwrap();
        assert!(report.ok(), "{file}: {report:#?}");
        let names: Vec<&str> = report.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names.len(),
            2,
            "{file}: fused and looped kernels, got {names:?}"
        );
        for (k, _, r) in report.results() {
            assert_eq!(
                r.status,
                TargetStatus::Ok,
                "{file}:{} {}: {:?}",
                k.name,
                r.target,
                r.reason
            );
            let regs = r.registers.unwrap_or(0);
            assert!(
                regs > 0 && regs <= 512,
                "{} {}: registers {regs}",
                k.name,
                r.target
            );
            assert_eq!(r.spill_bytes, Some(0), "{} {} spills", k.name, r.target);
            let want_wave = if r.target == "gfx942" { 64 } else { 32 };
            assert_eq!(r.wave_size, Some(want_wave), "{} {}", k.name, r.target);
            assert_eq!(r.threads_per_block, Some(r.num_warps * want_wave));
            assert!(r.shared_bytes.is_some());
        }
        // `# kplan: cuda:num_warps=8 hip:num_warps=4` above the looped kernel: what the wrapper launches.
        let looped = report
            .kernels
            .iter()
            .find(|k| k.name.ends_with("_looped_kernel"))
            .unwrap();
        let warps: Vec<(&str, u32)> = looped.variants[0]
            .results
            .iter()
            .map(|r| (r.target.as_str(), r.num_warps))
            .collect();
        assert_eq!(
            warps,
            vec![("sm_90a", 8), ("gfx942", 4), ("gfx1100", 4)],
            "{file}"
        );
        // Pointers were inferred from the loads/stores, strides and lengths stayed integers.
        let k = &report.kernels[0];
        assert_eq!(k.signature["in_ptr"], "*fp32");
        assert_eq!(k.signature["in_row_stride"], "i32");
        assert_eq!(k.signature["n_cols"], "i32");
    }
}

#[test]
fn autotune_configs_directives_and_launch_limits() {
    if !toolchain() {
        return;
    }
    let path = root().join("crates/kplan-build/tests/triton_fixtures/autotuned.py");
    let report = build(path, &["sm_90a", "gfx942"]).unwrap();
    assert_eq!(report.stubbed_imports, vec!["torch".to_string()]);
    assert_eq!(report.helpers, vec!["_mul".to_string()]);
    let k = report
        .kernels
        .iter()
        .find(|k| k.name == "scale_kernel")
        .unwrap();
    assert_eq!(k.autotune_configs, 2);
    assert_eq!(k.signature["scale"], "fp32");
    assert_eq!(k.signature["X"], "*fp32");
    assert_eq!(k.variants.len(), 2);
    let big = &k.variants[0];
    assert_eq!(big.constexprs["BLOCK"], "4096");
    let nv = big.results.iter().find(|r| r.target == "sm_90a").unwrap();
    let amd = big.results.iter().find(|r| r.target == "gfx942").unwrap();
    assert_eq!(nv.status, TargetStatus::Ok, "{nv:?}");
    assert_eq!(amd.status, TargetStatus::Failed, "{amd:?}");
    assert!(
        amd.reason.as_deref().unwrap().contains("2048 threads"),
        "{amd:?}"
    );
    assert!(k.variants[1]
        .results
        .iter()
        .all(|r| r.status == TargetStatus::Ok));

    let d = report
        .kernels
        .iter()
        .find(|k| k.name == "directed_kernel")
        .unwrap();
    assert_eq!(d.signature["X"], "*bf16");
    assert_eq!(d.origin["X"], "comment");
    assert_eq!(d.constexprs["BLOCK"], "256");
    assert!(d.variants[0]
        .results
        .iter()
        .all(|r| r.num_warps == 2 && r.status == TargetStatus::Ok));

    let u = report
        .kernels
        .iter()
        .find(|k| k.name == "unresolved_kernel")
        .unwrap();
    assert!(
        u.error.as_deref().unwrap().contains("constexpr `MYSTERY`"),
        "{u:?}"
    );
    // naming conventions fill in what nobody gave, and say so
    let g = report
        .kernels
        .iter()
        .find(|k| k.name == "guessed_kernel")
        .unwrap();
    assert_eq!(
        (
            g.constexprs["BLOCK_SIZE"].as_str(),
            g.origin["BLOCK_SIZE"].as_str()
        ),
        ("1024", "guessed")
    );
    assert_eq!(g.constexprs["HAS_BIAS"], "False");
    assert!(
        g.variants[0]
            .results
            .iter()
            .all(|r| r.status == TargetStatus::Ok),
        "{g:?}"
    );
    assert!(!report.ok());
}

#[test]
fn unloadable_file_is_an_input_error_with_a_line() {
    if !toolchain() {
        return;
    }
    let path = root().join("crates/kplan-build/tests/triton_fixtures/syntax_error.py");
    match build(path, &["sm_90a"]) {
        Err(TritonError::Input { path, message }) => {
            assert!(path.ends_with("syntax_error.py:4"), "{path}");
            assert!(message.contains("SyntaxError"), "{message}");
        }
        other => panic!("expected an input error, got {other:?}"),
    }
    assert!(matches!(
        build(root().join("no/such/file.py"), &["sm_90a"]),
        Err(TritonError::Input { .. })
    ));
    assert!(matches!(
        build(root().join("kernels/triton/softmax.py"), &["gfx9422"]),
        Err(TritonError::UnknownTarget(_))
    ));
}

#[test]
fn sidecar_and_overrides_supply_what_inference_cannot() {
    if !toolchain() {
        return;
    }
    let path = root().join("crates/kplan-build/tests/triton_fixtures/sidecar.py");
    let report = build(path.clone(), &["sm_90a", "gfx942"]).unwrap();
    assert!(report.ok(), "{report:#?}");
    let k = &report.kernels[0];
    assert_eq!(k.signature["x_ptr"], "*bf16");
    assert_eq!(k.signature["stride"], "i64");
    assert_eq!(k.origin["stride"], "sidecar");
    assert_eq!(k.signature["n_cols"], "i32");
    assert_eq!(k.signature["factor"], "fp32");
    assert_eq!(k.constexprs["BLOCK"], "512");
    assert!(k.variants[0].results.iter().all(|r| r.num_warps == 2));
    // an override wins over the sidecar
    let mut req = TritonBuildRequest {
        path,
        targets: vec!["gfx942".into()],
        ..Default::default()
    };
    req.overrides.insert("BLOCK".into(), "128".into());
    req.overrides.insert("num_warps".into(), "32".into());
    let report = build_with_kb(&req, kplan_kb::Kb::builtin()).unwrap();
    let k = &report.kernels[0];
    assert_eq!(k.constexprs["BLOCK"], "128");
    assert_eq!(k.origin["BLOCK"], "override");
    let r = &k.variants[0].results[0];
    assert_eq!((r.num_warps, r.status), (32, TargetStatus::Failed), "{r:?}");
}
