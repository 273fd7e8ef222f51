//! `kplan mcp` with the official MCP Python SDK (`mcp` from PyPI, installed by
//! scripts/install-test-deps.sh) as the client: list the tools, call `plan` on an example spec
//! passed inline, `scan` on a fixture, and check a bad spec's error. Skipped, with the reason,
//! when no Python has the SDK (a failure under KPLAN_REQUIRE_TOOLCHAINS=1).

use kplan_test_support::{toolchain::skip, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python with the `mcp` package: `.venv-tools`, `KPLAN_PYTHON`, the repository's `.venv`, or the one kplan
/// finds; `Err` says why there is none.
fn python_with_mcp() -> Result<PathBuf, String> {
    kplan_test_support::toolchain::python_that_runs(
        &["-c", "import mcp.client.stdio"],
        kplan_build::toolchain::find_python().ok(),
        "the MCP SDK (`pip install mcp`)",
    )
}

fn kplan(args: &[&str]) -> std::process::Output {
    kplan_test_support::cli::output(kplan_test_support::kplan_command!().args(args))
}

#[test]
fn mcp_sdk_lists_tools_and_calls_plan_scan_and_errors() {
    let py = match python_with_mcp() {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let root = workspace_root();
    let spec = root.join("examples/rmsnorm.toml");
    let fixture = kplan_test_support::fixtures::fire("full-mask-literal", false);
    let dir = kplan_test_support::tempdir("mcp");
    let bad = dir.path().join("bad.toml");
    let spec_text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&bad, spec_text.replace("\"gfx942\"", "\"gfx9420\"")).unwrap();
    assert_ne!(
        std::fs::read_to_string(&bad).unwrap(),
        spec_text,
        "the bad spec differs"
    );
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let out = Command::new(&py)
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_kplan"))
        .arg(&spec)
        .arg(&fixture)
        .arg(&bad)
        .output()
        .expect("run the MCP client");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed:\n{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client JSON");
    assert_eq!(v["server"], "kplan");

    // the tools, each with an object input schema
    let tools = v["tools"].as_object().unwrap();
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "build", "doctor", "explain", "features", "header", "ops", "plan", "scan", "targets",
            "verify"
        ]
    );
    for (n, t) in tools {
        assert_eq!(t["input"]["type"], "object", "{n}");
    }
    // plan's output schema is the documented one
    let documented: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("docs/plan.schema.json")).unwrap())
            .unwrap();
    assert_eq!(tools["plan"]["output"], documented);

    // plan: the same JSON as the CLI (the SDK validated it against the output schema)
    let plan = &v["plan"];
    assert_eq!(plan["is_error"], false, "{plan}");
    let cli = kplan(&["plan", spec.to_str().unwrap(), "--format", "json"]);
    assert_eq!(cli.status.code(), Some(0));
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(plan["structured"], cli);

    // scan: the fixture's findings, as `kplan scan --format json` reports them
    let scan = &v["scan"];
    assert_eq!(scan["is_error"], false, "{scan}");
    let cli = kplan(&["scan", fixture.to_str().unwrap(), "--format", "json"]);
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(scan["structured"], cli);
    let rules: Vec<&str> = scan["structured"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"full-mask-literal"), "{rules:?}");

    // a bad spec: a tool error with the CLI's message (the temporary file shown as spec_toml)
    let badr = &v["bad"];
    assert_eq!(badr["is_error"], true, "{badr}");
    let text = badr["text"][0].as_str().unwrap();
    let cli = kplan(&["plan", bad.to_str().unwrap()]);
    assert_eq!(cli.status.code(), Some(2));
    let cli_err = String::from_utf8_lossy(&cli.stderr).replace(bad.to_str().unwrap(), "spec_toml");
    assert_eq!(text, cli_err.trim_end());
    assert!(
        text.starts_with("spec_toml:") && text.contains("did you mean `gfx942`?"),
        "{text}"
    );

    // every tool has an output schema (the SDK validated each structured result against it)
    for (n, t) in tools {
        assert_eq!(t["output"]["type"], "object", "{n} has no output schema");
    }

    // explain: the rule as `kplan explain --format json` prints it, its page as `markdown`; an
    // unknown rule is a tool error with the CLI's message
    let ex = &v["explain"];
    assert_eq!(ex["is_error"], false, "{ex}");
    let cli = kplan(&["explain", "full-mask-literal", "--format", "json"]);
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(ex["structured"], cli);
    assert_eq!(ex["structured"]["id"], "full-mask-literal");
    let page = kplan(&["explain", "full-mask-literal"]);
    assert_eq!(
        ex["structured"]["markdown"].as_str().unwrap(),
        String::from_utf8_lossy(&page.stdout)
    );

    // header: the CLI's text as `header`
    let h = &v["header"];
    assert_eq!(h["is_error"], false, "{h}");
    let cli = kplan(&["header", "--targets", "gfx942,sm_90a"]);
    assert_eq!(
        h["structured"]["header"].as_str().unwrap(),
        String::from_utf8_lossy(&cli.stdout)
    );

    // the knowledge base and doctor: the CLI's JSON (a JSON array as `items`)
    for (key, args) in [
        ("targets", &["targets", "--format", "json"][..]),
        (
            "targets_show",
            &["targets", "show", "mi300x", "--format", "json"],
        ),
        ("features", &["features", "--format", "json"]),
        ("ops_show", &["ops", "show", "scan", "--format", "json"]),
    ] {
        assert_eq!(v[key]["is_error"], false, "{key}: {}", v[key]);
        let cli: serde_json::Value = serde_json::from_slice(&kplan(args).stdout).unwrap();
        assert_eq!(v[key]["structured"], cli, "{key}");
    }
    let cli: serde_json::Value =
        serde_json::from_slice(&kplan(&["ops", "--format", "json"]).stdout).unwrap();
    assert!(cli.is_array());
    assert_eq!(v["ops"]["structured"]["items"], cli);
    assert_eq!(v["doctor"]["is_error"], false, "{}", v["doctor"]);
    assert!(v["doctor"]["structured"]["backends"].is_array());
    let un = &v["unknown_rule"];
    assert_eq!(un["is_error"], true);
    let cli = kplan(&["explain", "no-such-rule"]);
    assert_eq!(
        un["text"][0].as_str().unwrap(),
        String::from_utf8_lossy(&cli.stderr).trim_end()
    );
}
