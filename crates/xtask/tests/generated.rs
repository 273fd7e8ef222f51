//! Every generated file of the repository is what its generator makes: one test per entry of
//! `xtask::TABLE`, with `cargo xtask generate --check` semantics; `UPDATE_GOLDEN=1` writes
//! instead (`cargo xtask generate`).

use kplan_test_support::golden::Mode;

fn check(name: &str) {
    let g = xtask::entry(name).unwrap_or_else(|| panic!("no table entry `{name}`"));
    let report = xtask::run(&xtask::root(), g, Mode::from_env()).unwrap();
    assert!(report.checked > 0, "{name} generated nothing");
    assert!(report.is_clean(), "{name}:\n{}", report.describe());
}

#[test]
fn rule_docs() {
    check("rule-docs");
}

#[test]
fn target_docs() {
    check("target-docs");
}

#[test]
fn example_plans() {
    check("example-plans");
}

#[test]
fn efficiency_table() {
    check("efficiency-table");
}

#[test]
fn plan_schema() {
    check("plan-schema");
}

#[test]
fn header() {
    check("header");
}

#[test]
fn bench_docs() {
    check("bench-docs");
}

#[test]
fn kb_measurements() {
    check("kb-measurements");
}

#[test]
fn every_entry_has_a_test() {
    let src = include_str!("generated.rs");
    for g in xtask::TABLE {
        assert!(
            src.contains(&format!("check(\"{}\")", g.name)),
            "no test checks `{}`",
            g.name
        );
    }
}

/// The check can fail: a changed copy of a generated file is reported stale, an unknown file
/// in an owned directory is reported, and nothing is written in check mode.
#[test]
fn check_reports_stale_and_extra_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for rel in ["docs/rules", "include"] {
        std::fs::create_dir_all(root.join(rel)).unwrap();
    }
    std::fs::write(root.join("include/kplan_portability.h"), "stale\n").unwrap();
    std::fs::write(root.join("docs/rules/gone.md"), "x").unwrap();
    let r = xtask::run(root, xtask::entry("header").unwrap(), Mode::Check).unwrap();
    assert_eq!(r.stale.len(), 1, "{r:?}");
    assert!(r.stale[0].1.contains("line 1"), "{r:?}");
    let r = xtask::run(root, xtask::entry("rule-docs").unwrap(), Mode::Check).unwrap();
    assert!(r.extra.iter().any(|p| p.ends_with("gone.md")), "{r:?}");
    assert_eq!(r.stale.len(), r.checked, "every page is missing: {r:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("include/kplan_portability.h")).unwrap(),
        "stale\n"
    );
    let r = xtask::run(root, xtask::entry("rule-docs").unwrap(), Mode::Write).unwrap();
    assert!(!root.join("docs/rules/gone.md").exists());
    assert!(r.written.len() > r.checked);
    let again = xtask::run(root, xtask::entry("rule-docs").unwrap(), Mode::Check).unwrap();
    assert!(again.is_clean(), "{again:?}");
}

/// The KB measurements come from the bench run as `bench/run-gpu.sh` records it: one per
/// checked default configuration and per anchor with a bandwidth.
#[test]
fn measurements_follow_the_run() {
    let doc = serde_json::json!({
        "started": "2026-01-02T03:04:05Z",
        "bench": {"peak_gbs": 1000.0, "records": [
            {"kernel": "softmax", "dtype": "bf16", "shape": "8x16", "config": "c1", "default": true,
             "output_checked": true, "gbs": 500.5, "runs": 7},
            {"kernel": "add", "dtype": "fp32", "shape": "64", "config": "c2", "default": false,
             "output_checked": true, "gbs": 1.0, "runs": 7}
        ]},
        "anchors": {"torch": "2.9", "records": [
            {"impl": "torch", "kernel": "add", "dtype": "fp32", "shape": "64", "gbs": 250.0},
            {"impl": "triton", "kernel": "add", "dtype": "fp32", "shape": "64"}
        ]}
    });
    let m = xtask::measurements(&doc, "run.json").unwrap();
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(
        m[0].contains("id = \"h200-softmax-bf16-8x16-kplan-cuda\""),
        "{}",
        m[0]
    );
    assert!(m[0].contains("shape = { rows = 8, cols = 16 }"), "{}", m[0]);
    assert!(m[0].contains("fraction_of_peak = 0.500\n"), "{}", m[0]);
    assert!(m[0].contains("date = \"2026-01-02\""), "{}", m[0]);
    assert!(m[0].contains("median of 7 runs"), "{}", m[0]);
    assert!(
        m[1].contains("implementation = \"torch-eager\""),
        "{}",
        m[1]
    );
    assert!(m[1].contains("achieved = 250\n"), "{}", m[1]);
    assert!(m[1].contains("; torch 2.9\""), "{}", m[1]);
    let bad = serde_json::json!({"started": "2026-01-02", "bench": {"peak_gbs": 1.0, "records": [
        {"kernel": "gemm", "dtype": "fp32", "shape": "1", "config": "c", "default": true,
         "output_checked": true, "gbs": 1.0, "runs": 1}]}, "anchors": {}});
    assert!(xtask::measurements(&bad, "run.json").is_err());
}
