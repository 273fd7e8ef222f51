//! `kplan.toml`: scan configuration (`targets`, `select`, `ignore`, `per-file-ignores`,
//! `header`, `hip-flags`), at the top level or under `[scan]`. Errors carry file:line:column.

use crate::error::ScanError;
use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

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

/// A target named in `kplan.toml`, with its 1-based line and column: the entry as written,
/// before the knowledge base resolves it (an unknown name is reported at this position), so
/// not a target in scope ([`crate::ScanCtx`] holds those, as `kplan_kb::Resolved`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigTarget {
    pub name: String,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where the configuration was read from (None: defaults).
    pub path: Option<PathBuf>,
    pub targets: Option<Vec<String>>,
    /// Where each of `targets` is written (for errors about a target name).
    pub target_locations: Vec<ConfigTarget>,
    /// Rule ids to run (empty: all).
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    pub per_file_ignores: Vec<(GlobMatcher, Vec<String>)>,
    /// Portability headers, relative to the configuration's directory.
    pub headers: Vec<PathBuf>,
    /// `hip-flags`: flags the project compiles its HIP code with. The scanner reads
    /// `-mwavefrontsize64` / `-mno-wavefrontsize64` (RDNA built for 64-lane wavefronts).
    pub hip_flags: Vec<String>,
}

fn err(path: &Path, text: &str, offset: usize, message: String) -> ScanError {
    let (line, column) = kplan_kb::text::line_col(text, offset);
    ScanError::Config {
        path: path.to_owned(),
        line,
        column,
        message,
    }
}

/// The keys `kplan.toml` holds for the scanner, at the top level or under `[scan]`. Read by
/// serde with the span of every value, so that each error names its line and column.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct RawScan {
    targets: Option<Spanned<Vec<Spanned<String>>>>,
    select: Option<Vec<Spanned<String>>>,
    ignore: Option<Vec<Spanned<String>>>,
    per_file_ignores: Option<BTreeMap<Spanned<String>, Vec<Spanned<String>>>>,
    header: Option<Spanned<toml::Value>>,
    hip_flags: Option<Vec<Spanned<String>>>,
    /// `[scan]` (read at the top level only; a nested one is an unknown key).
    scan: Option<Box<RawScan>>,
}

const KEYS: &[&str] = &[
    "targets",
    "select",
    "ignore",
    "per-file-ignores",
    "header",
    "hip-flags",
];

/// Every key of a table with its span, for the unknown-key check.
type Keys = BTreeMap<Spanned<String>, toml::Value>;

fn unknown_key(path: &Path, text: &str, k: &Spanned<String>, prefix: &str) -> ScanError {
    err(
        path,
        text,
        k.span().start,
        format!(
            "unknown key `{prefix}{}` (expected one of: {})",
            k.get_ref(),
            KEYS.join(", ")
        ),
    )
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
        let toml_err = |e: toml::de::Error| {
            let off = e.span().map(|s| s.start).unwrap_or(0);
            err(
                path,
                text,
                off,
                format!("invalid configuration: {}", e.message()),
            )
        };
        // unknown keys: at the top level only tables (other verbs' sections) may be unknown
        let keys: Keys = toml::from_str(text).map_err(toml_err)?;
        for (k, v) in &keys {
            if k.get_ref() != "scan" && !KEYS.contains(&k.get_ref().as_str()) && !v.is_table() {
                return Err(unknown_key(path, text, k, ""));
            }
        }
        if let Some((k, v)) = keys.iter().find(|(k, _)| k.get_ref() == "scan") {
            match v.as_table() {
                None => {
                    return Err(err(
                        path,
                        text,
                        k.span().start,
                        "`scan` must be a table".into(),
                    ))
                }
                Some(_) => {
                    #[derive(Deserialize)]
                    struct ScanKeys {
                        scan: Keys,
                    }
                    let sk: ScanKeys = toml::from_str(text).map_err(toml_err)?;
                    if let Some(k) = sk
                        .scan
                        .keys()
                        .find(|k| !KEYS.contains(&k.get_ref().as_str()))
                    {
                        return Err(unknown_key(path, text, k, "scan."));
                    }
                }
            }
        }
        let mut top: RawScan = toml::from_str(text).map_err(toml_err)?;
        let inner = top.scan.take();
        let mut raws = vec![(top, "")];
        if let Some(inner) = inner {
            raws.push((*inner, "scan."));
        }
        let mut cfg = Config {
            path: Some(path.to_owned()),
            ..Config::default()
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for (raw, prefix) in raws {
            let check_rules =
                |ids: &[Spanned<String>], key: &str| -> Result<Vec<String>, ScanError> {
                    for id in ids {
                        let s = id.get_ref();
                        if s == "all" || s == "*" {
                            continue;
                        }
                        if let Some(sugg) = known_rule(s) {
                            let hint = sugg
                                .map(|x| format!(" (did you mean `{x}`?)"))
                                .unwrap_or_default();
                            return Err(err(
                                path,
                                text,
                                id.span().start,
                                format!("unknown rule `{s}` in `{prefix}{key}`{hint}"),
                            ));
                        }
                    }
                    Ok(ids.iter().map(|i| i.get_ref().clone()).collect())
                };
            if let Some(t) = raw.targets {
                if t.get_ref().is_empty() {
                    return Err(err(
                        path,
                        text,
                        t.span().start,
                        format!("`{prefix}targets` is empty: name at least one target (`kplan targets` lists them), or remove the key for the defaults"),
                    ));
                }
                let mut names = Vec::new();
                for n in t.into_inner() {
                    let (line, column) = kplan_kb::text::line_col(text, n.span().start);
                    names.push(ConfigTarget {
                        name: n.into_inner(),
                        line,
                        column,
                    });
                }
                cfg.targets = Some(names.iter().map(|n| n.name.clone()).collect());
                cfg.target_locations = names;
            }
            if let Some(v) = raw.select {
                cfg.select = check_rules(&v, "select")?;
            }
            if let Some(v) = raw.ignore {
                cfg.ignore = check_rules(&v, "ignore")?;
            }
            if let Some(h) = raw.header {
                let at = h.span().start;
                let bad = || {
                    err(
                        path,
                        text,
                        at,
                        format!("`{prefix}header` must be a path or an array of paths"),
                    )
                };
                let hs: Vec<String> = match h.into_inner() {
                    toml::Value::String(s) => vec![s],
                    toml::Value::Array(a) => a
                        .into_iter()
                        .map(|x| match x {
                            toml::Value::String(s) => Ok(s),
                            _ => Err(bad()),
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(bad()),
                };
                cfg.headers = hs.into_iter().map(|h| base.join(h)).collect();
            }
            if let Some(f) = raw.hip_flags {
                cfg.hip_flags = f.into_iter().map(Spanned::into_inner).collect();
            }
            if let Some(t) = raw.per_file_ignores {
                for (glob, ids) in t {
                    let ids =
                        check_rules(&ids, &format!("per-file-ignores.\"{}\"", glob.get_ref()))?;
                    let g = Glob::new(glob.get_ref()).map_err(|e| {
                        err(
                            path,
                            text,
                            glob.span().start,
                            format!("invalid glob `{}`: {e}", glob.get_ref()),
                        )
                    })?;
                    cfg.per_file_ignores.push((g.compile_matcher(), ids));
                }
            }
        }
        Ok(cfg)
    }

    /// Applies the command line's rule selection the way ruff does: a non-empty `select`
    /// replaces the configuration's `select` and `ignore` (only the command line's `ignore` then
    /// applies); without one, `ignore` is added to the configuration's. `per-file-ignores` always
    /// apply. Ids are checked by the caller.
    pub fn apply_rule_selection(&mut self, select: &[String], ignore: &[String]) {
        if !select.is_empty() {
            self.select = select.to_vec();
            self.ignore = ignore.to_vec();
        } else {
            self.ignore.extend(ignore.iter().cloned());
        }
    }

    /// Whether the HIP flags build wave32-capable AMD targets (RDNA) for 64-lane wavefronts:
    /// the last of `-mwavefrontsize64` / `-mno-wavefrontsize64` decides, as in clang.
    pub fn forces_wave64(&self) -> bool {
        self.hip_flags
            .iter()
            .rev()
            .find(|f| matches!(f.as_str(), "-mwavefrontsize64" | "-mno-wavefrontsize64"))
            .is_some_and(|f| f == "-mwavefrontsize64")
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
        // a configuration found up the tree has an absolute path: compare absolute paths
        let abs;
        let path = if base.is_absolute() && path.is_relative() {
            abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            &abs
        } else {
            path
        };
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
