//! Setting aside what kplan cannot read. A spec is parsed strictly; when that fails on the value
//! of a key the plan can do without (a value of another shape: a list, a table, text of several
//! words; or a problem size key kplan does not model), the key-value pair (or the one array element) is blanked out
//! with spaces, so every other byte keeps its line and column, and the spec is parsed again. Each
//! pair set aside becomes a spec note with the reason the strict parse gave. Fatal whatever the
//! key: TOML syntax errors, misspelt or misplaced key names, one word kplan does not know (a
//! misspelt or unknown name, answered with the names it knows), and the keys the plan is made from
//! (`[kernel] op`, the `[backends]` target list unless other targets remain) and dtypes (a
//! dtype kplan does not know would change every byte count); a spec whose required key was set
//! aside reports the error that set it aside.

use super::{Spec, SpecError, SpecNote};
use std::ops::Range;

/// Keys (dotted paths) whose value the plan cannot do without.
const ESSENTIAL: &[&str] = &[
    "kernel.op",
    "backends.targets",
    "backends.devices",
    "backends.target",
];

/// At most this many pairs are set aside before the spec is rejected.
const MAX_PEEL: usize = 24;

pub(super) fn parse_lenient(
    text: &str,
    strict: impl Fn(&str) -> Result<Spec, SpecError>,
) -> Result<Spec, SpecError> {
    let first = match strict(text) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let mut t = text.to_string();
    let mut set_aside: Vec<(Range<usize>, String, SpecError)> = Vec::new();
    let mut err = first.clone();
    for _ in 0..MAX_PEEL {
        let Some((range, path, inline)) = peelable(&t, &err) else {
            break;
        };
        blank(&mut t, range.clone(), inline);
        set_aside.push((range, path, err.clone()));
        match strict(&t) {
            Ok(mut spec) => {
                for (range, path, e) in set_aside {
                    let msg = match &e.suggestion {
                        Some(s) => format!("{} (did you mean `{s}`?)", e.message),
                        None => e.message.clone(),
                    };
                    spec.notes.push(SpecNote::at(
                        range,
                        format!("`{path}` set aside, the plan is made without it: {msg}"),
                    ));
                }
                return Ok(spec);
            }
            Err(e) => err = e,
        }
    }
    // a required key that was set aside: the reason it was is the error
    if err.message.starts_with("missing field") {
        if let Some((_, _, e)) = set_aside.iter().find(|(_, p, _)| {
            let leaf = p.rsplit('.').next().unwrap_or(p);
            let leaf = leaf.split('[').next().unwrap_or(leaf);
            err.message.contains(&format!("`{leaf}`"))
        }) {
            return Err(e.clone());
        }
    }
    if set_aside.is_empty() {
        return Err(first);
    }
    // the key that failed had elements set aside (every target unknown): the first reason
    if let Some(path) = key_path(&t, &err) {
        if let Some((_, _, e)) = set_aside
            .iter()
            .find(|(_, p, _)| p.split('[').next() == Some(path.as_str()))
        {
            return Err(e.clone());
        }
    }
    Err(err)
}

/// The byte range to blank for error `e` and the dotted path of its key, when the error is on
/// a value the plan can do without.
fn peelable(text: &str, e: &SpecError) -> Option<(Range<usize>, String, bool)> {
    let span = e.span.clone()?;
    let m = e.message.as_str();
    if m.starts_with("unknown field")
        || m.starts_with("unknown table")
        || m.contains("belongs in [")
        || m.starts_with("missing field")
        || m.starts_with("duplicate key")
        || m.starts_with("invalid")
            && !m.starts_with("invalid type")
            && !m.starts_with("invalid value")
    {
        return None;
    }
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut best: Option<(Range<usize>, String, bool)> = None;
    walk_table(doc.as_table(), "", span.start, &mut best);
    let (range, path, inline) = best?;
    let base = path.split('[').next().unwrap_or(&path);
    // one word kplan does not read (`sm_8O`, `near-peek`, `banana`) is a misspelt or unknown
    // name: the error lists what kplan knows; a problem size key is set aside whatever its name
    let value = text.get(range.clone()).unwrap_or("");
    let value = value.rsplit_once('=').map_or(value, |(_, v)| v).trim();
    let one_word = value.len() >= 2
        && (value.starts_with('"') || value.starts_with('\''))
        && !value[1..value.len() - 1]
            .trim()
            .contains(char::is_whitespace);
    // one name kplan does not know among others it knows in a list of abstractions or
    // expertise (`"openmp"` beside `"hipcub"`): set aside, the rest of the list plans
    let name_list = path.starts_with("abstraction.allowed[") || path.starts_with("team.expertise[");
    if one_word && !m.starts_with("unknown problem key") && !(name_list && e.suggestion.is_none()) {
        return None;
    }
    // a problem key close to a known one is a typo (`colls`); on names of two or three
    // letters (`nc` beside `nx`) the closeness is chance: a size kplan does not model
    // A value of another kind than a size (a list, text, a table: `group_sizes = [...]` beside
    // `group_size`) is no misspelt size either.
    if m.starts_with("unknown problem key") && e.suggestion.is_some() {
        let key = m.split('`').nth(1).unwrap_or("");
        let size_like = !value.starts_with(['[', '{', '"', '\'']);
        if key.chars().count() >= 4 && size_like {
            return None;
        }
    }
    let element = path.ends_with(']');
    if ESSENTIAL.contains(&base) && !element || !base.contains('.') {
        return None;
    }
    // a dtype kplan does not know changes every byte count: the error says which it knows
    let leaf = base.rsplit('.').next().unwrap_or(base);
    if leaf.contains("dtype") || leaf == "precision" {
        return None;
    }
    Some((range, path, inline))
}

/// Finds the innermost key-value pair (or array element) of `table` whose text holds `at`.
fn walk_table(
    table: &toml_edit::Table,
    prefix: &str,
    at: usize,
    best: &mut Option<(Range<usize>, String, bool)>,
) {
    for (k, item) in table.iter() {
        let path = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        match item {
            toml_edit::Item::Table(t) => walk_table(t, &path, at, best),
            toml_edit::Item::Value(v) => {
                let key_span = table.key(k).and_then(|key| key.span());
                walk_value(v, key_span, &path, at, false, best);
            }
            _ => {}
        }
    }
}

fn walk_value(
    v: &toml_edit::Value,
    key_span: Option<Range<usize>>,
    path: &str,
    at: usize,
    in_inline: bool,
    best: &mut Option<(Range<usize>, String, bool)>,
) {
    let Some(vs) = v.span() else { return };
    let start = key_span.as_ref().map(|k| k.start).unwrap_or(vs.start);
    if !(start <= at && at < vs.end.max(start + 1)) {
        return;
    }
    *best = Some((start..vs.end, path.to_string(), in_inline));
    match v {
        toml_edit::Value::InlineTable(t) => {
            for (k, iv) in t.iter() {
                let ks = t.key(k).and_then(|key| key.span());
                walk_value(iv, ks, &format!("{path}.{k}"), at, true, best);
            }
        }
        toml_edit::Value::Array(a) => {
            // an element of a list of names: set aside that element only
            for (i, el) in a.iter().enumerate() {
                if matches!(el, toml_edit::Value::String(_)) {
                    walk_value(el, None, &format!("{path}[{i}]"), at, true, best);
                }
            }
        }
        _ => {}
    }
}

/// Replaces `range` (and, inside an inline table or array, the comma that separates it) with
/// spaces, keeping newlines, so every other byte keeps its position.
fn blank(t: &mut String, range: Range<usize>, inline: bool) {
    let b = t.as_bytes();
    let mut r = range.clone();
    let mut k = r.end;
    while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
        k += 1;
    }
    if !inline {
    } else if k < b.len() && b[k] == b',' {
        r.end = k + 1;
    } else {
        // the last item of an inline table or array: the comma before it
        let mut j = r.start;
        while j > 0 && matches!(b[j - 1], b' ' | b'\t' | b'\n' | b'\r') {
            j -= 1;
        }
        if j > 0 && b[j - 1] == b',' {
            r.start = j - 1;
        }
    }
    let blanked: String = t[r.clone()]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect();
    // a multi-byte char becomes one space: pad to keep the byte length
    let pad = r.len() - blanked.len();
    t.replace_range(r, &format!("{blanked}{}", " ".repeat(pad)));
}

/// The dotted path of the key whose text holds the start of `e`'s span.
fn key_path(text: &str, e: &SpecError) -> Option<String> {
    let span = e.span.clone()?;
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut best = None;
    walk_table(doc.as_table(), "", span.start, &mut best);
    best.map(|(_, p, _)| p.split('[').next().unwrap_or(&p).to_string())
}
