//! The one diagnostic model every renderer reads: byte spans inside, line/column for output.

pub use kplan_kb::text::LineIndex;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use strum::{AsRefStr, EnumIter, EnumString, IntoStaticStr};

/// How bad a finding is. Ordered: `Note < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(EnumIter, AsRefStr, IntoStaticStr, strum::Display, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<Severity> {
        s.parse().ok()
    }
}

/// A secondary span with its own label ("ballot stored here").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    #[serde(skip)]
    pub start: usize,
    #[serde(skip)]
    pub end: usize,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub message: String,
}

/// One hazard found in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Rule id, kebab-case (`warp-size-literal`).
    pub rule: &'static str,
    pub severity: Severity,
    #[serde(serialize_with = "ser_path")]
    pub path: PathBuf,
    /// Byte span of the primary location in the file.
    #[serde(skip)]
    pub start: usize,
    #[serde(skip)]
    pub end: usize,
    /// 1-based; columns count Unicode scalar values from the line start.
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    /// Lowercase first letter, no trailing period.
    pub message: String,
    pub help: String,
    /// Targets in scope on which the hazard bites.
    pub targets: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<Label>,
}

fn ser_path<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&display_path(p))
}

/// Path as printed in every output format: forward slashes, no leading `./`.
pub fn display_path(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    match s.strip_prefix("./") {
        Some(r) if !r.is_empty() => r.to_string(),
        _ => s,
    }
}

impl Finding {
    /// A finding at byte span `start..end` of the text `lines` indexes.
    pub fn new(
        rule: &'static str,
        severity: Severity,
        path: &Path,
        lines: &LineIndex,
        start: usize,
        end: usize,
        message: impl Into<String>,
    ) -> Finding {
        let (line, column) = lines.line_col_u32(start);
        let (end_line, end_column) = lines.line_col_u32(end.max(start));
        Finding {
            rule,
            severity,
            path: path.to_owned(),
            start,
            end: end.max(start),
            line,
            column,
            end_line,
            end_column,
            message: message.into(),
            help: String::new(),
            targets: Vec::new(),
            labels: Vec::new(),
        }
    }
    /// Same as [`Finding::new`], building a line index on the fly (fine for a few findings).
    pub fn from_span(
        rule: &'static str,
        severity: Severity,
        path: &Path,
        text: &str,
        start: usize,
        end: usize,
        message: impl Into<String>,
    ) -> Finding {
        let idx = LineIndex::new(text);
        Finding::new(rule, severity, path, &idx, start, end, message)
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Finding {
        self.help = help.into();
        self
    }
    pub fn with_targets(mut self, targets: Vec<String>) -> Finding {
        self.targets = targets;
        self
    }
    pub fn with_label(
        mut self,
        lines: &LineIndex,
        start: usize,
        end: usize,
        message: impl Into<String>,
    ) -> Finding {
        let (line, column) = lines.line_col_u32(start);
        let (end_line, end_column) = lines.line_col_u32(end.max(start));
        self.labels.push(Label {
            start,
            end: end.max(start),
            line,
            column,
            end_line,
            end_column,
            message: message.into(),
        });
        self
    }
    /// Sort key: path, position, rule, message.
    pub fn sort_key(&self) -> (&Path, u32, u32, &str, &str) {
        (&self.path, self.line, self.column, self.rule, &self.message)
    }
}
