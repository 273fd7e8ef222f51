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
