//! Snapshots of every verb's `--help` and of one representative run per verb that needs no
//! toolchain (`tests/snapshots/`). `UPDATE_GOLDEN=1` (or `INSTA_UPDATE=always`) rewrites them;
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
