//! How users install and run kplan, exercised for real: the pip wheel (maturin, `bindings =
//! "bin"`) built and installed into a fresh virtual environment, then `kplan plan` and
//! `kplan scan` run from that install outside the checkout; the pre-commit hook
//! (`.pre-commit-hooks.yaml`) run by pre-commit on a fixture repository; the GitHub Action
//! (`action.yml`) validated against the action schema, and its SARIF limits applied.
//!
//! The tools (maturin, pre-commit, check-jsonschema) come from PyPI into the test Python
//! (scripts/install-test-deps.sh); a test whose tool is absent is skipped with the reason (a
//! failure under KPLAN_REQUIRE_TOOLCHAINS=1). The builds use the `dev` profile and this test
//! run's own target directory, so that the wheel and `cargo install` reuse the test build (only
//! the stripped executable is linked again) instead of paying for a release build.

use kplan_test_support::{toolchain::skip, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// A Python that can run `-m module` (`KPLAN_PYTHON`, the repository's `.venv`, or the one
/// kplan finds), or why there is none.
fn python_with(module: &str) -> Result<PathBuf, String> {
    kplan_test_support::toolchain::python_that_runs(
        &["-m", module, "--version"],
        kplan_build::toolchain::find_python().ok(),
        &format!("`{module}`"),
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(c: &mut Command) -> Output {
    let o = c
        .output()
        .unwrap_or_else(|e| panic!("cannot run {c:?}: {e}"));
    assert!(
        o.status.success(),
        "{c:?} failed ({}):\n{}\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

/// The cargo target directory of this test run (the `kplan` binary is `<target>/debug/kplan`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_kplan"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives under the target directory")
        .to_path_buf()
}

/// Where the test builds put their wheels.
fn build_dir() -> PathBuf {
    target_dir().join("install-tests")
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Builds the wheel once for the run (dev profile, `--locked`) and gives its path and the
/// seconds the build took.
fn wheel(python: &Path) -> &'static (PathBuf, f64) {
    static WHEEL: OnceLock<(PathBuf, f64)> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let out = build_dir().join("dist");
        let _ = std::fs::remove_dir_all(&out);
        let t = std::time::Instant::now();
        run(Command::new(python)
            .args([
                "-m",
                "maturin",
                "build",
                "--locked",
                "--profile",
                "dev",
                "--out",
            ])
            .arg(&out)
            .current_dir(workspace_root())
            .env("CARGO_TARGET_DIR", target_dir()));
        let secs = t.elapsed().as_secs_f64();
        let whl = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .expect("maturin wrote a wheel");
        eprintln!("wheel built in {secs:.1} s: {}", whl.display());
        (whl, secs)
    })
}

/// An environment with nothing of the checkout in it: no KPLAN_* overrides, no virtual
/// environment, PATH the system's.
fn clean_env(c: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("KPLAN_") || k.starts_with("CARGO") || k == "VIRTUAL_ENV" {
            c.env_remove(&k);
        }
    }
    c.env("PATH", "/usr/local/bin:/usr/bin:/bin")
}

#[test]
fn pip_wheel_installs_and_runs_outside_the_checkout() {
    let py = match python_with("maturin") {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let (whl, _) = wheel(&py);
    let name = whl.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("kplan-0."), "{name}");
    // a fresh virtual environment, the wheel only (no index, no dependencies)
    let dir = kplan_test_support::tempdir("wheel");
    let venv = dir.path().join("venv");
    run(Command::new(&py).args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .arg(whl));
    let exe = venv.join("bin/kplan");
    assert!(exe.is_file(), "the wheel installs bin/kplan");
    // inputs copied out of the checkout; run from a directory outside it
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let root = workspace_root();
    std::fs::copy(
        root.join("examples/rmsnorm.toml"),
        work.join("rmsnorm.toml"),
    )
    .unwrap();
    let fixture = kplan_test_support::fixtures::fire("full-mask-literal", false);
    std::fs::copy(&fixture, work.join("kernel.cu")).unwrap();
    let kplan = |args: &[&str]| {
        let mut c = Command::new(&exe);
        clean_env(&mut c).args(args).current_dir(&work);
        c.output().unwrap()
    };
    let installed = kplan(&["plan", "rmsnorm.toml", "--format", "json"]);
    assert_eq!(
        installed.status.code(),
        Some(0),
        "{}",
        text(&installed.stderr)
    );
    let built = kplan_test_support::kplan_command!()
        .args(["plan", "rmsnorm.toml", "--format", "json"])
        .current_dir(&work)
        .output()
        .unwrap();
    assert_eq!(
        text(&installed.stdout),
        text(&built.stdout),
        "the same plan as the build tree's binary"
    );
    let md = kplan(&["plan", "rmsnorm.toml", "-o", "plan.md"]);
    assert_eq!(md.status.code(), Some(0));
    assert!(std::fs::read_to_string(work.join("plan.md"))
        .unwrap()
        .lines()
        .any(|l| l.starts_with("# ")));
    let scan = kplan(&["scan", "kernel.cu", "--format", "json"]);
    assert_eq!(scan.status.code(), Some(1), "{}", text(&scan.stderr));
    let v: serde_json::Value = serde_json::from_slice(&scan.stdout).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "full-mask-literal"));
    // the header and the rule docs are embedded
    let h = kplan(&["header", "--targets", "sm_90a,gfx942"]);
    assert_eq!(h.status.code(), Some(0));
    assert!(text(&h.stdout).contains("#pragma once") || text(&h.stdout).contains("#ifndef"));
    // nothing is looked up in the build tree: the installed binary does not even name it
    let bytes = std::fs::read(&exe).unwrap();
    let root_s = root.to_string_lossy().into_owned();
    assert!(
        !bytes.windows(root_s.len()).any(|w| w == root_s.as_bytes()),
        "the installed binary names the checkout {root_s}"
    );
}

#[test]
fn cargo_install_locked_installs_and_runs() {
    // the documented `cargo install --locked --path crates/kplan`, unoptimised (--debug) with this
    // run's target directory so that it reuses the test build
    let dir = kplan_test_support::tempdir("cargo-install");
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let t = std::time::Instant::now();
    run(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args([
                "install",
                "--locked",
                "--debug",
                "--path",
                "crates/kplan",
                "--root",
            ])
            .arg(dir.path())
            .current_dir(workspace_root())
            .env("CARGO_TARGET_DIR", target_dir()),
    );
    eprintln!(
        "cargo install --debug took {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let exe = dir.path().join("bin/kplan");
    let root = workspace_root();
    let mut c = Command::new(&exe);
    let o = clean_env(&mut c)
        .args(["plan"])
        .arg(root.join("examples/rmsnorm.toml"))
        .args(["--format", "json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["kernel"].is_object() || v["kernel"].is_string());
}

fn git(dir: &Path, args: &[&str]) {
    run(Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "kplan test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "kplan test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid"));
}

#[test]
fn pre_commit_hook_scans_staged_files() {
    let py = match python_with("pre_commit") {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    if let Err(why) = python_with("maturin") {
        return skip(format!("the hook builds kplan with maturin: {why}"));
    }
    let dir = kplan_test_support::tempdir("pre-commit");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let fixture = kplan_test_support::fixtures::fire("full-mask-literal", false);
    let clean = kplan_test_support::fixtures::pass("full-mask-literal", false);
    std::fs::copy(&clean, repo.join("src/ok.cu")).unwrap();
    std::fs::write(
        repo.join("kplan.toml"),
        "targets = [\"sm_90a\", \"gfx942\"]\n",
    )
    .unwrap();
    git(&repo, &["add", "."]);
    // the hook from this repository's last commit, as a user's .pre-commit-config.yaml names it;
    // pre-commit installs it once (pip builds the wheel from its clone, here with the dev
    // profile and this run's target directory) and reuses it for both runs
    let root = workspace_root();
    let head = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&root));
    let rev = text(&head.stdout).trim().to_string();
    std::fs::write(
        repo.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: kplan-scan\n",
            root.display()
        ),
    )
    .unwrap();
    git(&repo, &["add", ".pre-commit-config.yaml"]);
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let hook = || {
        let mut c = Command::new(&py);
        c.args(["-m", "pre_commit", "run"])
            .current_dir(&repo)
            .env("PRE_COMMIT_HOME", dir.path().join("cache"))
            .env("MATURIN_PEP517_ARGS", "--profile dev --locked")
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("VIRTUAL_ENV");
        c.output().unwrap()
    };
    // staged: the clean file only
    let t = std::time::Instant::now();
    let ok = hook();
    eprintln!(
        "pre-commit (install + run) took {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}\n{}",
        text(&ok.stdout),
        text(&ok.stderr)
    );
    assert!(
        text(&ok.stdout).contains("kplan scan"),
        "{}",
        text(&ok.stdout)
    );
    // a file with a finding staged: the hook fails and names it
    std::fs::copy(&fixture, repo.join("src/bad.cu")).unwrap();
    git(&repo, &["add", "src/bad.cu"]);
    let t = std::time::Instant::now();
    let bad = hook();
    eprintln!("pre-commit (run) took {:.1} s", t.elapsed().as_secs_f64());
    let out = text(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{out}\n{}", text(&bad.stderr));
    assert!(
        out.contains("src/bad.cu:") && out.contains("[full-mask-literal]"),
        "{out}"
    );
    // the clean file may carry notes, never an error
    assert!(
        !out.lines()
            .any(|l| l.starts_with("src/ok.cu:") && l.contains(": error[")),
        "{out}"
    );
}

#[test]
fn action_yml_is_a_valid_action_and_sarif_limits_hold() {
    // the wheel test links the executable again: not while this test runs it
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let root = workspace_root();
    let py = match python_with("check_jsonschema") {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let check = |action: &Path| {
        Command::new(&py)
            .args(["-m", "check_jsonschema"])
            .args(["--builtin-schema", "vendor.github-actions"])
            .arg(action)
            .output()
            .unwrap()
    };
    let o = check(&root.join("action.yml"));
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    // the schema check can fail: a broken copy is rejected
    let dir = kplan_test_support::tempdir("action");
    let broken = dir.path().join("action.yml");
    let yml = std::fs::read_to_string(root.join("action.yml")).unwrap();
    std::fs::write(&broken, yml.replace("using: composite", "using: compost")).unwrap();
    let o = check(&broken);
    assert!(
        !o.status.success(),
        "a broken action passes the schema check"
    );

    // the limits: a real SARIF report, its results repeated past 25,000, is cut to 25,000,
    // errors first; the untouched report stays byte for byte the same
    let sarif = dir.path().join("kplan.sarif");
    let s = kplan_test_support::kplan_command!()
        .arg("scan")
        .arg(kplan_test_support::fixtures::dir())
        .args(["--format", "sarif", "-o"])
        .arg(&sarif)
        .output()
        .unwrap();
    assert_eq!(s.status.code(), Some(1), "{}", text(&s.stderr));
    let before = std::fs::read(&sarif).unwrap();
    let limits = root.join("scripts/sarif_limits.py");
    run(Command::new(&py).arg(&limits).arg(&sarif));
    assert_eq!(
        std::fs::read(&sarif).unwrap(),
        before,
        "within the limits: unchanged"
    );
    let mut doc: serde_json::Value = serde_json::from_slice(&before).unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap().clone();
    let errors = results.iter().filter(|r| r["level"] == "error").count();
    assert!(errors > 0 && errors < results.len());
    let copies = 25_000 / results.len() + 2;
    let big: Vec<serde_json::Value> = (0..copies).flat_map(|_| results.clone()).collect();
    let total = big.len();
    doc["runs"][0]["results"] = serde_json::Value::Array(big);
    std::fs::write(&sarif, serde_json::to_vec(&doc).unwrap()).unwrap();
    let o = run(Command::new(&py).arg(&limits).arg(&sarif));
    assert!(
        text(&o.stderr).contains(&format!("dropped {}", total - 25_000)),
        "{}",
        text(&o.stderr)
    );
    let cut: serde_json::Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    let kept = cut["runs"][0]["results"].as_array().unwrap();
    assert_eq!(kept.len(), 25_000);
    assert_eq!(
        kept.iter().filter(|r| r["level"] == "error").count(),
        (errors * copies).min(25_000),
        "errors are kept first"
    );
    // and the gzip limit, made small enough to bite: half the gzipped size of the 25,000
    // results (the rule metadata alone takes a fixed part of it, which grows with the rules)
    let gz = run(Command::new(&py)
        .arg("-c")
        .arg("import gzip, sys; print(len(gzip.compress(open(sys.argv[1], 'rb').read())))")
        .arg(&sarif));
    let full: usize = text(&gz.stdout).trim().parse().unwrap();
    run(Command::new(&py)
        .arg(&limits)
        .arg(&sarif)
        .args(["--max-gzip-bytes", &(full / 2).to_string()]));
    let bytes = std::fs::read(&sarif).unwrap();
    let small: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let n = small["runs"][0]["results"].as_array().unwrap().len();
    assert!(n > 0 && n < 25_000, "{n}");
}
