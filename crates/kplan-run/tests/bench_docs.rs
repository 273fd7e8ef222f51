//! docs/bench.md and docs/bench.svg are generated from the committed GPU run by
//! `cargo xtask generate` (crates/xtask checks the committed copies); this test checks what the
//! renderers make of that run.

use std::path::Path;

const RUN: &str = "bench/results/h200-2026-12-01b.json";

#[test]
fn bench_docs_match_the_committed_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(RUN)).unwrap()).unwrap();
    let md = kplan_run::report::render_markdown(&doc, RUN);
    let svg = kplan_run::report::render_svg(&doc, RUN);
    assert!(
        md.contains("| reduce_sum | fp32 |"),
        "table lacks reduce_sum"
    );
    assert!(svg.starts_with("<svg"));
}

/// A run that measured the copy of each case's own bytes and the interleaved rounds (bench.rs,
/// bench/anchors.py) gets the `% same-size copy` column, the spread table, and misses that
/// quote both; a run without them renders neither.
#[test]
fn same_size_copy_and_interleaved_rounds_render_when_measured() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(RUN)).unwrap()).unwrap();
    let plain = kplan_run::report::render_markdown(&doc, RUN);
    assert!(!plain.contains("same-size copy"), "{plain}");
    assert!(!plain.contains("Run-to-run spread"));
    for r in doc["bench"]["records"].as_array_mut().unwrap() {
        let gbs = r["gbs"].as_f64().unwrap();
        r["copy_same_gbs"] = serde_json::json!(gbs * 1.25);
    }
    doc["anchors"]["records"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "impl": "interleaved", "kernel": "softmax", "dtype": "bf16", "shape": "8192x4096",
            "rounds": 5, "kplan_gbs": 3500.0, "triton_gbs": 3550.0, "kplan_spread": 0.012,
            "triton_spread": 0.031, "ratio_median": 0.985, "ratio_min": 0.96, "ratio_max": 1.02
        }));
    let md = kplan_run::report::render_markdown(&doc, RUN);
    assert!(md.contains("| % same-size copy |"), "{md}");
    // every default reaches 80% of its same-size copy (gbs / (1.25 gbs))
    let row = md
        .lines()
        .find(|l| l.starts_with("| softmax | bf16 | 8192x4096 |"))
        .unwrap();
    assert!(row.contains("| 80.0% |"), "{row}");
    assert!(md.contains("### Run-to-run spread"));
    assert!(md.contains("| softmax | bf16 | 8192x4096 | 3500 | 3550 | 1.2% | 3.1% | 0.985x | 0.960x to 1.020x |"), "{md}");
    let miss = md
        .lines()
        .find(|l| l.starts_with("- softmax bf16 8192x4096"))
        .unwrap();
    assert!(
        miss.contains("a copy of the same bytes, timed the same way")
            && miss.contains("the kernel reaches 80.0% of it")
            && miss.contains("interleaved do_bench rounds: 0.985x, 0.960x to 1.020x over 5 rounds"),
        "{miss}"
    );
}
