//! `kplan ci` through the real binary: every example spec's workflow passes the GitHub workflow
//! schema that `check-jsonschema` (PyPI) vendors; its jobs are the plan's CI legs; bad input
//! exits 2 without writing.

use kplan_test_support::workspace_root as root;
use kplan_test_support::{cli, kplan_command, toolchain};
use std::path::PathBuf;
use std::process::{Command, Output};

fn kplan(args: &[&str]) -> Output {
    cli::output(kplan_command!().args(args))
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
    // the scan gate is kplan's action (action.yml uploads the SARIF), over the spec's targets
    let targets: Vec<&str> = plan["backend_matrix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["target"].as_str().unwrap())
        .collect();
    assert!(
        w.contains(&format!("targets: {}", targets.join(","))),
        "{w}"
    );
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

const REV: &str = "0123456789abcdef0123456789abcdef01234567";

fn ci_of(spec_text: &str, extra: &[&str]) -> String {
    let dir = kplan_test_support::tempdir("ci-spec");
    let spec = dir.path().join("k.toml");
    std::fs::write(&spec, spec_text).unwrap();
    let mut a = vec!["ci", spec.to_str().unwrap()];
    a.extend(extra);
    let o = kplan(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The job of one id: its lines up to the next job.
fn job(w: &str, id: &str) -> String {
    let head = format!("  {id}:");
    let mut lines = w.lines().skip_while(|l| *l != head);
    let first = lines.next().unwrap_or_else(|| panic!("no job {id}:\n{w}"));
    let mut out = format!("{first}\n");
    for l in lines.take_while(|l| l.starts_with("    ") || l.is_empty()) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

const RMS_AMD: &str = "[kernel]\nname = \"rmsnorm\"\nop = \"norm\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { rows = 16384, cols = 8192 }\n[backends]\ntargets = [\"mi355x\", \"h100\", \"gfx1201\", \"gfx942\"]\n[requirements]\nperformance = \"near-peak\"\nframework_expressible = false\n[abstraction]\nallowed = [\"hip-single-source\"]\n";

/// HIP compile legs run in AMD's ROCm image at the architecture's floor (named in the job name),
/// not in Debian's ROCm 5.2 packages; gfx950, whose floor (ROCm 7.0) no published image reaches,
/// gets no job that could never pass, and the header says why; every job has a time limit.
#[test]
fn hip_compile_legs_run_in_the_rocm_image_of_their_floor() {
    let y = ci_of(RMS_AMD, &["--kplan-rev", REV]);
    let gfx942 = &job(&y, "compile-gfx942");
    assert!(
        gfx942.contains("container: \"rocm/dev-ubuntu-22.04:6.0\""),
        "{gfx942}"
    );
    assert!(gfx942.contains("ROCm 6.0: the floor 6.0.0"), "{gfx942}");
    assert!(gfx942.contains("--targets gfx942 --strict"), "{gfx942}");
    let gfx1201 = &job(&y, "compile-gfx1201");
    assert!(gfx1201.contains("rocm/dev-ubuntu-22.04:6.4.1"), "{gfx1201}");
    assert!(!y.contains("libamdhip64-dev"), "{y}");
    assert!(!y.contains("\n  compile-gfx950:"), "{y}");
    assert!(y.contains("# Not in this workflow: compile-gfx950"), "{y}");
    assert!(y.contains("ROCm floor is 7.0.0"), "{y}");
    assert!(!y.contains("- compile-gfx950"), "{y}");
    let nv = &job(&y, "compile-sm_90a");
    assert!(nv.contains("container: \"debian:bookworm\""), "{nv}");
    let jobs = y.matches("\n    runs-on:").count();
    assert_eq!(y.matches("\n    timeout-minutes:").count(), jobs, "{y}");
}

/// Run legs: NVIDIA under four compute-sanitizer tools, AMD CDNA under ROCm ASan (xnack+), RDNA
/// stated as a gap, the CPU fallback under ASan/UBSan; the runner's needs in the header; the
/// project's script is called only when it exists.
#[test]
fn run_legs_carry_their_sanitizers_and_say_what_they_need() {
    let y = ci_of(RMS_AMD, &["--kplan-rev", REV]);
    let nv = &job(&y, "run-sm_90a");
    for tool in ["memcheck", "racecheck", "synccheck", "initcheck"] {
        assert!(
            nv.contains(&format!(
                "compute-sanitizer --tool {tool} --error-exitcode 1"
            )),
            "{tool}: {nv}"
        );
    }
    assert!(nv.contains("--backend cuda --strict"), "{nv}");
    assert!(
        y.contains("# NVIDIA runners need: the driver (libcuda), NVRTC"),
        "{y}"
    );
    let amd = &job(&y, "run-gfx942");
    assert!(amd.contains("--offload-arch=gfx942:xnack+"), "{amd}");
    assert!(amd.contains("HSA_XNACK: \"1\""), "{amd}");
    assert!(amd.contains("if [ ! -x ci/test-on-device.sh ]"), "{amd}");
    assert!(amd.contains("::warning::"), "{amd}");
    assert!(
        y.contains("# Gap: run-gfx1201: no AddressSanitizer leg"),
        "{y}"
    );
    let cpu = &job(&y, "run-cpu-x86_64-avx2");
    assert!(cpu.contains("-fsanitize=undefined"), "{cpu}");
    assert!(cpu.contains("KPLAN_CXX"), "{cpu}");
    assert!(
        y.contains("# Gap: run-cpu-x86_64-avx2: no AddressSanitizer"),
        "{y}"
    );
    // a library verdict's CPU leg builds the project's own tests with ASan and UBSan
    let lib = ci_of(
        &std::fs::read_to_string(root().join("examples/rowsum-framework.toml")).unwrap(),
        &["--kplan-rev", REV],
    );
    assert!(
        job(&lib, "test-cpu-x86_64-avx2").contains("-fsanitize=address,undefined"),
        "{lib}"
    );
}

/// kplan is pinned: built once per revision (cached), and the scan gate is the repository's
/// own action (action.yml) at that revision, installing the wheel the `kplan` job built.
#[test]
fn kplan_is_pinned_cached_and_the_gate_is_the_action() {
    let y = ci_of(RMS_AMD, &["--kplan-rev", REV]);
    assert!(y.starts_with("# @generated by `kplan ci "), "{y}");
    assert!(
        y.lines().next().unwrap().contains(&format!("rev {REV}")),
        "{y}"
    );
    let k = &job(&y, "kplan");
    assert!(k.contains(&format!("ref: \"{REV}\"")), "{k}");
    assert!(
        k.contains(&format!("key: kplan-wheel-{REV}-ubuntu-22.04")),
        "{k}"
    );
    assert!(k.contains("actions/cache@v4"), "{k}");
    assert!(k.contains("maturin build --release --locked"), "{k}");
    let scan = &job(&y, "scan");
    assert!(scan.contains("uses: \"./.kplan-action\""), "{scan}");
    assert!(scan.contains("needs.kplan.outputs.wheel"), "{scan}");
    assert!(!y.contains("cargo install --locked --git \"$KPLAN_GIT\""));
    // a bad revision is an error; none given and none known uses the repository variable
    let dir = kplan_test_support::tempdir("ci-rev");
    let spec = dir.path().join("k.toml");
    std::fs::write(&spec, RMS_AMD).unwrap();
    let o = kplan(&["ci", spec.to_str().unwrap(), "--kplan-rev", "main"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("40 hex digits"));
}
