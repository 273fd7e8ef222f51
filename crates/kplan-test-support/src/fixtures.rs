//! The scan rule fixtures: `crates/kplan-scan/tests/fixtures/<rule-id>/fire.{cu,py}` (every
//! expected finding annotated on its first line) and `pass.{cu,py}` (the portable rewrite: the
//! rule stays silent).
//!
//! An annotation names rule ids after a marker in a comment: `//~ rule-a rule-b` in C++ and
//! `# expect: rule-a, rule-b` in Python (ids separated by spaces or commas).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The markers that start an annotation.
pub const MARKERS: [&str; 2] = ["//~", "# expect:"];

/// The fixture directory of the scan rules.
pub fn dir() -> PathBuf {
    crate::workspace_root().join("crates/kplan-scan/tests/fixtures")
}

/// The language's file extension in the fixture layout: `cu` or `py`.
pub fn ext(python: bool) -> &'static str {
    if python {
        "py"
    } else {
        "cu"
    }
}

/// `<dir>/<rule-id>/fire.<ext>`.
pub fn fire(rule: &str, python: bool) -> PathBuf {
    dir().join(rule).join(format!("fire.{}", ext(python)))
}

/// `<dir>/<rule-id>/pass.<ext>`.
pub fn pass(rule: &str, python: bool) -> PathBuf {
    dir().join(rule).join(format!("pass.{}", ext(python)))
}

/// Every `(line, rule-id)` annotated in `text` (lines from 1).
pub fn annotations(text: &str) -> BTreeSet<(u32, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        for marker in MARKERS {
            for part in line.split(marker).skip(1) {
                for id in part
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .filter(|s| !s.is_empty())
                {
                    out.insert((i as u32 + 1, id.to_string()));
                }
            }
        }
    }
    out
}

/// The lines annotated with `rule`.
pub fn lines_of(text: &str, rule: &str) -> BTreeSet<u32> {
    annotations(text)
        .into_iter()
        .filter(|(_, r)| r == rule)
        .map(|(l, _)| l)
        .collect()
}

/// Reads a fixture, panicking with its path.
#[track_caller]
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_markers_are_read() {
        let t = "a //~ r1 r2\nb\nc # expect: r3, r4\n";
        let got: Vec<(u32, String)> = annotations(t).into_iter().collect();
        assert_eq!(
            got,
            vec![
                (1, "r1".into()),
                (1, "r2".into()),
                (3, "r3".into()),
                (3, "r4".into())
            ]
        );
        assert_eq!(lines_of(t, "r3"), BTreeSet::from([3]));
    }
}
