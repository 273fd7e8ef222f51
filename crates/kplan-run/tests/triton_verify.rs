//! `kplan verify kernel.py`: the Triton reference kernels under Triton's interpreter against the
//! CPU reference (CI, no GPU), and on CUDA where a GPU is present. Skips with a printed reason
//! when Python/Triton is absent, unless KPLAN_REQUIRE_TOOLCHAINS=1 (CI), where that fails.

use kplan_run::reference::{DType, Op};
use kplan_run::triton::{Data, TritonBackend, TritonVerifyError, TritonVerifyRequest};
use kplan_run::verify::{Status, VerifyReport};

use kplan_test_support::workspace_root as root;

fn verify(req: &TritonVerifyRequest) -> Result<VerifyReport, TritonVerifyError> {
    let mut seen = 0;
    let r = kplan_run::triton::verify(req, &mut |_, done, planned| {
        assert!(done <= planned);
        seen = done;
    });
    if let Ok(r) = &r {
        assert_eq!(seen, r.runs, "progress reports every case");
    }
    r
}

fn toolchain() -> bool {
    kplan_test_support::toolchain::require(
        kplan_build::triton::available()
            .map_err(|e| format!("Triton is unavailable ({e}); source scripts/test-env.sh")),
    )
    .is_some()
}

#[test]
fn reference_kernels_pass_under_the_interpreter() {
    if !toolchain() {
        return;
    }
    for (file, op, kinds) in [
        ("softmax.py", Op::Softmax, 4),
        ("rmsnorm.py", Op::Rmsnorm, 3),
    ] {
        let req =
            TritonVerifyRequest::new(root().join("kernels/triton").join(file), TritonBackend::Cpu);
        let report = verify(&req).unwrap();
        assert_eq!(report.kernel, op.as_str());
        assert!(report.skip.is_none());
        assert!(report.device.contains("interpreter"), "{}", report.device);
        assert_eq!(
            report.configs,
            [op.as_str()],
            "one configuration: the wrapper"
        );
        // 2 dtypes x 4 shapes (incl. a row longer than one block: the looped kernel) x data kinds.
        assert_eq!(report.cases.len(), 2 * 4 * kinds, "{file}");
        for c in &report.cases {
            assert!(c.passed, "{file}: {c:?}");
        }
        assert!(report
            .cases
            .iter()
            .any(|c| c.shape.ends_with("x40000") && c.dtype == "bf16"));
        assert_eq!(report.status, Status::Passed);
    }
}

#[test]
fn a_wrong_kernel_fails() {
    if !toolchain() {
        return;
    }
    let mut req = TritonVerifyRequest::new(
        root().join("crates/kplan-run/tests/triton_fixtures/naive_softmax.py"),
        TritonBackend::Cpu,
    );
    req.shapes = vec![(2, 100)];
    req.dtypes = vec![DType::F32];
    let report = verify(&req).unwrap();
    assert_eq!(report.configs, ["naive"]);
    assert_eq!(report.status, Status::Failed);
    let random = report
        .cases
        .iter()
        .find(|c| c.data == Data::Random.as_str())
        .unwrap();
    assert!(
        random.passed,
        "no max subtraction is still right on small values: {random:?}"
    );
    let large = report
        .cases
        .iter()
        .find(|c| c.data == Data::Large.as_str())
        .unwrap();
    assert!(!large.passed && large.mismatches > 0, "{large:?}");
    assert!(
        large.first_bad.is_some() && large.error.is_none(),
        "{large:?}"
    );
}

#[test]
fn cuda_backend_runs_or_skips_with_a_reason() {
    if !toolchain() {
        return;
    }
    let mut req = TritonVerifyRequest::new(
        root().join("kernels/triton/softmax.py"),
        TritonBackend::Cuda,
    );
    req.shapes = vec![(8, 1000), (4, 40000)];
    let report = verify(&req).unwrap();
    match &report.skip {
        Some(why) => eprintln!("SKIP: Triton on CUDA: {}", why.reason),
        None => assert_eq!(report.status, Status::Passed, "{report:#?}"),
    }
}

#[test]
fn bad_input_is_an_error() {
    if !toolchain() {
        return;
    }
    let err = verify(&TritonVerifyRequest::new(
        root().join("no/such.py"),
        TritonBackend::Cpu,
    ))
    .unwrap_err();
    assert!(matches!(err, TritonVerifyError::Input { .. }), "{err}");
    let err = verify(&TritonVerifyRequest::new(
        root().join("crates/kplan-build/tests/triton_fixtures/syntax_error.py"),
        TritonBackend::Cpu,
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("cannot tell which operation"), "{err}");
}
