//! Snapshots of every verb's `--help` and of one representative run per verb that needs no
//! toolchain (`doctor`'s, which reports the toolchains, by its structure only)
//! (`tests/snapshots/`). `UPDATE_GOLDEN=1` (or `INSTA_UPDATE=always`) rewrites them;
//! `cargo insta review` shows the differences.

use std::path::PathBuf;

const VERBS: &[&str] = &[
    "plan", "scan", "rules", "explain", "ci", "new", "header", "build", "verify", "bench",
    "targets", "features", "ops", "doctor", "mcp",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `kplan ARGS` run in the repository root: exit code, stdout and stderr.
fn kplan(args: &[&str]) -> String {
    kplan_test_support::golden::insta_follows_update_golden();
    let o = kplan_test_support::kplan_command!()
        .args(args)
        .current_dir(root())
        .env_remove("KPLAN_HEADER")
        .output()
        .expect("run kplan");
    format!(
        "$ kplan {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        o.status
            .code()
            .map_or("signal".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn help_of_kplan() {
    insta::assert_snapshot!("help", kplan(&["--help"]));
}

#[test]
fn help_of_every_verb() {
    for verb in VERBS {
        insta::assert_snapshot!(format!("help-{verb}"), kplan(&[verb, "--help"]));
    }
}

#[test]
fn every_verb_has_a_help_snapshot() {
    let help = kplan(&["--help"]);
    let listed: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .take_while(|w| !w.starts_with('-') && !w.ends_with(':'))
        .filter(|w| *w != "help")
        .collect();
    assert!(!listed.is_empty(), "{help}");
    for verb in &listed {
        assert!(VERBS.contains(verb), "no help snapshot for `{verb}`");
    }
    assert_eq!(listed.len(), VERBS.len(), "{listed:?}");
}

#[test]
fn run_plan() {
    insta::assert_snapshot!(
        "run-plan",
        kplan(&["plan", "examples/softmax.toml", "--format", "json"])
    );
}

#[test]
fn run_scan() {
    insta::assert_snapshot!(
        "run-scan",
        kplan(&[
            "scan",
            "crates/kplan-scan/tests/fixtures/warp-size-literal/fire.cu",
            "--targets",
            "sm_90a,gfx942",
        ])
    );
}

#[test]
fn run_ci() {
    insta::assert_snapshot!(
        "run-ci",
        kplan(&[
            "ci",
            "examples/rowsum-framework.toml",
            "--kplan-rev",
            "0123456789abcdef0123456789abcdef01234567",
        ])
    );
}

#[test]
fn run_rules() {
    insta::assert_snapshot!("run-rules", kplan(&["rules"]));
}

#[test]
fn run_explain() {
    insta::assert_snapshot!("run-explain", kplan(&["explain", "ballot-narrowing"]));
}

#[test]
fn run_header() {
    insta::assert_snapshot!("run-header", kplan(&["header", "--targets", "gfx1100"]));
}

/// `build`, `verify` and `bench` compile with real toolchains (their tests skip without them);
/// their snapshots are the input errors every machine gives the same way.
#[test]
fn run_build() {
    insta::assert_snapshot!(
        "run-build",
        kplan(&["build", "no/such/kernel.cu", "--targets", "sm_90a"])
    );
}

#[test]
fn run_verify() {
    insta::assert_snapshot!("run-verify", kplan(&["verify", "no_such_kernel"]));
}

#[test]
fn run_bench() {
    insta::assert_snapshot!("run-bench", kplan(&["bench", "no_such_kernel"]));
}

#[test]
fn run_targets() {
    insta::assert_snapshot!("run-targets", kplan(&["targets", "show", "mi300x"]));
}

#[test]
fn run_features() {
    insta::assert_snapshot!("run-features", kplan(&["features"]));
}

#[test]
fn run_ops() {
    insta::assert_snapshot!("run-ops", kplan(&["ops"]));
}

#[test]
fn run_ops_show() {
    insta::assert_snapshot!("run-ops-show", kplan(&["ops", "show", "softmax"]));
}

/// `doctor` reports what this machine has, so only its structure is snapshotted: every
/// backend and component, in order, with whether it can build, where it was found, its version
/// and the problem redacted. What is absent is said, never passed over: each backend that
/// cannot build here is a visible `SKIP` line (a failure under `KPLAN_REQUIRE_TOOLCHAINS=1`).
#[test]
fn run_doctor() {
    let run = kplan(&["doctor"]);
    let filters = vec![
        (r": (?:can build|cannot build)\n", ": [CAN BUILD OR NOT]\n"),
        (
            r"(?m)^  (?:found {4}|missing {2})([^:\n]+): .*$",
            "  [FOUND OR MISSING] $1: [WHERE, VERSION OR PROBLEM]",
        ),
        (r"(?m)^ {11}install: .*\n", ""),
    ];
    insta::with_settings!({filters => filters}, {
        insta::assert_snapshot!("run-doctor", run);
    });
    let json = kplan(&["doctor", "--format", "json"]);
    let body = json
        .split("--- stdout\n")
        .nth(1)
        .and_then(|r| r.split("--- stderr\n").next())
        .unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(body).expect("doctor --format json");
    let backends = v["backends"].as_array().expect("backends");
    assert!(!backends.is_empty(), "{json}");
    for b in backends {
        let name = b["backend"].as_str().unwrap_or("?");
        // the human report says the same as the JSON one
        let title = b["title"].as_str().unwrap_or("?");
        let state = if b["can_build"] == true {
            "can build"
        } else {
            "cannot build"
        };
        assert!(
            run.contains(&format!("{title} [{name}]: {state}\n")),
            "{name}: {state} in the JSON, not in\n{run}"
        );
        if b["can_build"] != true {
            let missing: Vec<String> = b["components"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    Some(format!(
                        "{} ({})",
                        c["name"].as_str()?,
                        c["problem"].as_str()?
                    ))
                })
                .collect();
            kplan_test_support::toolchain::skip(format!(
                "doctor: backend `{name}` cannot build on this machine: {}",
                missing.join("; ")
            ));
        }
    }
}

/// `new` writes a project into a fresh directory: what it says (the directory redacted) and
/// the files it wrote.
#[test]
fn run_new() {
    let dir = kplan_test_support::cli::scratch("snap-new");
    let proj = dir.join("proj");
    let run = kplan(&["new", "examples/softmax.toml", proj.to_str().unwrap()]);
    let mut files = Vec::new();
    walk(&proj, &proj, &mut files);
    files.sort();
    let shown = format!("{run}--- files\n{}\n", files.join("\n"));
    insta::with_settings!({filters => vec![(literal(&proj.display().to_string()).as_str(), "[DIR]")]}, {
        insta::assert_snapshot!("run-new", shown);
    });
}

fn walk(root: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(d).expect("project directory") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
}

/// A regular expression that matches `text` literally (an insta filter).
fn literal(text: &str) -> String {
    let mut s = String::new();
    for c in text.chars() {
        if !c.is_alphanumeric() && c != '/' && c != '_' {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// `mcp` over stdio, as a client speaks to it: `initialize`, the `initialized` notification
/// and `tools/list`, one JSON-RPC message a line. Each tool's output schema is checked against
/// the committed `docs/plan.schema.json` (plan) and shown by name only.
#[test]
fn run_mcp() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let mut child = kplan_test_support::kplan_command!()
        .arg("mcp")
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kplan mcp");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.expect("read kplan mcp")).is_err() {
                break;
            }
        }
    });
    let mut reply = |msgs: &[serde_json::Value]| -> serde_json::Value {
        for m in msgs {
            writeln!(stdin, "{m}").expect("write to kplan mcp");
        }
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("kplan mcp replies within 60 s");
        serde_json::from_str(&line).expect("a JSON-RPC reply")
    };
    let init = reply(&[serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "snapshot", "version": "1"}
        }
    })]);
    let mut tools = reply(&[
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]);
    drop(stdin);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/plan.schema.json")).unwrap(),
    )
    .unwrap();
    for t in tools["result"]["tools"]
        .as_array_mut()
        .expect("a tool list")
    {
        let is_plan = t["name"] == "plan";
        if let Some(out) = t.get_mut("outputSchema") {
            if is_plan {
                assert_eq!(
                    *out, schema,
                    "plan's output schema is docs/plan.schema.json"
                );
                *out = "docs/plan.schema.json".into();
            }
        }
    }
    let status = child.wait().expect("kplan mcp ends when its input does");
    let shown = format!(
        "$ kplan mcp\nexit: {}\n--- initialize\n{}\n--- tools/list\n{}\n",
        status
            .code()
            .map_or("signal".to_string(), |c| c.to_string()),
        serde_json::to_string_pretty(&init).unwrap(),
        serde_json::to_string_pretty(&tools).unwrap()
    );
    insta::with_settings!({filters => vec![(literal(env!("CARGO_PKG_VERSION")).as_str(), "[VERSION]")]}, {
        insta::assert_snapshot!("run-mcp", shown);
    });
}
