//! `library-shape-heuristics`: the strategy calls a vendor or kernel library on a GPU target.
//! The library picks its kernel per shape, dtype and device by heuristics and tuning tables that
//! change between releases, and the two vendors' libraries are tuned to different shapes: the
//! plan's performance then depends on a version and on shapes nobody measured. Fires for the
//! targets whose choice is a vendor or kernel library (not the framework, which the framework
//! verdict already weighs).

use super::test_support::GEMM;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let mut on: Vec<String> = Vec::new();
    let mut evidence: Vec<String> = Vec::new();
    let mut amd = false;
    let mut nvidia = false;
    for (t, c) in cx.strategy.with_targets(cx.targets) {
        if !t.is_gpu() {
            continue;
        }
        if !matches!(
            c.abstraction,
            Abstraction::VendorLibrary | Abstraction::KernelLibrary | Abstraction::Library
        ) {
            continue;
        }
        amd |= t.vendor() == Vendor::Amd;
        nvidia |= t.vendor() == Vendor::Nvidia;
        on.push(t.name.clone());
        evidence.push(format!("{}: {}", t.name, c.implementation));
    }
    if on.is_empty() {
        return Vec::new();
    }
    // the tuning tools of the libraries the plan calls, named only where it calls them
    let called = evidence.join(" ");
    let mut tune: Vec<&str> = Vec::new();
    if nvidia && called.contains("cuBLASLt") {
        tune.push("cuBLASLt: request several algorithms (`cublasLtMatmulAlgoGetHeuristic`) and time them at the spec's shapes");
    }
    if amd && called.contains("hipBLASLt") {
        tune.push("hipBLASLt: run `hipblaslt-bench` at the spec's shapes and, where the default solution is slow, use its offline tuning (`HIPBLASLT_TUNING_FILE`)");
    }
    if tune.is_empty() {
        tune.push("where the library offers several algorithms or a tuning step, time them at the spec's shapes on each target");
    }
    vec![Risk::builder("library-shape-heuristics", "hazard", "medium")
        .title("the library picks its kernel per shape, dtype and device by heuristics that change between releases, and each vendor's library is tuned to other shapes")
        .targets(on)
        .mitigation(format!(
            "pin the library version per backend in the build and CI; benchmark the call at the spec's real shapes (including the odd and the small ones) on every target against the roofline, not only the headline shape; {}",
            tune.join("; ")
        ))
        .fallback("a written kernel (Triton or the portability header) for the shapes where the library is far from the roofline, dispatched by shape: a second code path to test")
        .evidence(evidence)
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "library-shape-heuristics",
    fires: &[GEMM.allowed(&["vendor-blas"])],
    silent: &[GEMM.allowed(&["hip-single-source"])],
};
