//! `kplan plan` through the real binary: output formats, `-o`, and bad specs (exit 2, a located
//! error with a suggestion, and no output file).

use kplan_test_support::cli::{self, scratch};
use kplan_test_support::kplan_command;
use kplan_test_support::workspace_root as root;
use std::process::Output;

fn kplan(args: &[&str]) -> Output {
    cli::output(kplan_command!().args(args))
}

const GOOD: &str = r#"[kernel]
name = "cli-norm"
op = "norm"
dtypes = ["bf16", "fp32"]
problem = { rows = 1024, cols = 4096 }
features = ["warp-shuffle"]

[backends]
targets = ["sm_80", "gfx942", "cpu-x86_64"]
"#;

#[test]
fn markdown_by_default_with_all_headings() {
    let spec = root().join("examples/rmsnorm.toml");
    let out = kplan(&["plan", spec.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).unwrap();
    let mut at = 0;
    for h in kplan_plan::render::HEADINGS {
        let pos = md[at..]
            .find(&format!("## {h}\n"))
            .unwrap_or_else(|| panic!("heading {h} missing or out of order"));
        at += pos;
    }
    assert!(md.contains("**Verdict: `"));
}

#[test]
fn json_output_to_file() {
    let d = scratch("json");
    let spec = d.join("good.toml");
    std::fs::write(&spec, GOOD).unwrap();
    let out_path = d.join("plan.json");
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "--format",
        "json",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    for k in [
        "verdict",
        "backend_matrix",
        "operation",
        "strategy",
        "risks",
        "header",
        "tiles",
        "ci",
        "performance",
        "checklist",
    ] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    let targets: Vec<&str> = v["backend_matrix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["sm_80", "gfx942", "cpu-x86_64"]);
}

/// Writes `spec`, runs `kplan plan spec -o out`, and checks exit code 2, no output file, and the
/// stderr first line `FILE:LINE:COL: error:` containing each of `expect`.
fn bad(name: &str, spec_text: &str, line: usize, expect: &[&str]) {
    let d = scratch(name);
    let spec = d.join("bad.toml");
    std::fs::write(&spec, spec_text).unwrap();
    let out_path = d.join("plan.md");
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    assert!(
        !out_path.exists(),
        "{name}: output written despite the error"
    );
    assert!(
        std::fs::read_dir(&d).unwrap().count() == 1,
        "{name}: stray files left behind"
    );
    let first = err.lines().next().unwrap_or("");
    let prefix = format!("{}:{line}:", spec.display());
    assert!(
        first.starts_with(&prefix) && first.contains(": error: "),
        "{name}: first line `{first}` should start with `{prefix}`"
    );
    for e in expect {
        assert!(err.contains(e), "{name}: `{e}` not in\n{err}");
    }
    assert!(err.contains('^'), "{name}: no caret under the span\n{err}");
}

#[test]
fn unknown_target_suggests_the_close_name() {
    bad(
        "target",
        &GOOD.replace("\"gfx942\"", "\"gfx9420\""),
        9,
        &[
            "unknown target `gfx9420`",
            "expected",
            "did you mean `gfx942`?",
        ],
    );
}

#[test]
fn unknown_key_is_rejected_with_expected_keys() {
    bad(
        "key",
        &GOOD.replace("[backends]", "[backends]\ntarget_list = []"),
        9,
        &["unknown field `target_list`", "expected", "`targets`"],
    );
}

#[test]
fn descriptive_key_and_unknown_device_plan_with_warnings_and_notes() {
    let d = scratch("notes");
    let spec = d.join("notes.toml");
    let text = GOOD
        .replace("op = \"norm\"", "op = \"norm\"\nowner = \"serving team\"")
        .replace(
            "\"cpu-x86_64\"]",
            "\"cpu-x86_64\"]\ndevices = [\"acme-x1000\"]",
        );
    std::fs::write(&spec, &text).unwrap();
    let out_path = d.join("plan.md");
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    let file = spec.display().to_string();
    assert!(
        err.contains(&format!(
            "{file}:4:1: warning: key `owner` not used by kplan"
        )),
        "{err}"
    );
    assert!(
        err.contains("warning: device `acme-x1000` not used by kplan"),
        "{err}"
    );
    let md = std::fs::read_to_string(&out_path).unwrap();
    assert!(md.contains("Spec notes (accepted, not used):"), "{md}");
    assert!(md.contains("key `owner` not used by kplan"));
}

#[test]
fn wrong_type_is_rejected() {
    bad(
        "type",
        &format!("{GOOD}\n[requirements]\nframework_expressible = \"no\"\n"),
        12,
        &["invalid type", "expected a boolean"],
    );
}

#[test]
fn unknown_feature_op_and_dtype_get_suggestions() {
    bad(
        "feature",
        &GOOD.replace("warp-shuffle", "warp-shufle"),
        6,
        &[
            "unknown feature `warp-shufle`",
            "did you mean `warp-shuffle`?",
        ],
    );
    bad(
        "op",
        &GOOD.replace("\"norm\"", "\"softmx\""),
        3,
        &["unknown op `softmx`", "did you mean `softmax`?"],
    );
    bad(
        "dtype",
        &GOOD.replace("\"bf16\", \"fp32\"", "\"bf61\", \"fp32\""),
        4,
        &["unknown dtype `bf61`", "expected one of"],
    );
    bad(
        "abstraction",
        &format!("{GOOD}\n[abstraction]\nallowed = [\"trition\"]\n"),
        12,
        &["unknown abstraction `trition`", "did you mean `triton`?"],
    );
}

#[test]
fn problem_keys_are_checked_per_op() {
    bad(
        "problem",
        &GOOD.replace("rows = 1024, cols = 4096", "rows = 1024, colz = 4096"),
        5,
        &["unknown problem key `colz`", "did you mean `cols`?"],
    );
    bad(
        "zero",
        &GOOD.replace("rows = 1024", "rows = 0"),
        5,
        &["expected a positive integer"],
    );
    // A key the op's work model needs is missing: the plan is made without the model and a
    // located warning says which key.
    let d = scratch("missing");
    let spec = d.join("partial.toml");
    std::fs::write(
        &spec,
        GOOD.replace(
            "problem = { rows = 1024, cols = 4096 }",
            "problem = { rows = 1024 }",
        ),
    )
    .unwrap();
    let out = kplan(&["plan", spec.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}:5:", spec.display())) && err.contains("missing `cols`"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("FLOPs and bytes: unknown"));
}

#[test]
fn broken_toml_is_located() {
    bad(
        "syntax",
        &GOOD.replace("targets = [", "targets = [[["),
        10,
        &["expected"],
    );
}

#[test]
fn missing_spec_file_is_a_usage_error() {
    let out = kplan(&["plan", "/nonexistent/kplan/spec.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read spec"));
}

#[test]
fn existing_output_file_survives_a_failed_run() {
    let d = scratch("keep");
    let spec = d.join("bad.toml");
    std::fs::write(&spec, GOOD.replace("sm_80", "sm_8O")).unwrap();
    let out_path = d.join("plan.md");
    std::fs::write(&out_path, "previous plan").unwrap();
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "previous plan");
}

#[test]
fn source_scan_adds_located_risks() {
    let d = scratch("source");
    let src = d.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("k.cu"),
        "__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n  v += __shfl_down_sync(0xffffffff, v, 1);\n  asm volatile(\"membar.gl;\");\n  x[0] = v;\n}\n",
    )
    .unwrap();
    let spec = d.join("good.toml");
    std::fs::write(&spec, GOOD).unwrap();
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "--format",
        "json",
        "--source",
        src.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let risks = v["risks"].as_array().unwrap();
    let asm = risks
        .iter()
        .find(|r| r["id"] == "source-inline-ptx")
        .expect("inline PTX found in the source");
    let ev = asm["evidence"][0].as_str().unwrap();
    assert!(ev.ends_with("k.cu:4:3"), "{ev}");
    assert!(asm["targets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "gfx942"));
    let item = v["checklist"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["item"] == "risk register lists every NVIDIA-specific feature")
        .unwrap();
    assert_eq!(item["status"], "pass");
    // Without --source the same item needs a human.
    let out = kplan(&["plan", spec.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item = v["checklist"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["item"] == "risk register lists every NVIDIA-specific feature")
        .unwrap();
    assert_eq!(item["status"], "needs-human");
}

#[test]
fn missing_source_dir_is_a_usage_error() {
    let spec = root().join("examples/rmsnorm.toml");
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "--source",
        "/nonexistent/kplan-src",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_names_every_option() {
    let out = kplan(&["plan", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for s in [
        "<SPEC>",
        "--format <FORMAT>",
        "human:",
        "json:",
        "-o, --output <FILE>",
        "--source <DIR>",
        "docs/plan.md",
    ] {
        assert!(help.contains(s), "`{s}` not in help:\n{help}");
    }
}

#[test]
fn binary_spec_is_located_and_writes_nothing() {
    let d = scratch("binary");
    let spec = d.join("bad.toml");
    let mut bytes = b"[kernel]\nname = \"x\"\nop = \"".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0x81]);
    std::fs::write(&spec, &bytes).unwrap();
    let out_path = d.join("plan.md");
    let out = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!out_path.exists());
    let prefix = format!("{}:3:7: error: ", spec.display());
    assert!(
        err.starts_with(&prefix),
        "`{err}` should start with `{prefix}`"
    );
    assert!(err.contains("UTF-8"), "{err}");
}
