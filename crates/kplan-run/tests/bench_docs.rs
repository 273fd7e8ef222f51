//! docs/bench.md and docs/bench.svg are generated from the committed GPU run; this test
//! regenerates them and fails on any difference (`UPDATE_GOLDEN=1` rewrites them).

use std::path::Path;

const RUN: &str = "bench/results/h200-2026-12-01.json";

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
    for (name, text) in [("docs/bench.md", &md), ("docs/bench.svg", &svg)] {
        let path = root.join(name);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == *text,
            "{name} is stale: run UPDATE_GOLDEN=1 cargo test -p kplan-run --test bench_docs"
        );
    }
}
