//! Running the `kplan` binary in the CLI tests (`crates/kplan/tests`) and reading what it
//! printed. Cargo names the binary only to the tests of the crate that builds it (the
//! compile-time `CARGO_BIN_EXE_kplan`), so [`kplan_command!`](crate::kplan_command) expands in the
//! test itself:
//!
//! ```ignore
//! use kplan_test_support::{cli, kplan_command};
//! fn kplan(args: &[&str]) -> std::process::Output {
//!     cli::output(kplan_command!().args(args))
//! }
//! ```

use std::ops::Deref;
use std::path::Path;
use std::process::{Command, Output};

/// A `Command` for the `kplan` binary of the calling test crate.
#[macro_export]
macro_rules! kplan_command {
    () => {
        std::process::Command::new(env!("CARGO_BIN_EXE_kplan"))
    };
}

/// Runs `cmd` to the end and returns what it left; panics (naming the command) only when it
/// cannot start.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Standard output as text (lossy UTF-8).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text (lossy UTF-8).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output then standard error, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// Standard output parsed as JSON; panics with everything printed when it is not JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", text(o)))
}

/// A scratch directory for one test, removed when dropped; it reads as the [`Path`] it is
/// (`d.join("a.cu")`, `&d` where a `&Path` is wanted).
pub struct Scratch(tempfile::TempDir);

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh [`Scratch`] directory `kplan-<tag>-XXXX` under the system temp dir.
pub fn scratch(tag: &str) -> Scratch {
    Scratch(crate::tempdir(tag))
}
