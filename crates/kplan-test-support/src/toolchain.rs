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
