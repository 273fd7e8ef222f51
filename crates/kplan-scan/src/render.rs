//! Renderers over the one diagnostic model: human (rustc-style with source line and caret),
//! JSON (the documented contract), SARIF 2.1.0 and GitHub workflow annotations. All output is
//! deterministic: findings are sorted by the scan.

use crate::diag::{display_path, Finding, LineIndex, Severity};
use crate::inventory::Inventory;
use crate::rule::RuleMeta;
use crate::walk::ScanResult;
use codespan_reporting::diagnostic::{Diagnostic, Label as CsLabel};
use codespan_reporting::term::{
    self,
    termcolor::{Ansi, NoColor},
};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;

/// Where `kplan explain` documents each rule.
pub const DOCS_BASE: &str = "docs/rules";

/// Source lines longer than this (bytes) are clipped to a window around the spans on them.
pub const CLIP_LINE: usize = 240;
/// Context kept on each side of a span in a clipped line (bytes, rounded to characters).
const CLIP_CONTEXT: usize = 60;
/// Longest span shown on a clipped line (bytes); a longer one is cut at this length.
const CLIP_SPAN: usize = 120;
const ELLIPSIS: &str = "…";

/// rustc-style text: one block per finding with the source line and a caret, then a summary.
/// Collected in memory; [`human_to`] streams the same text to a writer.
pub fn human(res: &ScanResult) -> String {
    let mut out = Vec::new();
    let _ = human_to(res, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`human`] written finding by finding to `w`: memory holds one source file at a time, and each
/// finding costs output proportional to its (clipped) lines, whatever the length of the source
/// lines. Files are read again for their text; a file that cannot be read is rendered without
/// source.
pub fn human_to(res: &ScanResult, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    human_styled_to(res, w, false, true)
}

/// [`human_to`] with ANSI colour when `color`, and without the summary line unless `summary`.
pub fn human_styled_to(
    res: &ScanResult,
    w: &mut dyn std::io::Write,
    color: bool,
    summary_line: bool,
) -> std::io::Result<()> {
    let config = term::Config::default();
    // findings are sorted by path: each file is read and indexed once, for its run of findings
    for run in res.findings.chunk_by(|a, b| a.path == b.path) {
        let text = std::fs::read(&run[0].path)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let index = text.as_deref().map(LineIndex::new);
        for f in run {
            let rendered = index.as_ref().and_then(|ix| {
                if color {
                    let mut buf = Ansi::new(Vec::new());
                    render_one(&mut buf, &config, f, ix)
                        .ok()
                        .map(|()| buf.into_inner())
                } else {
                    let mut buf = NoColor::new(Vec::new());
                    render_one(&mut buf, &config, f, ix)
                        .ok()
                        .map(|()| buf.into_inner())
                }
            });
            match rendered {
                Some(b) => w.write_all(&b)?,
                None => plain(w, f)?,
            }
        }
    }
    if summary_line {
        w.write_all(summary(res).as_bytes())?;
    }
    Ok(())
}

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn severity_style(s: Severity) -> &'static str {
    match s {
        Severity::Error => "\x1b[1;31m",
        Severity::Warning => "\x1b[1;33m",
        Severity::Note => "\x1b[1;36m",
    }
}

/// One line a finding, `path:line:col: severity[rule] message`, then the summary line unless
/// `summary_line` is false; ANSI colour when `color`.
pub fn concise_to(
    res: &ScanResult,
    w: &mut dyn std::io::Write,
    color: bool,
    summary_line: bool,
) -> std::io::Result<()> {
    for f in &res.findings {
        let (b, r, sev) = if color {
            (BOLD, RESET, severity_style(f.severity))
        } else {
            ("", "", "")
        };
        // a message is one line: a line break inside one would break the format
        let message = f.message.replace(['\n', '\r'], " ");
        writeln!(
            w,
            "{b}{}:{}:{}:{r} {sev}{}[{}]{r} {message}",
            display_path(&f.path),
            f.line,
            f.column,
            f.severity.as_str(),
            f.rule,
        )?;
    }
    if summary_line {
        w.write_all(summary(res).as_bytes())?;
    }
    Ok(())
}

/// How many findings one rule produced (`kplan scan --statistics`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuleCount {
    pub rule: &'static str,
    pub severity: Severity,
    pub count: usize,
}

/// Findings counted per rule, most frequent first (ties by rule id).
pub fn statistics(res: &ScanResult) -> Vec<RuleCount> {
    let mut by: BTreeMap<&'static str, RuleCount> = BTreeMap::new();
    for f in &res.findings {
        by.entry(f.rule)
            .or_insert(RuleCount {
                rule: f.rule,
                severity: f.severity,
                count: 0,
            })
            .count += 1;
    }
    let mut v: Vec<RuleCount> = by.into_values().collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.rule.cmp(b.rule)));
    v
}

/// [`statistics`] as a table: count, rule, severity, the rule's summary; then the summary line
/// unless `summary_line` is false.
pub fn statistics_human(res: &ScanResult, rules: &[&RuleMeta], summary_line: bool) -> String {
    let stats = statistics(res);
    let cw = stats
        .iter()
        .map(|s| s.count.to_string().len())
        .max()
        .unwrap_or(1);
    let rw = stats.iter().map(|s| s.rule.len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in &stats {
        let about = rules
            .iter()
            .find(|r| r.id == s.rule)
            .map(|r| r.summary)
            .unwrap_or("");
        out.push_str(&format!(
            "{:>cw$}  {:<rw$}  {:<7}  {about}\n",
            s.count,
            s.rule,
            s.severity.as_str()
        ));
    }
    if summary_line {
        out.push_str(&summary(res));
    }
    out
}

/// [`statistics`] as JSON: `[{"rule", "severity", "count"}]`, most frequent first.
pub fn statistics_json(res: &ScanResult) -> String {
    let v: Vec<Value> = statistics(res)
        .iter()
        .map(|s| json!({"rule": s.rule, "severity": s.severity.as_str(), "count": s.count}))
        .collect();
    let mut out = serde_json::to_string_pretty(&Value::Array(v)).unwrap_or_default();
    out.push('\n');
    out
}

fn diagnostic(f: &Finding) -> Diagnostic<()> {
    let sev = match f.severity {
        Severity::Error => codespan_reporting::diagnostic::Severity::Error,
        Severity::Warning => codespan_reporting::diagnostic::Severity::Warning,
        Severity::Note => codespan_reporting::diagnostic::Severity::Note,
    };
    let mut notes = Vec::new();
    if !f.help.is_empty() {
        notes.push(format!("help: {}", f.help));
    }
    if !f.targets.is_empty() {
        notes.push(format!("targets: {}", f.targets.join(", ")));
    }
    notes.push(format!("see `kplan explain {}`", f.rule));
    Diagnostic::new(sev)
        .with_code(f.rule)
        .with_message(&f.message)
        .with_notes(notes)
}

fn render_one(
    out: &mut dyn term::termcolor::WriteColor,
    config: &term::Config,
    f: &Finding,
    index: &LineIndex,
) -> Result<(), codespan_reporting::files::Error> {
    let len = index.text().len();
    // every span is kept to its first line: the primary location and each label
    let one_line = |s: usize, e: usize| {
        let s = s.min(len);
        let l = index.line_of(s);
        (l, s, e.min(len).max(s).min(index.line_end(l).max(s)))
    };
    let mut spans = vec![one_line(f.start, f.end)];
    spans.extend(f.labels.iter().map(|l| one_line(l.start, l.end)));
    let ex = Excerpt::new(display_path(&f.path), index, &spans);
    let mut labels = Vec::new();
    for (k, &(l, s, e)) in spans.iter().enumerate() {
        let r = ex.map(l, s, e);
        labels.push(if k == 0 {
            CsLabel::primary((), r)
        } else {
            CsLabel::secondary((), r).with_message(&f.labels[k - 1].message)
        });
    }
    let d = diagnostic(f).with_labels(labels);
    term::emit(out, config, &ex, &d)
}

/// The few source lines one finding shows, each clipped to a window around its spans, as a
/// small file of its own whose line and column numbers are those of the real file.
struct Excerpt<'i, 't> {
    name: String,
    index: &'i LineIndex<'t>,
    source: String,
    /// Per excerpt line: start in `source`, real 0-based line (None: a placeholder for a gap),
    /// real byte offset where the kept text starts, and the length of the leading ellipsis.
    lines: Vec<ExLine>,
}

struct ExLine {
    start: usize,
    real: Option<usize>,
    real_from: usize,
    real_to: usize,
    prefix: usize,
}

fn floor_boundary(t: &str, mut i: usize) -> usize {
    i = i.min(t.len());
    while i > 0 && !t.is_char_boundary(i) {
        i -= 1;
    }
    i
}
fn ceil_boundary(t: &str, mut i: usize) -> usize {
    i = i.min(t.len());
    while i < t.len() && !t.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl<'i, 't> Excerpt<'i, 't> {
    fn new(name: String, index: &'i LineIndex<'t>, spans: &[(usize, usize, usize)]) -> Self {
        let mut real: Vec<usize> = spans.iter().map(|s| s.0).collect();
        real.sort_unstable();
        real.dedup();
        let mut ex = Excerpt {
            name,
            index,
            source: String::new(),
            lines: Vec::new(),
        };
        let mut prev: Option<usize> = None;
        for &r in &real {
            if let Some(p) = prev {
                match r - p {
                    1 => {}
                    2 => ex.push_line(p + 1, &[]),
                    _ => {
                        // two placeholders: the renderer shows a break between the lines
                        ex.push_placeholder();
                        ex.push_placeholder();
                    }
                }
            }
            let on: Vec<(usize, usize)> = spans
                .iter()
                .filter(|s| s.0 == r)
                .map(|s| (s.1, s.2))
                .collect();
            ex.push_line(r, &on);
            prev = Some(r);
        }
        ex
    }

    fn push_placeholder(&mut self) {
        self.lines.push(ExLine {
            start: self.source.len(),
            real: None,
            real_from: 0,
            real_to: 0,
            prefix: 0,
        });
        self.source.push('\n');
    }

    fn push_line(&mut self, r: usize, spans: &[(usize, usize)]) {
        let text = self.index.text();
        // the line's content: no line ending, no byte-order mark
        let le = self.index.line_end(r);
        let ls = le - self.index.line_text(r).len();
        let (from, to) = if le - ls <= CLIP_LINE {
            (ls, le)
        } else if spans.is_empty() {
            (ls, ceil_boundary(text, ls + CLIP_LINE).min(le))
        } else {
            let lo = spans.iter().map(|s| s.0).min().unwrap_or(ls);
            let hi = spans
                .iter()
                .map(|s| s.1)
                .max()
                .unwrap_or(lo)
                .min(lo + CLIP_SPAN);
            (
                floor_boundary(text, lo.saturating_sub(CLIP_CONTEXT).max(ls)),
                ceil_boundary(text, hi + CLIP_CONTEXT).min(le),
            )
        };
        let start = self.source.len();
        let prefix = if from > ls { ELLIPSIS.len() } else { 0 };
        if prefix > 0 {
            self.source.push_str(ELLIPSIS);
        }
        self.source.push_str(text.get(from..to).unwrap_or(""));
        if to < le {
            self.source.push_str(ELLIPSIS);
        }
        self.source.push('\n');
        self.lines.push(ExLine {
            start,
            real: Some(r),
            real_from: from,
            real_to: to,
            prefix,
        });
    }

    /// Excerpt range of the real span `s..e` on real line `l`.
    fn map(&self, l: usize, s: usize, e: usize) -> std::ops::Range<usize> {
        match self.lines.iter().find(|x| x.real == Some(l)) {
            Some(x) => {
                let base = x.start + x.prefix;
                let cs = s.clamp(x.real_from, x.real_to) - x.real_from;
                let ce = e.clamp(x.real_from, x.real_to) - x.real_from;
                base + cs..base + ce.max(cs)
            }
            None => 0..0,
        }
    }

    fn ex_line(&self, byte: usize) -> usize {
        self.lines
            .partition_point(|x| x.start <= byte)
            .saturating_sub(1)
    }
}

impl<'a> codespan_reporting::files::Files<'a> for Excerpt<'_, '_> {
    type FileId = ();
    type Name = &'a str;
    type Source = &'a str;
    fn name(&'a self, _: ()) -> Result<&'a str, codespan_reporting::files::Error> {
        Ok(&self.name)
    }
    fn source(&'a self, _: ()) -> Result<&'a str, codespan_reporting::files::Error> {
        Ok(&self.source)
    }
    fn line_index(&'a self, _: (), byte: usize) -> Result<usize, codespan_reporting::files::Error> {
        Ok(self.ex_line(byte))
    }
    fn line_number(&'a self, _: (), li: usize) -> Result<usize, codespan_reporting::files::Error> {
        Ok(self.lines.get(li).and_then(|x| x.real).map_or(0, |r| r + 1))
    }
    fn column_number(
        &'a self,
        _: (),
        li: usize,
        byte: usize,
    ) -> Result<usize, codespan_reporting::files::Error> {
        Ok(match self.lines.get(li) {
            Some(x) => match x.real {
                Some(r) => {
                    let real = x.real_from + byte.saturating_sub(x.start + x.prefix);
                    self.index.column_in(r, real.min(x.real_to))
                }
                None => 1,
            },
            None => 1,
        })
    }
    fn line_range(
        &'a self,
        _: (),
        li: usize,
    ) -> Result<std::ops::Range<usize>, codespan_reporting::files::Error> {
        let s = self.lines.get(li).map_or(self.source.len(), |x| x.start);
        let e = self
            .lines
            .get(li + 1)
            .map_or(self.source.len(), |x| x.start);
        Ok(s..e)
    }
}

fn plain(out: &mut dyn Write, f: &Finding) -> std::io::Result<()> {
    writeln!(
        out,
        "{}[{}]: {}\n  --> {}:{}:{}\n",
        f.severity.as_str(),
        f.rule,
        f.message,
        display_path(&f.path),
        f.line,
        f.column
    )
}

/// Last line of the human output.
pub fn summary(res: &ScanResult) -> String {
    let count = |s: Severity| res.findings.iter().filter(|f| f.severity == s).count();
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("{n} {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    format!(
        "{}, {}, {} in {} ({} lines)\n",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        plural(count(Severity::Note), "note"),
        plural(res.files_scanned, "file"),
        res.lines_scanned
    )
}

/// One finding as the JSON report writes it: keys in the order `serde_json` sorts them, so the
/// streamed text is the same as that of a sorted JSON object.
#[derive(Serialize)]
struct FindingJson<'a> {
    column: u32,
    end_column: u32,
    end_line: u32,
    help: &'a str,
    line: u32,
    message: &'a str,
    path: String,
    rule: &'a str,
    severity: &'static str,
    targets: &'a [String],
}

impl<'a> From<&'a Finding> for FindingJson<'a> {
    fn from(f: &'a Finding) -> Self {
        FindingJson {
            column: f.column,
            end_column: f.end_column,
            end_line: f.end_line,
            help: &f.help,
            line: f.line,
            message: &f.message,
            path: display_path(&f.path),
            rule: f.rule,
            severity: f.severity.as_str(),
            targets: &f.targets,
        }
    }
}

/// The findings array, serialised one finding at a time.
struct FindingsJson<'a>(&'a [Finding]);

impl Serialize for FindingsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(FindingJson::from))
    }
}

#[derive(Serialize)]
struct ReportJson<'a> {
    files_scanned: usize,
    findings: FindingsJson<'a>,
    lines_scanned: usize,
}

/// Pretty JSON of `v` and a final newline, streamed to `w` (buffered here: serde writes in
/// small pieces).
fn pretty_to(w: &mut dyn Write, v: &impl Serialize) -> std::io::Result<()> {
    let mut b = std::io::BufWriter::with_capacity(1 << 16, w);
    serde_json::to_writer_pretty(&mut b, v)?;
    b.write_all(b"\n")?;
    b.flush()
}

/// `{"files_scanned", "lines_scanned", "findings": [{rule, severity, path, line, column,
/// end_line, end_column, message, help, targets}]}` (keys written sorted). Collected in memory;
/// [`json_to`] streams the same text to a writer.
pub fn json(res: &ScanResult) -> String {
    let mut out = Vec::new();
    let _ = json_to(res, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`json`] written to `w` finding by finding: no copy of the report is held in memory.
pub fn json_to(res: &ScanResult, w: &mut dyn Write) -> std::io::Result<()> {
    pretty_to(
        w,
        &ReportJson {
            files_scanned: res.files_scanned,
            findings: FindingsJson(&res.findings),
            lines_scanned: res.lines_scanned,
        },
    )
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn sarif_result(f: &Finding, rule_index: &BTreeMap<&str, usize>) -> Value {
    let region = json!({"startLine": f.line, "startColumn": f.column, "endLine": f.end_line, "endColumn": f.end_column.max(if f.end_line == f.line { f.column } else { 1 })});
    let mut r = json!({
        "ruleId": f.rule,
        "level": sarif_level(f.severity),
        "message": {"text": if f.help.is_empty() { f.message.clone() } else { format!("{} (help: {})", f.message, f.help) }},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(&display_path(&f.path))}, "region": region}}],
        "properties": {"targets": f.targets},
    });
    if let Some(i) = rule_index.get(f.rule) {
        r["ruleIndex"] = json!(i);
    }
    if !f.labels.is_empty() {
        r["relatedLocations"] = Value::Array(
            f.labels
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    json!({"id": i, "message": {"text": l.message}, "physicalLocation": {"artifactLocation": {"uri": uri(&display_path(&f.path))},
                      "region": {"startLine": l.line, "startColumn": l.column, "endLine": l.end_line, "endColumn": l.end_column.max(1)}}})
                })
                .collect(),
        );
    }
    r
}

/// The results array, serialised one result at a time.
struct SarifResults<'a> {
    findings: &'a [Finding],
    rule_index: &'a BTreeMap<&'a str, usize>,
}

impl Serialize for SarifResults<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.findings
                .iter()
                .map(|f| sarif_result(f, self.rule_index)),
        )
    }
}

#[derive(Serialize)]
struct SarifRun<'a> {
    #[serde(rename = "columnKind")]
    column_kind: &'static str,
    results: SarifResults<'a>,
    tool: Value,
}

#[derive(Serialize)]
struct SarifLog<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    runs: [SarifRun<'a>; 1],
    version: &'static str,
}

/// SARIF 2.1.0 with the registry's rules as `tool.driver.rules`. Collected in memory;
/// [`sarif_to`] streams the same text to a writer.
pub fn sarif(res: &ScanResult, rules: &[&RuleMeta], version: &str) -> String {
    let mut out = Vec::new();
    let _ = sarif_to(res, rules, version, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`sarif`] written to `w` result by result: no copy of the report is held in memory.
pub fn sarif_to(
    res: &ScanResult,
    rules: &[&RuleMeta],
    version: &str,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let rule_index: BTreeMap<&str, usize> =
        rules.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let rules_json: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": pascal(r.id),
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.what.replace('\n', " ")},
                "help": {"text": format!("{}\n\nWhy: {}", r.what.replace('\n', " "), r.why.replace('\n', " ")), "markdown": r.doc_markdown()},
                "helpUri": format!("https://kplan.invalid/{DOCS_BASE}/{}.md", r.id),
                "defaultConfiguration": {"level": sarif_level(r.severity)},
                "properties": {"tags": ["portability", r.lang.as_str()], "scope": r.scope_text()},
            })
        })
        .collect();
    let log = SarifLog {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        runs: [SarifRun {
            column_kind: "unicodeCodePoints",
            results: SarifResults {
                findings: &res.findings,
                rule_index: &rule_index,
            },
            tool: json!({"driver": {"name": "kplan", "semanticVersion": version, "version": version, "rules": rules_json}}),
        }],
        version: "2.1.0",
    };
    pretty_to(w, &log)
}

fn pascal(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// Relative URI for a path: percent-encodes what a URI reference may not hold.
fn uri(p: &str) -> String {
    let mut s = String::with_capacity(p.len());
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn gh_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}
fn gh_escape_prop(s: &str) -> String {
    gh_escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands: `::error file=..,line=..,col=..,title=..::message`.
pub fn github(res: &ScanResult) -> String {
    let mut out = Vec::new();
    let _ = github_to(res, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`github`] written to `w` one command at a time.
pub fn github_to(res: &ScanResult, w: &mut dyn Write) -> std::io::Result<()> {
    for f in &res.findings {
        let cmd = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut msg = f.message.clone();
        if !f.help.is_empty() {
            msg.push_str(&format!("\nhelp: {}", f.help));
        }
        if !f.targets.is_empty() {
            msg.push_str(&format!("\ntargets: {}", f.targets.join(", ")));
        }
        writeln!(
            w,
            "::{cmd} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            gh_escape_prop(&display_path(&f.path)),
            f.line,
            f.column,
            f.end_line,
            f.end_column,
            gh_escape_prop(&format!("kplan {}", f.rule)),
            gh_escape_data(&msg)
        )?;
    }
    Ok(())
}

/// Inventory as a human table.
pub fn inventory_human(inv: &Inventory) -> String {
    let mut s = format!("NVIDIA-specific features in {} files\n", inv.files_scanned);
    if inv.items.is_empty() {
        s.push_str("  none found\n");
    }
    for it in &inv.items {
        s.push_str(&format!(
            "\n{} ({} use{}, rule {})\n",
            it.feature,
            it.count,
            if it.count == 1 { "" } else { "s" },
            it.rule
        ));
        for l in &it.locations {
            s.push_str(&format!(
                "  {}:{}:{}\n",
                display_path(&l.path),
                l.line,
                l.column
            ));
        }
    }
    s
}

pub fn inventory_json(inv: &Inventory) -> String {
    let mut out = Vec::new();
    let _ = inventory_json_to(inv, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`inventory_json`] streamed to `w`.
pub fn inventory_json_to(inv: &Inventory, w: &mut dyn Write) -> std::io::Result<()> {
    pretty_to(w, inv)
}
