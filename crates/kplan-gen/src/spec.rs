//! The one part of a kernel spec that `kplan header` and `kplan build` read themselves:
//! `[backends] targets = ["sm_90a", "gfx942", ...]`.

use std::path::{Path, PathBuf};

/// A target list that could not be read from a spec.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// One target name as written in the spec, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecTarget {
    pub name: String,
    pub line: usize,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Reads `[backends] targets` from the spec at `path`.
pub fn spec_targets(path: &Path) -> Result<Vec<SpecTarget>, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    spec_targets_from_str(path, &text)
}

/// Same as [`spec_targets`] on text already read (`path` is used in messages).
pub fn spec_targets_from_str(path: &Path, text: &str) -> Result<Vec<SpecTarget>, SpecError> {
    let invalid = |line: usize, message: String| SpecError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let doc: toml::Spanned<toml::Table> = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        invalid(line, format!("invalid TOML: {}", e.message()))
    })?;
    let table = doc.get_ref();
    let Some(backends) = table.get("backends") else {
        return Err(invalid(
            1,
            "expected a `[backends]` table with `targets = [\"sm_90a\", \"gfx942\", ...]`".into(),
        ));
    };
    let Some(backends) = backends.as_table() else {
        return Err(invalid(
            find_line(text, "backends"),
            "`backends` must be a table: `[backends]`".into(),
        ));
    };
    let Some(targets) = backends.get("targets") else {
        return Err(invalid(
            find_line(text, "[backends]"),
            "expected `targets = [\"sm_90a\", \"gfx942\", ...]` in `[backends]`".into(),
        ));
    };
    let line = find_line(text, "targets");
    let Some(arr) = targets.as_array() else {
        return Err(invalid(
            line,
            "`targets` must be an array of target names, e.g. [\"sm_90a\", \"gfx942\"]".into(),
        ));
    };
    let mut out = Vec::new();
    for v in arr {
        let Some(s) = v.as_str() else {
            return Err(invalid(
                line,
                format!("`targets` entries must be strings, found `{v}`"),
            ));
        };
        let l = text
            .find(&format!("\"{s}\""))
            .map(|o| line_of(text, o))
            .unwrap_or(line);
        out.push(SpecTarget {
            name: s.to_string(),
            line: l,
        });
    }
    if out.is_empty() {
        return Err(invalid(
            line,
            "`targets` is empty: name at least one target".into(),
        ));
    }
    Ok(out)
}

/// Line of the first line whose trimmed text starts with `key` (for messages), else 1.
fn find_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(key))
        .map(|i| i + 1)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_targets_with_lines() {
        let t = "name = \"x\"\n[backends]\ntargets = [\n  \"sm_90a\",\n  \"gfx942\",\n]\n";
        let v = spec_targets_from_str(Path::new("s.toml"), t).unwrap();
        assert_eq!(
            v,
            vec![
                SpecTarget {
                    name: "sm_90a".into(),
                    line: 4
                },
                SpecTarget {
                    name: "gfx942".into(),
                    line: 5
                }
            ]
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = spec_targets_from_str(Path::new("s.toml"), "[backends]\ntargets = 3\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "s.toml:2: `targets` must be an array of target names, e.g. [\"sm_90a\", \"gfx942\"]"
        );
        let e = spec_targets_from_str(Path::new("s.toml"), "a = 1\nb = = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:2: invalid TOML"), "{e}");
        let e = spec_targets_from_str(Path::new("s.toml"), "a = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[backends]"), "{e}");
    }
}
