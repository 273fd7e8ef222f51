//! `kplan verify HARNESS.toml` from the command line: bad input exits 2 with file:line:col and
//! no output; a warp-size dependence exits 1 and is named; JSON reports per width.

use kplan_test_support::kplan_command;
use kplan_test_support::workspace_root as root;
use std::process::Command;

fn kplan() -> Command {
    let mut c = kplan_command!();
    c.current_dir(root());
    c
}

fn fixture(name: &str) -> String {
    format!("crates/kplan-run/tests/fixtures/simt/{name}")
}

#[test]
fn bad_harness_exits_2_with_line_and_column() {
    let d = kplan_test_support::cli::scratch("harness-cli");
    let text = std::fs::read_to_string(root().join(fixture("reduce_w32.toml")))
        .unwrap()
        .replace("dtype = \"int32\"", "dtype = \"int33\"");
    std::fs::copy(
        root().join(fixture("reduce_w32.cu")),
        d.join("reduce_w32.cu"),
    )
    .unwrap();
    std::fs::copy(
        root().join(fixture("block_sum_ref.cpp")),
        d.join("block_sum_ref.cpp"),
    )
    .unwrap();
    let p = d.join("bad.toml");
    std::fs::write(&p, &text).unwrap();
    let o = kplan().arg("verify").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().position(|l| l.contains("int33")).unwrap() + 1;
    assert!(err.contains(&format!("bad.toml:{line}:9")), "{err}");
    assert!(err.contains("int32"), "{err}");
}

/// `kplan verify` of the reduce_w32 fixture on cpu-simt at `warps`, with `args`.
fn verify_w32(warps: &str, args: &[&str]) -> std::process::Output {
    let h = fixture("reduce_w32.toml");
    let mut c = kplan();
    c.args(["verify", &h, "--backend", "cpu-simt", "--warp", warps]);
    kplan_test_support::cli::output(c.args(args))
}

#[test]
fn bad_warp_list_exits_2() {
    let o = verify_w32("48", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--warp"));
}

#[test]
fn warp_size_dependence_exits_1_and_is_named() {
    let o = verify_w32("32,64", &["--sizes", "n=1000", "--format", "json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    if v["status"] == "skipped" {
        return kplan_test_support::toolchain::skip(out);
    }
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(v["warp_dependence"]["passes"], serde_json::json!([32]));
    assert_eq!(v["warp_dependence"]["fails"], serde_json::json!([64]));
    assert_eq!(v["warps"][0]["failures"], 0);
    assert!(v["warps"][1]["failures"].as_u64().unwrap() > 0);
}
