//! Test helpers shared by the kplan workspace (dev-only, never published):
//!
//! * [`toolchain`]: a test that needs a real compiler, Python or GPU library either runs, or is
//!   skipped with a printed reason; under `KPLAN_REQUIRE_TOOLCHAINS=1` (CI, `scripts/test.sh`)
//!   the skip is a failure instead.
//! * [`golden`]: compare a generated text with its committed copy; `UPDATE_GOLDEN=1` rewrites
//!   the copy instead.
//! * [`cli`]: run the `kplan` binary from its tests and read its output; scratch directories.
//! * [`fixtures`]: the scan fixtures `tests/fixtures/<rule-id>/{fire,pass}.{cu,py}` and their
//!   `expect:` annotations.

pub mod cli;
pub mod fixtures;
pub mod golden;
pub mod toolchain;

use std::path::{Path, PathBuf};

/// A fresh directory under the system temp dir, removed on drop (`kplan-<tag>-XXXX`).
pub fn tempdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("kplan-{tag}-"))
        .tempdir()
        .expect("a temp dir can be created")
}

/// The workspace root (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}
