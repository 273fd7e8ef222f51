//! Snapshots of every renderer over the same findings (fixture `ballot-narrowing/fire.cu`).

use kplan_kb::Kb;
use kplan_scan::{render, scan_text, FileKind, ScanCtx, ScanResult};
use std::path::Path;

fn result() -> ScanResult {
    kplan_test_support::golden::insta_follows_update_golden();
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    // relative path: tests run in the crate directory, and snapshots must not hold absolute paths
    let path = Path::new("tests/fixtures/ballot-narrowing/fire.cu");
    let text = std::fs::read_to_string(path).unwrap();
    let findings = scan_text(&ctx, path, FileKind::Cuda, &text);
    ScanResult {
        files_scanned: 1,
        lines_scanned: text.lines().count(),
        bytes_scanned: text.len() as u64,
        findings,
        skipped: Vec::new(),
    }
}

#[test]
fn human() {
    insta::assert_snapshot!(render::human(&result()));
}

#[test]
fn json() {
    insta::assert_snapshot!(render::json(&result()));
}

#[test]
fn github() {
    insta::assert_snapshot!(render::github(&result()));
}

#[test]
fn sarif_results() {
    let s = render::sarif(&result(), &kplan_scan::all_rules(), "0.0.0-test");
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    // the rules array follows the registry (checked elsewhere); snapshot the results
    insta::assert_snapshot!(serde_json::to_string_pretty(&v["runs"][0]["results"]).unwrap());
}
