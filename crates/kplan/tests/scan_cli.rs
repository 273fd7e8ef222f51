//! `kplan scan`, `kplan rules`, `kplan explain` end to end: exit codes, the JSON contract, SARIF
//! validity against the official 2.1.0 schema, GitHub annotations, config errors, robustness.

use kplan_test_support::cli::{self, scratch as tmpdir, stderr, stdout};
use kplan_test_support::kplan_command;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kplan(args: &[&str], cwd: Option<&Path>) -> Output {
    let mut c = kplan_command!();
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    cli::output(c.args(args))
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kplan-scan/tests/fixtures")
}

/// `kplan scan FILE --targets TARGETS --format json`: its findings and exit code.
fn scan_json(file: &Path, targets: &str) -> (Vec<serde_json::Value>, Option<i32>) {
    let f = file.to_str().unwrap();
    let o = kplan(&["scan", f, "--targets", targets, "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    (v["findings"].as_array().unwrap().clone(), o.status.code())
}

#[test]
fn json_contract_sorted_and_exit_code() {
    let f = fixtures();
    let o = kplan(&["scan", f.to_str().unwrap(), "--format", "json"], None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(top, ["files_scanned", "findings", "lines_scanned"]);
    // every fixture file the scanner reads (`.cu`, `.hip` and `.py`, one rule directory each)
    let on_disk = std::fs::read_dir(&f)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|e| {
            e.path()
                .extension()
                .is_some_and(|x| x == "cu" || x == "hip" || x == "py")
        })
        .count() as u64;
    assert_eq!(v["files_scanned"].as_u64(), Some(on_disk));
    assert!(v["lines_scanned"].as_u64().unwrap() > 200);
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.len() > 40);
    let keys = [
        "rule",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "help",
        "targets",
    ];
    let mut prev: Option<(String, u64, u64)> = None;
    for x in findings {
        let mut k: Vec<&str> = x.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort();
        let mut want = keys.to_vec();
        want.sort();
        assert_eq!(k, want);
        assert!(["error", "warning", "note"].contains(&x["severity"].as_str().unwrap()));
        let key = (
            x["path"].as_str().unwrap().to_string(),
            x["line"].as_u64().unwrap(),
            x["column"].as_u64().unwrap(),
        );
        if let Some(p) = &prev {
            assert!(p <= &key, "findings not sorted: {p:?} then {key:?}");
        }
        prev = Some(key);
    }
    // deterministic
    let o2 = kplan(&["scan", f.to_str().unwrap(), "--format", "json"], None);
    assert_eq!(stdout(&o), stdout(&o2));
}

#[test]
fn fail_on_and_clean_tree() {
    let f = fixtures();
    let o = kplan(
        &[
            "scan",
            f.to_str().unwrap(),
            "--fail-on",
            "never",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let d = tmpdir("clean");
    std::fs::write(
        d.join("pass.cu"),
        "__device__ float sum(float v) {\n    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(__activemask(), v, o);\n    return v;\n}\n__global__ void k(float* x) {\n    int lane = threadIdx.x % warpSize;\n    unsigned long long m = __ballot_sync(__activemask(), x[lane] > 0);\n    x[lane] = sum(x[lane]) + __popcll(m);\n}\n",
    )
    .unwrap();
    let o = kplan(&["scan", d.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("0 errors"));
    // notes only: exit 0 at the default threshold, 1 with --fail-on note
    let h = f.join("hardcoded-tile/fire.cu");
    let (findings, code) = scan_json(&h, "sm_90a,gfx1100");
    assert!(findings.iter().all(|x| x["severity"] == "note"));
    assert_eq!(code, Some(0));
    let o = kplan(
        &[
            "scan",
            h.to_str().unwrap(),
            "--targets",
            "sm_90a,gfx1100",
            "--fail-on",
            "note",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn nvidia_only_scope_silences_warp_size_rules() {
    let f = fixtures().join("warp-size-literal/fire.cu");
    let (findings, _) = scan_json(&f, "sm_90a");
    assert!(findings.iter().all(|x| x["rule"] != "warp-size-literal"));
    let (findings, _) = scan_json(&f, "mi300x");
    assert!(findings
        .iter()
        .any(|x| x["rule"] == "warp-size-literal" && x["severity"] == "error"));
}

#[test]
fn human_output_has_source_line_and_caret() {
    let f = fixtures().join("ballot-narrowing/fire.cu");
    let o = kplan(&["scan", f.to_str().unwrap()], None);
    let s = stdout(&o);
    assert!(s.contains("error[ballot-narrowing]"), "{s}");
    assert!(s.contains("unsigned mask = __ballot_sync"));
    assert!(s.contains("^^^"));
    assert!(s.contains("see `kplan explain ballot-narrowing`"));
}

#[test]
fn github_annotations() {
    let f = fixtures().join("full-mask-literal/fire.cu");
    let o = kplan(&["scan", f.to_str().unwrap(), "--format", "github"], None);
    let s = stdout(&o);
    assert!(!s.is_empty());
    for l in s.lines() {
        assert!(
            l.starts_with("::error file=")
                || l.starts_with("::warning file=")
                || l.starts_with("::notice file="),
            "{l}"
        );
        assert!(
            l.contains(",line=") && l.contains(",col=") && l.contains(",title=kplan "),
            "{l}"
        );
    }
}

#[test]
fn sarif_is_valid_against_the_official_schema() {
    let f = fixtures();
    let o = kplan(&["scan", f.to_str().unwrap(), "--format", "sarif"], None);
    let s = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["id"] == "warp-size-literal"));
    for r in v["runs"][0]["results"].as_array().unwrap() {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
    }
    let Some(py) = std::env::var("KPLAN_PYTHON").ok() else {
        return kplan_test_support::toolchain::skip(
            "sarif schema validation: KPLAN_PYTHON not set (source scripts/test-env.sh)",
        );
    };
    let d = tmpdir("sarif");
    let out = d.join("out.sarif");
    std::fs::write(&out, &s).unwrap();
    let script = "import json, os, sys, sysconfig\n\
try:\n    import jsonschema\nexcept ImportError:\n    print('missing jsonschema'); sys.exit(3)\n\
p = os.path.join(sysconfig.get_paths()['purelib'], 'sarif-schema.json')\n\
if not os.path.exists(p):\n    print('missing sarif-schema.json'); sys.exit(3)\n\
schema = json.load(open(p))\n\
assert 'sarif-schema-2.1.0' in schema.get('id', schema.get('$id', ''))\n\
jsonschema.Draft4Validator(schema).validate(json.load(open(sys.argv[1])))\nprint('valid')\n";
    let r = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&out)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&r.stdout).into_owned();
    if r.status.code() == Some(3) {
        return kplan_test_support::toolchain::skip(format!(
            "sarif schema validation: tools missing: {}",
            so.trim()
        ));
    }
    assert!(
        r.status.success(),
        "SARIF invalid: {so}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(so.contains("valid"));
}

#[test]
fn config_errors_name_file_and_line_and_exit_2() {
    let d = tmpdir("cfg");
    std::fs::write(
        d.join("a.cu"),
        "__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("kplan.toml"),
        "targets = [\"gfx942\"]\nignore = [\"warp-size-literall\"]\n",
    )
    .unwrap();
    let o = kplan(&["scan", "."], Some(&d));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("kplan.toml:2:"), "{e}");
    assert!(e.contains("did you mean `warp-size-literal`"), "{e}");
    assert!(stdout(&o).is_empty());
    std::fs::write(d.join("kplan.toml"), "targets = [\"gfx942\"]\ncolour = 1\n").unwrap();
    let o = kplan(&["scan", "."], Some(&d));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("kplan.toml:2:"), "{}", stderr(&o));
    // a valid config: targets and per-file ignores apply
    std::fs::write(
        d.join("kplan.toml"),
        "targets = [\"gfx942\"]\n[per-file-ignores]\n\"a.cu\" = [\"warp-size-literal\"]\n",
    )
    .unwrap();
    let o = kplan(&["scan", ".", "--format", "json"], Some(&d));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    std::fs::write(d.join("kplan.toml"), "targets = [\"gfx942\"]\n").unwrap();
    let o = kplan(&["scan", ".", "--format", "json"], Some(&d));
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["findings"][0]["targets"], serde_json::json!(["gfx942"]));
}

#[test]
fn unknown_target_and_rule_exit_2_with_suggestion() {
    let o = kplan(&["scan", ".", "--targets", "gfx94"], Some(&fixtures()));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown target `gfx94`"),
        "{}",
        stderr(&o)
    );
    let o = kplan(&["explain", "ballot-narowing"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `ballot-narrowing`"),
        "{}",
        stderr(&o)
    );
    let o = kplan(&["scan", "/nonexistent/kplan/path"], None);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn rules_and_explain() {
    let o = kplan(&["rules"], None);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    for id in [
        "warp-size-literal",
        "shuffle-offset-literal",
        "full-mask-literal",
        "ballot-narrowing",
        "lane-partials-size",
        "inline-asm-unguarded",
        "platform-ifdef-in-kernel",
        "nvidia-only-feature",
        "shared-memory-over-limit",
        "hardcoded-tile",
        "launch-bounds-warp",
        "implicit-warp-sync",
    ] {
        assert!(s.contains(id), "{id} missing from `kplan rules`");
    }
    let o = kplan(&["explain", "shuffle-offset-literal"], None);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    for h in [
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
    ] {
        assert!(s.contains(h), "{h}");
    }
    let o = kplan(&["rules", "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v.as_array().unwrap().len() >= 15);
}

#[test]
fn inventory_lists_features_with_locations() {
    let f = fixtures().join("nvidia-only-feature");
    let o = kplan(
        &[
            "scan",
            f.to_str().unwrap(),
            "--inventory",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let items = v["items"].as_array().unwrap();
    let get = |id: &str| items.iter().find(|i| i["feature"] == id).cloned();
    let wmma = get("wmma").expect("wmma in inventory");
    assert!(wmma["count"].as_u64().unwrap() >= 3);
    assert_eq!(wmma["locations"][0]["line"], 3);
    assert!(
        get("clusters").is_some()
            && get("async-copy").is_some()
            && get("fp8-ocp").is_some()
            && get("dynamic-parallelism").is_some()
    );
}

#[test]
fn hostile_inputs_are_reported_and_the_scan_goes_on() {
    let d = tmpdir("hostile");
    std::fs::write(d.join("bin.cu"), b"\x7fELF\x00\x00\x01\x02__global__").unwrap();
    std::fs::write(
        d.join("latin1.cu"),
        b"// caf\xe9\n__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("open_comment.cu"),
        "__global__ void k() { /* never closed\n",
    )
    .unwrap();
    std::fs::write(
        d.join("open_string.cu"),
        "__global__ void k() { const char* s = \"never closed\n int x = 0xffffffff; R\"x(raw\n",
    )
    .unwrap();
    let nested = format!(
        "__global__ void k(int* x) {}{}\n",
        "{".repeat(10_000),
        "}".repeat(9_000)
    );
    std::fs::write(d.join("nested.cu"), nested).unwrap();
    std::fs::write(
        d.join("directives.cu"),
        "#if\n#elif\n#else\n#endif\n#endif\n#else\n#if defined(\n#define\n#ifdef\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let _ = std::os::unix::fs::symlink(&d, d.join("sub/loop"));
    }
    let o = kplan(&["scan", d.to_str().unwrap(), "--format", "json"], None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bin.cu: binary file, skipped"), "{e}");
    #[cfg(unix)]
    assert!(e.contains("loop"), "{e}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files_scanned"], 5);
    assert!(v["findings"].as_array().unwrap().iter().any(|x| x["path"]
        .as_str()
        .unwrap()
        .ends_with("latin1.cu")
        && x["line"] == 2));
}

#[test]
fn output_file_is_written_whole() {
    let d = tmpdir("out");
    let out = d.join("report.json");
    let f = fixtures().join("ballot-narrowing");
    let o = kplan(
        &[
            "scan",
            f.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["files_scanned"], 2);
}

/// kplan's own portable code — the generated header and the reference kernels — has nothing to
/// report for the widest scope kplan knows (NVIDIA, AMD wave64 and wave32, the host).
#[test]
fn generated_header_and_reference_kernels_scan_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = kplan(
        &[
            "scan",
            "--targets",
            "sm_80,sm_90a,gfx90a,gfx942,gfx950,gfx1100,gfx1201,cpu-x86_64",
            "--format",
            "json",
            "--fail-on",
            "note",
            "include",
            "kernels",
        ],
        Some(&root),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["findings"], serde_json::json!([]), "{}", stdout(&o));
    assert!(v["files_scanned"].as_u64().unwrap() >= 5, "{}", stdout(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
