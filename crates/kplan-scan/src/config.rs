//! `kplan.toml`: scan configuration (`targets`, `select`, `ignore`, `per-file-ignores`,
//! `header`), at the top level or under `[scan]`. Errors carry file:line:column.

use crate::error::ScanError;
use globset::{Glob, GlobMatcher};
use std::path::{Path, PathBuf};

/// File name looked for in the scanned tree.
pub const CONFIG_FILE: &str = "kplan.toml";

/// File names recognised as a kplan portability header without configuration.
pub const HEADER_NAMES: &[&str] = &[
    "kplan.h",
    "kplan.cuh",
    "kplan_portability.h",
    "kplan_portable.h",
    "kplan-portability.h",
];

#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where the configuration was read from (None: defaults).
    pub path: Option<PathBuf>,
    pub targets: Option<Vec<String>>,
    /// Rule ids to run (empty: all).
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    pub per_file_ignores: Vec<(GlobMatcher, Vec<String>)>,
    /// Portability headers, relative to the configuration's directory.
    pub headers: Vec<PathBuf>,
}

fn err(path: &Path, text: &str, offset: usize, message: String) -> ScanError {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    ScanError::Config {
        path: path.to_owned(),
        line,
        column,
        message,
    }
}

/// Offset of the first occurrence of `"needle"` (quoted) or `needle` after `key`, for errors.
fn locate(text: &str, key: &str, needle: &str) -> usize {
    let from = text.find(key).unwrap_or(0);
    let q = format!("\"{needle}\"");
    text[from..]
        .find(&q)
        .or_else(|| text[from..].find(needle))
        .map(|i| i + from)
        .unwrap_or(from)
}

impl Config {
    /// Reads and validates `path`. `known_rule` says whether a rule id exists.
    pub fn load(
        path: &Path,
        known_rule: &dyn Fn(&str) -> Option<Option<String>>,
    ) -> Result<Config, ScanError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScanError::Input {
            path: path.to_owned(),
            message: format!("cannot read configuration: {e}"),
        })?;
        Config::parse(path, &text, known_rule)
    }

    /// `known_rule(id)` returns `None` when the id exists, `Some(suggestion)` when it does not.
    pub fn parse(
        path: &Path,
        text: &str,
        known_rule: &dyn Fn(&str) -> Option<Option<String>>,
    ) -> Result<Config, ScanError> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| {
            let off = e.span().map(|s| s.start).unwrap_or(0);
            err(path, text, off, format!("invalid TOML: {}", e.message()))
        })?;
        let mut cfg = Config {
            path: Some(path.to_owned()),
            ..Config::default()
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut tables: Vec<(&toml::Table, &str)> = vec![(&doc, "")];
        if let Some(v) = doc.get("scan") {
            match v.as_table() {
                Some(t) => tables.push((t, "scan.")),
                None => {
                    return Err(err(
                        path,
                        text,
                        locate(text, "scan", "scan"),
                        "`scan` must be a table".into(),
                    ))
                }
            }
        }
        for (table, prefix) in tables {
            for (key, value) in table {
                let at = || locate(text, key, key);
                let strings = |v: &toml::Value, what: &str| -> Result<Vec<String>, ScanError> {
                    let arr = v.as_array().ok_or_else(|| {
                        err(
                            path,
                            text,
                            at(),
                            format!("`{prefix}{what}` must be an array of strings"),
                        )
                    })?;
                    arr.iter()
                        .map(|x| {
                            x.as_str().map(str::to_string).ok_or_else(|| {
                                err(
                                    path,
                                    text,
                                    at(),
                                    format!("`{prefix}{what}` must be an array of strings"),
                                )
                            })
                        })
                        .collect()
                };
                let check_rules = |ids: &[String]| -> Result<(), ScanError> {
                    for id in ids {
                        if id == "all" || id == "*" {
                            continue;
                        }
                        if let Some(sugg) = known_rule(id) {
                            let hint = sugg
                                .map(|s| format!(" (did you mean `{s}`?)"))
                                .unwrap_or_default();
                            return Err(err(
                                path,
                                text,
                                locate(text, key, id),
                                format!("unknown rule `{id}` in `{prefix}{key}`{hint}"),
                            ));
                        }
                    }
                    Ok(())
                };
                match key.as_str() {
                    "targets" => cfg.targets = Some(strings(value, "targets")?),
                    "select" => {
                        let v = strings(value, "select")?;
                        check_rules(&v)?;
                        cfg.select = v;
                    }
                    "ignore" => {
                        let v = strings(value, "ignore")?;
                        check_rules(&v)?;
                        cfg.ignore = v;
                    }
                    "header" => {
                        let hs = match value {
                            toml::Value::String(s) => vec![s.clone()],
                            v @ toml::Value::Array(_) => strings(v, "header")?,
                            _ => return Err(err(path, text, at(), format!("`{prefix}header` must be a path or an array of paths"))),
                        };
                        cfg.headers = hs.into_iter().map(|h| base.join(h)).collect();
                    }
                    "per-file-ignores" => {
                        let t = value.as_table().ok_or_else(|| err(path, text, at(), format!("`{prefix}per-file-ignores` must be a table of glob = [rule ids]")))?;
                        for (glob, ids) in t {
                            let ids = strings(ids, &format!("per-file-ignores.\"{glob}\""))?;
                            check_rules(&ids)?;
                            let g = Glob::new(glob)
                                .map_err(|e| err(path, text, locate(text, "per-file-ignores", glob), format!("invalid glob `{glob}`: {e}")))?;
                            cfg.per_file_ignores.push((g.compile_matcher(), ids));
                        }
                    }
                    "scan" if prefix.is_empty() => {}
                    _ if prefix.is_empty() && value.is_table() => {} // other verbs' sections
                    _ => {
                        return Err(err(path, text, at(), format!(
                            "unknown key `{prefix}{key}` (expected one of: targets, select, ignore, per-file-ignores, header)"
                        )))
                    }
                }
            }
        }
        Ok(cfg)
    }

    pub fn rule_enabled(&self, id: &str, path: &Path) -> bool {
        let listed = |v: &[String]| v.iter().any(|s| s == id || s == "all" || s == "*");
        if !self.select.is_empty() && !listed(&self.select) {
            return false;
        }
        if listed(&self.ignore) {
            return false;
        }
        if !self.per_file_ignores.is_empty() {
            let rel = self.relative(path);
            for (m, ids) in &self.per_file_ignores {
                if (m.is_match(&rel) || m.is_match(path)) && listed(ids) {
                    return false;
                }
            }
        }
        true
    }

    fn relative(&self, path: &Path) -> PathBuf {
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        let p = path.strip_prefix("./").unwrap_or(path);
        let b = base.strip_prefix("./").unwrap_or(base);
        if b.as_os_str().is_empty() || b == Path::new(".") {
            return p.to_path_buf();
        }
        p.strip_prefix(b)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| p.to_path_buf())
    }

    pub fn is_header(&self, path: &Path) -> bool {
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            if HEADER_NAMES.contains(&name) {
                return true;
            }
        }
        let norm = |p: &Path| -> PathBuf {
            std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect())
        };
        !self.headers.is_empty() && {
            let np = norm(path);
            self.headers.iter().any(|h| norm(h) == np)
        }
    }
}
