//! The reference kernels, compiled by the host C++ compiler (the CPU backend), against the CPU
//! reference on every default size, data kind and tile configuration.

use kplan_run::cpu::HostExecutor;
use kplan_run::kernels::{portability_header, KernelSources};
use kplan_run::reference::{DType, Op};
use kplan_run::verify::{verify, Status, VerifyPlan};

fn run(op: Op) {
    let (header, _) = portability_header().expect("portability header");
    let sources = KernelSources::builtin(header);
    let tiles = sources.tiles().unwrap();
    let mut exec = match HostExecutor::new(&sources).unwrap() {
        Ok(e) => e,
        Err(skip) => return kplan_test_support::toolchain::skip(&skip.reason),
    };
    let plan = VerifyPlan {
        op,
        dtypes: DType::ALL.to_vec(),
        shapes: None,
        seed: 1,
        eps: 1e-6,
    };
    let verbose = std::env::var_os("KPLAN_TEST_VERBOSE").is_some();
    let mut t = std::time::Instant::now();
    let r = verify(&mut exec, &tiles, op.as_str(), &plan, &mut |c, _, _| {
        if verbose {
            eprintln!(
                "{} {} {} {} {} {:.3}s",
                c.dtype,
                c.shape,
                c.data,
                c.config,
                c.passed,
                t.elapsed().as_secs_f64()
            );
            t = std::time::Instant::now();
        }
    });
    let bad: Vec<String> = r
        .cases
        .iter()
        .filter(|c| !c.passed)
        .take(12)
        .map(|c| {
            format!(
                "{} {} {} {}: {:?} {:?}",
                c.dtype, c.shape, c.data, c.config, c.first_bad, c.error
            )
        })
        .collect();
    assert_eq!(
        r.status,
        Status::Passed,
        "{} failures, e.g. {bad:#?}",
        r.failures
    );
    assert!(r.runs > 50, "only {} runs", r.runs);
    assert!(r.configs.len() >= 3, "configs {:?}", r.configs);
}

#[test]
fn host_reduce_sum() {
    run(Op::ReduceSum);
}
#[test]
fn host_softmax() {
    run(Op::Softmax);
}
#[test]
fn host_rmsnorm() {
    run(Op::Rmsnorm);
}
#[test]
fn host_add() {
    run(Op::Add);
}
#[test]
fn host_quantize_fp8() {
    run(Op::QuantizeFp8);
}
