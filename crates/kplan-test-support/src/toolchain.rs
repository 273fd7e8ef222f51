//! Require-or-skip for tests that need a toolchain.
//!
//! ```ignore
//! let Some(clang) = found_clang() else {
//!     return kplan_test_support::toolchain::skip("no HIP clang (set KPLAN_HIP_CLANG)");
//! };
//! ```

/// The variable that turns a skip into a failure (set by `scripts/test.sh`).
pub const REQUIRE_VAR: &str = "KPLAN_REQUIRE_TOOLCHAINS";

/// Whether every toolchain is required (`KPLAN_REQUIRE_TOOLCHAINS=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).as_deref() == Ok("1")
}

/// Skips the calling test with `reason` printed to stderr (`SKIP <test>: <reason>`), or panics
/// with it when toolchains are required.
#[track_caller]
pub fn skip(reason: impl std::fmt::Display) {
    let test = std::thread::current()
        .name()
        .unwrap_or("test")
        .rsplit("::")
        .next()
        .unwrap_or("test")
        .to_string();
    if required() {
        panic!("{REQUIRE_VAR}=1 but {reason}");
    }
    eprintln!("SKIP {test}: {reason}");
}

/// `Some(value)` when the toolchain was found; otherwise [`skip`]s with the reason and gives
/// `None`.
#[track_caller]
pub fn require<T, E: std::fmt::Display>(found: Result<T, E>) -> Option<T> {
    match found {
        Ok(v) => Some(v),
        Err(e) => {
            skip(e);
            None
        }
    }
}

/// The first Python that runs `probe` successfully: `.venv-tools/` (where
/// scripts/install-test-deps.sh puts the integration tools), `KPLAN_PYTHON`, the repository's
/// `.venv`, then `fallback` (the one kplan finds); `Err` names `what` was looked for and every
/// Python tried.
pub fn python_that_runs(
    probe: &[&str],
    fallback: Option<std::path::PathBuf>,
    what: &str,
) -> Result<std::path::PathBuf, String> {
    let root = crate::workspace_root();
    let mut cands = vec![root.join(".venv-tools/bin/python")];
    if let Some(p) = std::env::var_os("KPLAN_PYTHON") {
        cands.push(p.into());
    }
    cands.push(root.join(".venv/bin/python"));
    cands.extend(fallback);
    for p in &cands {
        let ok = std::process::Command::new(p)
            .args(probe)
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(p.clone());
        }
    }
    Err(format!(
        "no Python with {what} (scripts/install-test-deps.sh installs it), tried {}",
        cands
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// `check-jsonschema` (PyPI; its `--builtin-schema vendor.github-workflows` validates GitHub
/// workflows): `KPLAN_CHECK_JSONSCHEMA`, else the one in the repository's `.venv`
/// (scripts/install-test-deps.sh), else on `PATH`.
pub fn check_jsonschema() -> Result<std::path::PathBuf, String> {
    use std::path::PathBuf;
    let cands: Vec<PathBuf> = [
        std::env::var_os("KPLAN_CHECK_JSONSCHEMA").map(PathBuf::from),
        Some(crate::workspace_root().join(".venv/bin/check-jsonschema")),
        Some(PathBuf::from("check-jsonschema")),
    ]
    .into_iter()
    .flatten()
    .collect();
    for c in cands {
        if std::process::Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(c);
        }
    }
    Err("no check-jsonschema (scripts/install-test-deps.sh installs it into .venv; or set KPLAN_CHECK_JSONSCHEMA)".into())
}

/// A HIP-capable clang: `KPLAN_HIP_CLANG` (set by scripts/test-env.sh), else `clang-19` when it
/// runs.
pub fn hip_clang() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("KPLAN_HIP_CLANG").filter(|p| !p.is_empty()) {
        return Some(std::path::PathBuf::from(p));
    }
    let ok = std::process::Command::new("clang-19")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then(|| std::path::PathBuf::from("clang-19"))
}
