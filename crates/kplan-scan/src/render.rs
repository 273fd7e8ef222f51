//! Renderers over the one diagnostic model: human (rustc-style with source line and caret),
//! JSON (the documented contract), SARIF 2.1.0 and GitHub workflow annotations. All output is
//! deterministic: findings are sorted by the scan.

use crate::diag::{display_path, Finding, Severity};
use crate::inventory::Inventory;
use crate::rule::RuleMeta;
use crate::walk::ScanResult;
use codespan_reporting::diagnostic::{Diagnostic, Label as CsLabel};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::NoColor};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Where `kplan explain` documents each rule.
pub const DOCS_BASE: &str = "docs/rules";

/// rustc-style text: one block per finding with the source line and a caret, then a summary.
/// Files are read again for their text; a file that cannot be read is rendered without source.
pub fn human(res: &ScanResult) -> String {
    let mut files = SimpleFiles::new();
    let mut ids: BTreeMap<std::path::PathBuf, Option<usize>> = BTreeMap::new();
    let mut out = NoColor::new(Vec::new());
    let config = term::Config::default();
    for f in &res.findings {
        let id = *ids.entry(f.path.clone()).or_insert_with(|| {
            std::fs::read(&f.path).ok().map(|b| {
                files.add(
                    display_path(&f.path),
                    String::from_utf8_lossy(&b).into_owned(),
                )
            })
        });
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
        let mut d = Diagnostic::new(sev)
            .with_code(f.rule)
            .with_message(&f.message)
            .with_notes(notes);
        match id {
            Some(id) => {
                let len = files.get(id).map(|s| s.source().len()).unwrap_or(0);
                let s = f.start.min(len);
                let e = f.end.min(len).max(s);
                // keep the primary span on one line
                let e = files
                    .get(id)
                    .ok()
                    .and_then(|sf| {
                        sf.source()
                            .get(s..e)
                            .and_then(|t| t.find('\n'))
                            .map(|p| s + p)
                    })
                    .unwrap_or(e);
                let mut labels = vec![CsLabel::primary(id, s..e)];
                for l in &f.labels {
                    let ls = l.start.min(len);
                    let le = l.end.min(len).max(ls);
                    labels.push(CsLabel::secondary(id, ls..le).with_message(&l.message));
                }
                d = d.with_labels(labels);
                if term::emit(&mut out, &config, &files, &d).is_err() {
                    plain(&mut out, f);
                }
            }
            None => plain(&mut out, f),
        }
    }
    let mut s = String::from_utf8(out.into_inner()).unwrap_or_default();
    s.push_str(&summary(res));
    s
}

fn plain(out: &mut NoColor<Vec<u8>>, f: &Finding) {
    use std::io::Write;
    let _ = writeln!(
        out,
        "{}[{}]: {}\n  --> {}:{}:{}\n",
        f.severity.as_str(),
        f.rule,
        f.message,
        display_path(&f.path),
        f.line,
        f.column
    );
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

fn finding_json(f: &Finding) -> Value {
    json!({
        "rule": f.rule,
        "severity": f.severity.as_str(),
        "path": display_path(&f.path),
        "line": f.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "message": f.message,
        "help": f.help,
        "targets": f.targets,
    })
}

/// `{"files_scanned", "lines_scanned", "findings": [{rule, severity, path, line, column,
/// end_line, end_column, message, help, targets}]}`.
pub fn json(res: &ScanResult) -> String {
    let v = json!({
        "files_scanned": res.files_scanned,
        "lines_scanned": res.lines_scanned,
        "findings": res.findings.iter().map(finding_json).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// SARIF 2.1.0 with the registry's rules as `tool.driver.rules`.
pub fn sarif(res: &ScanResult, rules: &[&RuleMeta], version: &str) -> String {
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
    let results: Vec<Value> = res
        .findings
        .iter()
        .map(|f| {
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
        })
        .collect();
    let v = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kplan", "semanticVersion": version, "version": version, "rules": rules_json}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
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
    let mut s = String::new();
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
        s.push_str(&format!(
            "::{cmd} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            gh_escape_prop(&display_path(&f.path)),
            f.line,
            f.column,
            f.end_line,
            f.end_column,
            gh_escape_prop(&format!("kplan {}", f.rule)),
            gh_escape_data(&msg)
        ));
    }
    s
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
    let mut s = serde_json::to_string_pretty(inv).unwrap_or_default();
    s.push('\n');
    s
}
