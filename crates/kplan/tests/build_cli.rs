//! `kplan header` and `kplan build` end to end: exit codes, JSON contract, bad input (missing
//! file, unknown target, compile errors, a hanging compiler), and the committed header.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn kplan() -> Command {
    kplan_command!()
}

fn kernel() -> PathBuf {
    root().join("crates/kplan-build/tests/kernels/primitives.cu")
}

use kplan_test_support::workspace_root as root;
use kplan_test_support::{kplan_command, toolchain};

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `kplan build KERNEL ARGS...` on the test kernel.
fn build(args: &[&str]) -> Output {
    kplan()
        .arg("build")
        .arg(kernel())
        .args(args)
        .output()
        .unwrap()
}

/// `kplan VERB FILE ARGS...`.
fn on_file(verb: &str, file: &Path, args: &[&str]) -> Output {
    kplan().arg(verb).arg(file).args(args).output().unwrap()
}

/// Writes `text` to `spec`, then runs `kplan header --spec SPEC`.
fn header_for_spec(spec: &Path, text: &str) -> Output {
    std::fs::write(spec, text).unwrap();
    kplan()
        .arg("header")
        .arg("--spec")
        .arg(spec)
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    let (out, err) = text(o);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"))
}

#[test]
fn header_for_all_targets_is_the_committed_file() {
    let o = kplan().arg("header").output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let committed = std::fs::read_to_string(root().join("include/kplan_portability.h")).unwrap();
    assert_eq!(
        text(&o).0,
        committed,
        "include/kplan_portability.h is stale: run `cargo xtask generate`"
    );
    assert!(committed.contains("@generated"));
}

#[test]
fn header_is_scoped_and_deterministic() {
    let dir = kplan_test_support::tempdir("build-cli");
    let out = dir.path().join("h.h");
    let run = || {
        let o = kplan()
            .args(["header", "--targets", "gfx942,sm_90a", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
        std::fs::read_to_string(&out).unwrap()
    };
    let a = run();
    let b = run();
    assert_eq!(a, b);
    assert!(a.contains("Targets: gfx942, sm_90a."));
    assert!(a.contains("#define KPLAN_DETAIL_SCOPE_WAVE64 1"));
    assert!(a.contains("#define KPLAN_DETAIL_SCOPE_WAVE32 0"));
    assert!(a.contains("__shfl_xor_sync"));
    assert!(
        !a.contains("KPLAN_BACKEND_HOST\n/* ---"),
        "host backend text must be left out"
    );
}

#[test]
fn header_from_spec_and_spec_errors() {
    let dir = kplan_test_support::tempdir("build-cli");
    let spec = dir.path().join("k.toml");
    let o = header_for_spec(&spec, "[backends]\ntargets = [\"gfx1100\"]\n");
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("Targets: gfx1100."));

    // A whole kernel spec goes through the plan's parser: `devices` count as targets.
    let o = header_for_spec(&spec, "[kernel]\nname = \"x\"\nop = \"softmax\"\ndtypes = [\"bf16\"]\nproblem = { rows = 8, cols = 64 }\n[backends]\ntargets = [\"sm_90a\"]\ndevices = [\"mi300x\"]\n");
    assert!(o.status.success(), "{:?}", text(&o));
    let head = text(&o).0.lines().take(10).collect::<Vec<_>>().join("\n");
    assert!(head.contains("Targets: gfx942, sm_90a."), "{head}");
    // ... and a kernel spec `kplan plan` rejects is rejected here the same way.
    let o = header_for_spec(&spec, "[kernel]\nname = \"x\"\nop = \"softmax\"\ndtypes = [\"bf61\"]\nproblem = { rows = 8, cols = 64 }\n[backends]\ntargets = [\"sm_90a\"]\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("k.toml:4:11: unknown dtype `bf61`"),
        "{:?}",
        text(&o)
    );

    // A misspelt architecture gets the known spelling; another number is not offered one.
    let o = header_for_spec(&spec, "[backends]\ntargets = [\n  \"gfx_942\",\n]\n");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o).1;
    assert!(
        err.contains("k.toml:3:")
            && err.contains("gfx_942")
            && err.contains("did you mean `gfx942`"),
        "{err}"
    );
    let o = header_for_spec(&spec, "[backends]\ntargets = [\n  \"gfx943\",\n]\n");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o).1;
    assert!(
        err.contains("k.toml:3:") && err.contains("gfx943") && !err.contains("did you mean"),
        "{err}"
    );

    // One name where a list is expected is that list; a number is still a type error.
    let o = header_for_spec(&spec, "[backends]\ntargets = \"sm_80\"\n");
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = header_for_spec(&spec, "[backends]\ntargets = 80\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("k.toml:2:"), "{:?}", text(&o));
}

/// `kplan header --spec` reads `[backends]` the way `kplan plan` does: `devices` alone, and
/// `targets` with `devices`, in a whole kernel spec or a `[backends]`-only file.
#[test]
fn header_from_spec_with_devices() {
    let dir = kplan_test_support::tempdir("build-cli");
    let spec = dir.path().join("k.toml");
    let kernel = "[kernel]\nname = \"x\"\nop = \"norm\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { rows = 8, cols = 64 }\n";
    for (backends, want) in [
        (
            "[backends]\ndevices = [\"mi300x\", \"h100\"]\n",
            "Targets: gfx942, sm_90a.",
        ),
        (
            "[backends]\ntargets = [\"gfx1100\"]\ndevices = [\"mi300x\"]\n",
            "Targets: gfx1100, gfx942.",
        ),
    ] {
        for text_ in [format!("{kernel}{backends}"), backends.to_string()] {
            let o = header_for_spec(&spec, &text_);
            assert!(o.status.success(), "{text_}\n{:?}", text(&o));
            let head = text(&o).0.lines().take(10).collect::<Vec<_>>().join("\n");
            assert!(head.contains(want), "{text_}\n{head}");
        }
    }
}

/// Every committed example spec, which `kplan plan` accepts, is accepted by `kplan header --spec`.
#[test]
fn header_accepts_every_example_spec() {
    let mut specs: Vec<std::path::PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    specs.sort();
    assert!(specs.len() > 20, "{specs:?}");
    for spec in specs {
        let o = kplan()
            .arg("header")
            .arg("--spec")
            .arg(&spec)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {:?}", spec.display(), text(&o));
    }
}

#[test]
fn header_output_is_not_half_written_on_error() {
    let dir = kplan_test_support::tempdir("build-cli");
    let out = dir.path().join("h.h");
    let o = kplan()
        .args(["header", "--targets", "sm_90x", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("did you mean `sm_90"), "{:?}", text(&o));
    assert!(!out.exists());
}

#[test]
fn build_missing_file_exits_2() {
    let o = kplan()
        .args(["build", "/nonexistent/k.cu", "--targets", "sm_80"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no such file"), "{:?}", text(&o));
}

#[test]
fn build_unknown_target_exits_2_with_suggestion() {
    let o = build(&["--targets", "gfx943"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o).1;
    assert!(
        err.contains("unknown target `gfx943`") && err.contains("did you mean"),
        "{err}"
    );
}

#[test]
fn build_bad_define_exits_2() {
    let o = build(&["--targets", "sm_80", "-D", "1BAD=2"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The keys of every result, as docs/build.md documents them.
const CONTRACT: &str =
    "target status compiler registers sgprs shared_bytes spill_bytes wave_size occupancy seconds diagnostics";

#[test]
fn build_json_contract_for_every_required_target() {
    let o = build(&[
        "--targets",
        "sm_80,sm_90a,gfx90a,gfx942,gfx1100",
        "--format",
        "json",
    ]);
    let v = json(&o);
    let results = v["results"].as_array().expect("results array");
    assert_eq!(results.len(), 5);
    let mut failed = false;
    for r in results {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want: Vec<&str> = CONTRACT.split_whitespace().collect();
        want.sort();
        let mut have = keys.clone();
        have.sort();
        assert_eq!(have, want, "JSON keys");
        let target = r["target"].as_str().unwrap();
        match r["status"].as_str().unwrap() {
            "ok" => {
                assert!(r["registers"].as_u64().is_some_and(|n| n > 0), "{r}");
                let wave = if target == "gfx1100" || target.starts_with("sm_") {
                    32
                } else {
                    64
                };
                assert_eq!(r["wave_size"].as_u64(), Some(wave), "{r}");
                assert!(r["compiler"].is_string());
                assert!(r["seconds"].as_f64().is_some_and(|s| s > 0.0));
                if target.starts_with("gfx") {
                    assert!(r["sgprs"].as_u64().is_some_and(|n| n > 0), "{r}");
                }
            }
            "skipped" => toolchain::skip(format!("{target}: {}", r["diagnostics"])),
            s => {
                failed = true;
                eprintln!("{target}: {s}: {}", r["diagnostics"]);
            }
        }
    }
    assert!(!failed);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
}

#[test]
fn build_compile_error_exits_1_with_compiler_message_per_target() {
    let dir = kplan_test_support::tempdir("build-cli");
    let bad = dir.path().join("broken.cu");
    std::fs::write(&bad, "#include \"kplan_portability.h\"\nKPLAN_GLOBAL void k(float* y) {\n  y[0] = no_such_symbol;\n}\n").unwrap();
    let o = on_file(
        "build",
        &bad,
        &["--targets", "sm_80,gfx1100", "--format", "json"],
    );
    let v = json(&o);
    let mut any_failed = false;
    for r in v["results"].as_array().unwrap() {
        match r["status"].as_str().unwrap() {
            "failed" => {
                any_failed = true;
                let d = r["diagnostics"].as_str().unwrap();
                assert!(
                    d.contains("no_such_symbol") && d.contains("broken.cu"),
                    "{d}"
                );
            }
            "skipped" => toolchain::skip(format!("{}: {}", r["target"], r["diagnostics"])),
            s => panic!("{s}: {r}"),
        }
    }
    if any_failed {
        assert_eq!(o.status.code(), Some(1));
    }
    // Human output shows the same message under the target.
    let o = on_file("build", &bad, &["--targets", "sm_80"]);
    let (out, _) = text(&o);
    // the summary line always says how many failed; a skipped target has no message to check
    if !out.contains("sm_80 (skipped)") {
        assert!(
            out.contains("sm_80 (failed):") && out.contains("no_such_symbol"),
            "{out}"
        );
    }
}

#[cfg(unix)]
fn fake_compiler(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("nvcc");
    std::fs::write(
        &p,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0; fi\nsleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[cfg(unix)]
#[test]
fn hanging_compiler_is_killed_at_the_timeout() {
    let dir = kplan_test_support::tempdir("build-cli");
    let nvcc = fake_compiler(dir.path());
    let start = Instant::now();
    let o = kplan()
        .env("KPLAN_NVCC", &nvcc)
        .arg("build")
        .arg(kernel())
        .args(["--targets", "sm_80", "--timeout", "2", "--format", "json"])
        .output()
        .unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let v = json(&o);
    let r = &v["results"][0];
    assert_eq!(r["status"], "failed");
    assert!(
        r["diagnostics"]
            .as_str()
            .unwrap()
            .contains("timed out after 2 s"),
        "{r}"
    );
}

#[test]
fn missing_compiler_is_skipped_with_install_hint() {
    let o = kplan()
        .env("KPLAN_NVCC", "")
        .env("PATH", "/nonexistent")
        .env("CUDA_PATH", "/nonexistent")
        .env("CUDA_HOME", "/nonexistent")
        // nor the CUDA wheels of a Python environment
        .env_remove("KPLAN_PYTHON")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .arg("build")
        .arg(kernel())
        .args(["--targets", "sm_80", "--format", "json"])
        .output()
        .unwrap();
    let v = json(&o);
    let r = &v["results"][0];
    if std::path::Path::new("/usr/local/cuda/bin/nvcc").exists()
        || std::path::Path::new("/opt/cuda/bin/nvcc").exists()
    {
        return; // a system CUDA is found at its standard location
    }
    assert_eq!(r["status"], "skipped", "{r}");
    assert!(
        r["diagnostics"]
            .as_str()
            .unwrap()
            .contains("nvcc not found; install:"),
        "{r}"
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn kernel_written_against_the_header_has_no_scan_findings() {
    let o = on_file(
        "scan",
        &kernel(),
        &[
            "--targets",
            "sm_80,sm_90a,gfx90a,gfx942,gfx1100",
            "--format",
            "json",
            "--fail-on",
            "note",
        ],
    );
    let v = json(&o);
    assert_eq!(v["files_scanned"], 1, "{v}");
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn build_takes_targets_from_a_spec() {
    let dir = kplan_test_support::tempdir("build-cli");
    let spec = dir.path().join("k.toml");
    std::fs::write(&spec, "[backends]\ntargets = [\"cpu-x86_64-avx2\"]\n").unwrap();
    let spec_arg = spec.to_str().unwrap();
    let o = build(&["--spec", spec_arg, "--format", "json"]);
    let v = json(&o);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["target"], "cpu-x86_64-avx2");
    std::fs::write(&spec, "[backends]\ntargets = [\"gfx9422\"]\n").unwrap();
    let o = build(&["--spec", spec_arg]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("k.toml:2:"), "{:?}", text(&o));
}
