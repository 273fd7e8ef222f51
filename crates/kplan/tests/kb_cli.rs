//! `kplan targets` and `kplan features` end to end: output, JSON validity, exit codes for
//! unknown names (2, with a suggestion) and a broken `--kb DIR` (2, file:line:col).

use kplan_test_support::cli::{self, stderr, stdout};
use kplan_test_support::kplan_command;
use std::process::Output;

fn kplan(args: &[&str]) -> Output {
    cli::output(kplan_command!().args(args))
}

#[test]
fn targets_lists_archs_and_devices() {
    let o = kplan(&["targets"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for id in [
        "sm_90a",
        "gfx942",
        "gfx1100",
        "cpu-x86_64-avx2",
        "h200",
        "mi355x",
        "rx9070xt",
    ] {
        assert!(out.contains(id), "{id} missing");
    }
    let o = kplan(&["targets", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert!(v["architectures"].as_array().unwrap().len() >= 17);
}

#[test]
fn targets_show_arch_and_device() {
    let o = kplan(&["targets", "show", "gfx942"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Architecture gfx942 (amd, CDNA3)"));
    assert!(out.contains("mi300x") && out.contains("[ROCm-specs]") && out.contains("Sources"));
    let o = kplan(&["targets", "show", "H200", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["arch"]["id"], "sm_90a");
    assert_eq!(v["device"]["bandwidth_gbs"]["value"], 4800.0);
    assert_eq!(v["resolved_via"], "device");
}

#[test]
fn unknown_names_exit_2_with_a_suggestion() {
    let o = kplan(&["targets", "show", "gfx9420"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `gfx942`"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
    let o = kplan(&["features", "show", "wgma"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `wgmma`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn features_list_and_show() {
    let o = kplan(&["features"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("fp8-fnuz"));
    let o = kplan(&["features", "show", "fp8-matrix", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["feature"]["support"]["gfx942"]["status"], "yes");
}

#[test]
fn broken_kb_dir_exits_2_with_position() {
    let dir = std::env::temp_dir().join(format!("kplan-kb-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kplan-kb/data");
    for f in [
        "sources.toml",
        "architectures.toml",
        "devices.toml",
        "features.toml",
    ] {
        std::fs::copy(data.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("devices.toml"),
        "[[device]]\nid = \"x\"\nname = 3\n",
    )
    .unwrap();
    let o = kplan(&["--kb", dir.to_str().unwrap(), "targets"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("devices.toml:3:"), "{}", stderr(&o));
}

#[test]
fn ops_list_and_show() {
    let o = kplan(&["ops"]);
    assert!(o.status.success());
    for op in ["scan", "spmv", "attention", "grouped-gemm", "histogram"] {
        assert!(stdout(&o).contains(op), "{op}");
    }
    let o = kplan(&["ops", "show", "scan"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("CUB DeviceScan") && s.contains("rocPRIM") && s.contains("look-back"),
        "{s}"
    );
    let o = kplan(&["ops", "show", "scan", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["id"], "scan");
    let o = kplan(&["ops", "show", "sacn"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean `scan`"), "{}", stderr(&o));
}
