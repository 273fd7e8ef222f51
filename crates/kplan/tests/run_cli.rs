//! `kplan verify` and `kplan bench` end to end, and the reference kernels under `kplan build`
//! (every GPU target) and `kplan scan` (no findings).

use kplan_test_support::cli::text;
use kplan_test_support::workspace_root as root;
use kplan_test_support::{kplan_command, toolchain};
use std::process::Command;

fn kplan() -> Command {
    let mut c = kplan_command!();
    c.current_dir(root());
    c
}

#[test]
fn verify_cpu_passes_and_reports_json() {
    let o = kplan()
        .args([
            "verify",
            "softmax",
            "--sizes",
            "3x33,2x64,1x1000",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    if text(&o).contains("no C++ compiler") {
        return toolchain::skip(text(&o));
    }
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "passed");
    assert_eq!(v["backend"], "host");
    assert!(v["runs"].as_u64().unwrap() >= 24, "{v}");
    assert!(v["configs"].as_array().unwrap().len() >= 3);
}

#[test]
fn verify_catches_a_wrong_kernel() {
    let dir = kplan_test_support::tempdir("run-cli-broken");
    let src = std::fs::read_to_string(root().join("kernels/rmsnorm.cu")).unwrap();
    // a plausible bug: the mean of squares divided by cols - 1
    let broken = src.replace("ss / (float)cols + eps", "ss / (float)(cols - 1) + eps");
    assert_ne!(src, broken, "the sabotage no longer applies");
    let path = dir.path().join("rmsnorm.cu");
    std::fs::write(&path, broken).unwrap();
    let o = kplan()
        .args(["verify"])
        .arg(&path)
        .args(["--sizes", "2x64", "--dtype", "fp32"])
        .output()
        .unwrap();
    if text(&o).contains("no C++ compiler") {
        return toolchain::skip(text(&o));
    }
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FAIL fp32 2x64"), "{}", text(&o));
}

#[test]
fn bad_input_is_exit_2_with_a_message() {
    let o = kplan().args(["verify", "matmul"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("unknown kernel `matmul`"), "{}", text(&o));
    let o = kplan()
        .args(["verify", "add", "--sizes", "12x3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("not ROWSxCOLS"), "{}", text(&o));
    let o = kplan()
        .args(["verify", "softmax", "--sizes", "2^x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = kplan()
        .args(["verify", "softmax", "--dtype", "fp8"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("unknown dtype"), "{}", text(&o));
    let o = kplan()
        .args(["verify", "/nonexistent/mykernel.cu"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("cannot tell which kernel"),
        "{}",
        text(&o)
    );
    let o = kplan()
        .args(["bench", "add", "--reps", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // a tiles.toml with a type error names file:line
    let dir = kplan_test_support::tempdir("run-cli-tiles");
    std::fs::write(
        dir.path().join("tiles.toml"),
        "[defaults.cuda.flat]\nblock = \"many\"\n",
    )
    .unwrap();
    let o = kplan()
        .args(["verify", "add", "--sizes", "5", "--kernels"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("tiles.toml:2"), "{}", text(&o));
}

#[test]
fn cuda_backend_runs_or_says_why_it_skipped() {
    let o = kplan()
        .args([
            "verify",
            "add",
            "--backend",
            "cuda",
            "--sizes",
            "1,33,1000",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    match v["status"].as_str() {
        Some("skipped") => {
            assert_eq!(o.status.code(), Some(0));
            assert!(
                !v["skip_reason"].as_str().unwrap_or("").is_empty(),
                "skip without a reason: {v}"
            );
            eprintln!("skipped: {}", v["skip_reason"]);
        }
        Some("passed") => assert_eq!(o.status.code(), Some(0)),
        _ => panic!("{}", text(&o)),
    }
    let o = kplan()
        .args(["bench", "add", "--sizes", "1000000", "--reps", "3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("skipped: ") || t.contains("GB/s"), "{t}");
}

#[test]
fn reference_kernels_build_for_every_gpu_target_and_scan_clean() {
    let o = kplan()
        .args(["scan", "kernels", "--format", "json", "--fail-on", "note"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "kplan scan found hazards in kernels/: {}",
        text(&o)
    );
    for (file, defs) in [
        (
            "kernels/reduce_sum.cu",
            vec![
                "KPLAN_DTYPE_BF16=0",
                "KPLAN_BLOCK=1024",
                "KPLAN_VEC=4",
                "KPLAN_UNROLL=4",
            ],
        ),
        (
            "kernels/add.cu",
            vec![
                "KPLAN_DTYPE_BF16=1",
                "KPLAN_BLOCK=1024",
                "KPLAN_VEC=8",
                "KPLAN_UNROLL=4",
            ],
        ),
        (
            "kernels/softmax.cu",
            vec![
                "KPLAN_DTYPE_BF16=1",
                "KPLAN_BLOCK=256",
                "KPLAN_VEC=8",
                "KPLAN_TPR=128",
                "KPLAN_ITEMS=4",
            ],
        ),
        (
            "kernels/rmsnorm.cu",
            vec![
                "KPLAN_DTYPE_BF16=1",
                "KPLAN_BLOCK=1024",
                "KPLAN_VEC=8",
                "KPLAN_TPR=1024",
                "KPLAN_ITEMS=0",
            ],
        ),
        (
            "kernels/quantize_fp8.cu",
            vec![
                "KPLAN_DTYPE_BF16=1",
                "KPLAN_BLOCK=256",
                "KPLAN_VEC=8",
                "KPLAN_TPR=256",
                "KPLAN_ITEMS=4",
                "KPLAN_UNROLL=2",
            ],
        ),
    ] {
        let mut c = kplan();
        c.args([
            "build",
            file,
            "--targets",
            "sm_80,sm_90a,gfx90a,gfx942,gfx1100",
            "--format",
            "json",
            "-I",
            "include",
        ]);
        for d in defs {
            c.arg("-D").arg(d);
        }
        let o = c.output().unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        for r in v["results"].as_array().unwrap() {
            let status = r["status"].as_str().unwrap_or("");
            if status == "skipped" {
                toolchain::skip(format!("{file} {}: {}", r["target"], r["diagnostics"]));
                continue;
            }
            assert_eq!(status, "ok", "{file} {}: {r}", r["target"]);
            assert_eq!(
                r["spill_bytes"].as_u64().unwrap_or(0),
                0,
                "{file} {} spills: {r}",
                r["target"]
            );
        }
    }
}

/// The header comes from kplan-gen unless the user names a file: a named file that is not
/// there is an input error naming it.
#[test]
fn a_named_header_that_is_missing_is_an_error() {
    let missing = "/nonexistent/kplan_portability.h";
    let o = kplan()
        .args(["verify", "softmax", "--sizes", "2x64"])
        .env("KPLAN_HEADER", missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(missing), "{}", text(&o));
}

#[test]
fn fp8_encoding_follows_the_target() {
    // gfx942 (MI300) has e4m3fnuz; NVIDIA, gfx90a (software conversion) and gfx1100 the OCP e4m3fn
    for (targets, fnuz) in [("gfx942", 1), ("sm_90a,gfx90a,gfx1100", 0)] {
        let o = kplan()
            .args([
                "build",
                "crates/kplan/tests/fixtures/fp8_encoding_probe.cu",
                "--targets",
                targets,
                "--format",
                "json",
                "-I",
                "include",
                "-I",
                "kernels",
                "-D",
            ])
            .arg(format!("KPLAN_EXPECT_FNUZ={fnuz}"))
            .output()
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        for r in v["results"].as_array().unwrap() {
            let status = r["status"].as_str().unwrap_or("");
            if status == "skipped" {
                toolchain::skip(format!("{}: {r}", r["target"]));
                continue;
            }
            assert_eq!(status, "ok", "{targets} expecting fnuz={fnuz}: {r}");
        }
    }
}
