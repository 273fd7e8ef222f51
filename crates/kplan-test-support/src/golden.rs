//! Golden files: a text a test (or `cargo xtask generate`) produces, compared with its
//! committed copy. One meaning of `UPDATE_GOLDEN` everywhere: `UPDATE_GOLDEN=1` writes the
//! fresh text over the committed copy; unset (or any other value) compares and fails on a
//! difference.

use std::path::Path;

/// Check the committed copies, or rewrite them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Check,
    Write,
}

impl Mode {
    /// [`Mode::Write`] under `UPDATE_GOLDEN=1`, else [`Mode::Check`].
    pub fn from_env() -> Mode {
        if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
            Mode::Write
        } else {
            Mode::Check
        }
    }
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The committed copy is the fresh text.
    Same,
    /// The committed copy was rewritten (Write mode).
    Written,
    /// The committed copy differs or is missing (Check mode); the first differing line.
    Stale { first_difference: String },
}

/// Compares `want` with the file at `path`, or (in [`Mode::Write`]) writes it there when it
/// differs. Errors are I/O errors of the write.
pub fn compare(path: &Path, want: &str, mode: Mode) -> std::io::Result<Outcome> {
    let have = std::fs::read_to_string(path).ok();
    if have.as_deref() == Some(want) {
        return Ok(Outcome::Same);
    }
    match mode {
        Mode::Write => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, want)?;
            Ok(Outcome::Written)
        }
        Mode::Check => Ok(Outcome::Stale {
            first_difference: match have {
                None => "missing".to_string(),
                Some(have) => first_difference(&have, want),
            },
        }),
    }
}

/// `line N: committed `..` / generated `..``, for a failure message.
pub fn first_difference(have: &str, want: &str) -> String {
    let mut h = have.lines();
    let mut w = want.lines();
    let mut n = 1;
    loop {
        match (h.next(), w.next()) {
            (None, None) => return "line endings or a final newline differ".into(),
            (a, b) if a == b => n += 1,
            (a, b) => {
                return format!(
                    "line {n}: committed `{}` / generated `{}`",
                    a.unwrap_or("<end of file>"),
                    b.unwrap_or("<end of file>")
                )
            }
        }
    }
}

/// Test helper: [`compare`] under [`Mode::from_env`], panicking with `regenerate` (the command
/// that rewrites it) when the committed copy is stale.
#[track_caller]
pub fn assert_golden(path: &Path, want: &str, regenerate: &str) {
    match compare(path, want, Mode::from_env()) {
        Ok(Outcome::Same | Outcome::Written) => {}
        Ok(Outcome::Stale { first_difference }) => panic!(
            "{} is stale ({first_difference}): run `{regenerate}` and commit it",
            path.display()
        ),
        Err(e) => panic!("cannot write {}: {e}", path.display()),
    }
}

/// Makes insta snapshots follow `UPDATE_GOLDEN=1` too (they are rewritten, as with
/// `INSTA_UPDATE=always`), so that one variable refreshes every golden file. Call it before the
/// first `insta::assert_snapshot!` of a test.
pub fn insta_follows_update_golden() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if Mode::from_env() == Mode::Write && std::env::var_os("INSTA_UPDATE").is_none() {
            // Set once, before any snapshot is compared; every test of the binary reads the same value.
            std::env::set_var("INSTA_UPDATE", "always");
        }
    });
}
