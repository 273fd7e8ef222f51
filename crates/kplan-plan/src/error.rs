//! Spec errors: a byte span into the spec text, a message that says what was expected, and an
//! optional "did you mean". Rendered as `FILE:LINE:COL: error: MESSAGE` followed by the source
//! line and a caret (codespan-reporting).

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::NoColor, Config, DisplayStyle};

use std::ops::Range;

/// A problem with a kernel spec, located in its text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SpecError {
    /// Byte range in the spec text; `None` when the problem concerns the whole file.
    pub span: Option<Range<usize>>,
    /// What is wrong and what was expected.
    pub message: String,
    /// A close known name, for typos.
    pub suggestion: Option<String>,
}

impl SpecError {
    pub(crate) fn at(span: Range<usize>, message: impl Into<String>) -> SpecError {
        SpecError {
            span: Some(span),
            message: message.into(),
            suggestion: None,
        }
    }
    pub(crate) fn suggest(mut self, s: Option<String>) -> SpecError {
        self.suggestion = s;
        self
    }

    /// 1-based line and column of the start of the span in `text`.
    pub fn line_col(&self, text: &str) -> (usize, usize) {
        kplan_kb::line_col(text, self.span.as_ref().map(|s| s.start).unwrap_or(0))
    }

    /// `FILE:LINE:COL: error: MESSAGE`, then the source line with a caret under the span and the
    /// suggestion as help, without colour.
    pub fn render(&self, file_name: &str, text: &str) -> String {
        let file = SimpleFile::new(file_name, text);
        let message = match &self.suggestion {
            Some(s) => format!("{} (did you mean `{s}`?)", self.message),
            None => self.message.clone(),
        };
        let span = self.span.clone().unwrap_or(0..0);
        let floor = |mut i: usize| {
            i = i.min(text.len());
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let (start, end) = (floor(span.start), floor(span.end));
        let span = start..end.max(start);
        let mut out = String::new();
        let diag = Diagnostic::error()
            .with_message(&message)
            .with_labels(vec![Label::primary((), span.clone())]);
        let config = Config {
            display_style: DisplayStyle::Short,
            ..Config::default()
        };
        let mut buf = NoColor::new(Vec::new());
        if term::emit(&mut buf, &config, &file, &diag).is_ok() {
            out.push_str(&String::from_utf8_lossy(&buf.into_inner()));
        }
        if self.span.is_some() {
            out.push_str(&snippet(text, span, self.suggestion.as_deref()));
        }
        if out.is_empty() {
            let (l, c) = self.line_col(text);
            out = format!("{file_name}:{l}:{c}: error: {message}\n");
        }
        out
    }
}

/// The source line holding `span`, with carets under it.
fn snippet(text: &str, span: Range<usize>, suggestion: Option<&str>) -> String {
    let line_start = text[..span.start].rfind('\n').map(|p| p + 1).unwrap_or(0);
    let line_end = text[span.start..]
        .find('\n')
        .map(|p| span.start + p)
        .unwrap_or(text.len());
    let line = &text[line_start..line_end];
    let (line_no, col) = kplan_kb::line_col(text, span.start);
    let col = col - 1;
    let width = text[span.start..span.end.min(line_end).max(span.start)]
        .chars()
        .count()
        .max(1);
    let gutter = line_no.to_string().len();
    let pad = " ".repeat(gutter);
    let mut s = format!(
        "{pad} |\n{line_no} | {line}\n{pad} | {}{}",
        " ".repeat(col),
        "^".repeat(width)
    );
    if let Some(sug) = suggestion {
        s.push_str(&format!(" help: did you mean `{sug}`?"));
    }
    s.push('\n');
    s
}
