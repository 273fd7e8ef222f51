//! `kplan ci` through the real binary: every example spec's workflow passes the GitHub workflow
//! schema that `check-jsonschema` (PyPI) vendors; its jobs are the plan's CI legs; bad input
//! exits 2 without writing.

use kplan_test_support::toolchain;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kplan"))
        .args(args)
        .output()
        .expect("run kplan")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

use toolchain::check_jsonschema;

#[test]
fn every_example_workflow_passes_the_github_workflow_schema() {
    let dir = kplan_test_support::tempdir("ci-schema");
    let mut files = Vec::new();
    for spec in examples() {
        let stem = spec.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.path().join(format!("{stem}.yml"));
        let o = kplan(&["ci", spec.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        files.push(out);
    }
    assert!(files.len() >= 6, "{} example specs", files.len());
    let Some(tool) = toolchain::require(check_jsonschema()) else {
        return;
    };
    let o = Command::new(&tool)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .args(&files)
        .output()
        .expect("run check-jsonschema");
    assert!(
        o.status.success(),
        "check-jsonschema rejected a workflow:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The schema check must be able to fail: a workflow with a job that has no `runs-on` is
/// rejected by the same tool and schema.
#[test]
fn the_schema_check_rejects_a_broken_workflow() {
    let Some(tool) = toolchain::require(check_jsonschema()) else {
        return;
    };
    let dir = kplan_test_support::tempdir("ci-broken");
    let out = dir.path().join("w.yml");
    let o = kplan(&[
        "ci",
        root().join("examples/rmsnorm.toml").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let broken: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("runs-on:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&out, broken).unwrap();
    let o = Command::new(&tool)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(&out)
        .output()
        .expect("run check-jsonschema");
    assert!(!o.status.success(), "a job without runs-on passed");
}

#[test]
fn jobs_follow_the_plan_legs_and_runner_labels() {
    let spec = root().join("examples/rmsnorm.toml");
    let o = kplan(&["plan", spec.to_str().unwrap(), "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = kplan(&[
        "ci",
        spec.to_str().unwrap(),
        "--runner",
        "gfx942=mi300x-box",
        "--runner",
        "nvidia=h100,gpu",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = String::from_utf8(o.stdout).unwrap();
    for leg in plan["ci"]["legs"].as_array().unwrap() {
        let name = leg["name"].as_str().unwrap();
        let has_cmd = !leg["command"].is_null();
        if leg["kind"] == "compile" && !has_cmd {
            assert!(
                w.contains(&format!(
                    "# Not in this workflow (no kplan command compiles it): {name}"
                )),
                "{name}"
            );
        } else {
            assert!(w.contains(&format!("\n  {name}:\n")), "no job {name}:\n{w}");
        }
        if let Some(c) = leg["command"].as_str() {
            assert!(w.contains(c), "{name}: command `{c}` missing");
        }
    }
    assert!(w.contains("github/codeql-action/upload-sarif@v3"));
    assert!(w.contains("kplan scan . --targets "));
    assert!(w.contains("- mi300x-box"), "{w}");
    assert!(w.contains("- h100\n") && w.contains("- gpu\n"), "{w}");
    assert!(w.contains("--backend cpu-simt --warp 32,64"));
}

#[test]
fn a_framework_verdict_gets_library_call_legs_and_no_compile_jobs() {
    let spec = root().join("examples/rowsum-framework.toml");
    let o = kplan(&["ci", spec.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = String::from_utf8(o.stdout).unwrap();
    assert!(!w.contains("kplan build"), "{w}");
    assert!(!w.contains("\n  compile-"), "{w}");
    assert!(
        w.contains("\n  test-sm_80:\n") && w.contains("\n  test-gfx90a:\n"),
        "{w}"
    );
    assert!(w.contains("\n  test-cpu-x86_64-avx2:\n"), "{w}");
}

#[test]
fn bad_runner_and_bad_spec_exit_2_without_output() {
    let dir = kplan_test_support::tempdir("ci-bad");
    let out = dir.path().join("w.yml");
    let spec = root().join("examples/rmsnorm.toml");
    for args in [vec!["--runner", "gfx9999=x"], vec!["--runner", "novalue"]] {
        let mut a = vec!["ci", spec.to_str().unwrap(), "-o", out.to_str().unwrap()];
        a.extend(args.iter().copied());
        let o = kplan(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!out.exists(), "{args:?}: wrote output");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("runner"),
            "{args:?}"
        );
    }
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[kernel]\nname = 'x'\nop = 'gemm'\n").unwrap();
    let o = kplan(&["ci", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.toml:"));
}

/// A HIP kernel for an architecture the compile container's clang-19 does not know (gfx950)
/// gets no compile job that could never pass: the workflow says why, its run leg does not wait
/// for a missing job, and every job has a time limit.
#[test]
fn an_architecture_clang19_lacks_gets_no_compile_job() {
    let dir = kplan_test_support::tempdir("ci-gfx950");
    let spec = dir.path().join("rms.toml");
    std::fs::write(
        &spec,
        "[kernel]\nname = \"rmsnorm\"\nop = \"norm\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { rows = 16384, cols = 8192 }\n[backends]\ntargets = [\"mi355x\", \"h100\"]\n[requirements]\nperformance = \"near-peak\"\nframework_expressible = false\n[abstraction]\nallowed = [\"hip-single-source\"]\n",
    )
    .unwrap();
    let o = kplan(&["ci", spec.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let y = String::from_utf8_lossy(&o.stdout);
    assert!(!y.contains("\n  compile-gfx950:"), "{y}");
    assert!(y.contains("Debian's clang-19 does not know gfx950"), "{y}");
    assert!(
        y.contains("\n  compile-sm_90a:") || y.contains("compile-sm90"),
        "{y}"
    );
    assert!(!y.contains("- compile-gfx950"), "{y}");
    let jobs = y.matches("\n    runs-on:").count();
    assert_eq!(y.matches("\n    timeout-minutes:").count(), jobs, "{y}");
}
