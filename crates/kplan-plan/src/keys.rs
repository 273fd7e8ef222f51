//! Keys kplan does not read: descriptive keys become notes, likely typos stay errors.
//!
//! Teams describe kernels with keys of their own (a free-form key in `[kernel]`, a problem key
//! that belongs to another op, a `[notes]` table). Rejecting those loses the whole plan for a
//! word kplan does not need. A key is an error only when misreading it would change the plan:
//! it is a spelling of a known key of the same section with a value of the same kind
//! (`dtype` for `dtypes` is not, `causl = true` for `causal` is), a known key placed in the
//! wrong section, or, in `[backends]`, a list that reads as a target list. Every other unknown
//! key is kept as a [`SpecNote`] that the plan prints and the CLI reports as a warning.

use crate::error::SpecError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// Something in the spec kplan accepted but did not use, located in the spec text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecNote {
    /// Byte range in the spec text.
    pub span: Range<usize>,
    /// What was not used and why the plan does not depend on it.
    pub message: String,
}

impl SpecNote {
    pub(crate) fn at(span: Range<usize>, message: impl Into<String>) -> SpecNote {
        SpecNote {
            span,
            message: message.into(),
        }
    }
    /// 1-based line and column of the note in `text`.
    pub fn line_col(&self, text: &str) -> (usize, usize) {
        kplan_kb::line_col(text, self.span.start)
    }
    /// `FILE:LINE:COL: warning: MESSAGE`.
    pub fn render(&self, file_name: &str, text: &str) -> String {
        let (l, c) = self.line_col(text);
        format!("{file_name}:{l}:{c}: warning: {}\n", self.message)
    }
}

/// The kind of a TOML value, to tell a typo of a known key (same kind) from another word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Bool,
    Num,
    Array,
    Table,
}

impl Kind {
    pub(crate) fn of(v: &toml::Value) -> Kind {
        match v {
            toml::Value::String(_) => Kind::Str,
            toml::Value::Boolean(_) => Kind::Bool,
            toml::Value::Integer(_) | toml::Value::Float(_) => Kind::Num,
            toml::Value::Array(_) => Kind::Array,
            toml::Value::Table(_) => Kind::Table,
            toml::Value::Datetime(_) => Kind::Str,
        }
    }
}

use Kind::*;

/// Every key kplan reads, per section, with the kind of its value.
const SECTIONS: [(&str, &[(&str, Kind)]); 6] = [
    (
        "kernel",
        &[
            ("name", Str),
            ("op", Str),
            ("description", Str),
            ("dtypes", Array),
            ("problem", Table),
            // Guessed names, read as `dtypes` / `problem` by the spec parser (with a note).
            ("dtype", Str),
            ("shape", Table),
            ("dims", Table),
            ("sizes", Table),
            ("problem_size", Table),
            ("features", Array),
            ("direction", Str),
            ("kind", Str),
            ("reduce", Str),
            ("deterministic", Bool),
            ("causal", Bool),
            ("varlen", Bool),
            ("ragged", Bool),
            ("stable", Bool),
            ("exclusive", Bool),
            ("values", Bool),
            ("layout", Str),
            ("format", Str),
            ("granularity", Str),
            ("mask", Str),
            ("kv_dtype", Str),
            ("kv_cache_dtype", Str),
            ("weight_dtype", Str),
            ("weights_dtype", Str),
            ("epilogue", Str),
            ("sparsity", Str),
        ],
    ),
    (
        "backends",
        &[
            ("targets", Array),
            ("devices", Array),
            ("gpus", Array),
            ("stretch", Array),
            ("optional", Array),
            ("stretch_targets", Array),
            ("nice_to_have", Array),
        ],
    ),
    (
        "requirements",
        &[
            ("performance", Str),
            ("framework_expressible", Bool),
            ("latency_us", Num),
            // The same budget in other units, converted to microseconds with a note.
            ("latency_ns", Num),
            ("latency_ms", Num),
            ("latency_s", Num),
            ("latency", Str),
            ("deterministic", Bool),
            ("determinism", Bool),
            ("reproducible", Bool),
        ],
    ),
    ("team", &[("expertise", Array)]),
    ("abstraction", &[("allowed", Array)]),
    ("ci", &[("runners", Table)]),
];

type KeyMap = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Deserialize)]
struct Sections {
    #[serde(default)]
    kernel: Option<KeyMap>,
    #[serde(default)]
    backends: Option<KeyMap>,
    #[serde(default)]
    requirements: Option<KeyMap>,
    #[serde(default)]
    team: Option<KeyMap>,
    #[serde(default)]
    abstraction: Option<KeyMap>,
    #[serde(default)]
    ci: Option<KeyMap>,
}

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace(['-', ' '], "_")
}

/// Checks every key of the spec against the keys kplan reads. Runs after the typed parse, so
/// the known keys already have the right types here. Returns the notes for keys kplan does not
/// use, or the error for a key that looks like a misspelt or misplaced known key.
pub(crate) fn check(
    text: &str,
    is_target: &dyn Fn(&str) -> bool,
) -> Result<Vec<SpecNote>, SpecError> {
    let parse_err = |e: toml::de::Error| SpecError {
        span: e.span(),
        message: e.message().trim_end().replace('\n', " "),
        suggestion: None,
    };
    let top: BTreeMap<Spanned<String>, serde::de::IgnoredAny> =
        toml::from_str(text).map_err(parse_err)?;
    let sections: Sections = toml::from_str(text).map_err(parse_err)?;
    let mut notes = Vec::new();
    for key in top.keys() {
        let k = key.get_ref().as_str();
        if SECTIONS.iter().any(|(s, _)| *s == k) {
            continue;
        }
        let names = SECTIONS.iter().map(|(s, _)| *s);
        if let Some(s) = typo_of(k, names) {
            return Err(SpecError::at(
                key.span(),
                format!(
                    "unknown table `[{k}]`, expected one of `[kernel]`, `[backends]`, `[requirements]`, `[team]`, `[abstraction]`, `[ci]`"
                ),
            )
            .suggest(Some(s)));
        }
        notes.push(SpecNote::at(
            key.span(),
            format!("key `{k}` not used by kplan: a table kplan does not read; the plan does not depend on it"),
        ));
    }
    let maps = [
        ("kernel", &sections.kernel),
        ("backends", &sections.backends),
        ("requirements", &sections.requirements),
        ("team", &sections.team),
        ("abstraction", &sections.abstraction),
        ("ci", &sections.ci),
    ];
    for (section, map) in maps {
        let Some(map) = map else { continue };
        let known = SECTIONS
            .iter()
            .find(|(s, _)| *s == section)
            .map(|(_, k)| *k)
            .unwrap_or(&[]);
        for (key, val) in map {
            let k = key.get_ref().as_str();
            if known.iter().any(|(n, _)| *n == k) {
                continue;
            }
            let kind = Kind::of(val.get_ref());
            let nk = norm(k);
            // A known key written with dashes or another case: the same key, misspelt.
            if let Some((n, _)) = known.iter().find(|(n, _)| *n == nk) {
                return Err(SpecError::at(
                    key.span(),
                    format!(
                        "unknown field `{k}` in [{section}], expected `{n}` (keys use underscores)"
                    ),
                )
                .suggest(Some(n.to_string())));
            }
            let same_kind = known.iter().filter(|(_, kd)| *kd == kind).map(|(n, _)| *n);
            if let Some(s) = typo_of(&nk, same_kind) {
                return Err(SpecError::at(
                    key.span(),
                    format!(
                        "unknown field `{k}` in [{section}], expected one of {}",
                        list(known)
                    ),
                )
                .suggest(Some(s)));
            }
            if let Some((other, _)) = SECTIONS.iter().find(|(s, keys)| {
                *s != section && keys.iter().any(|(n, kd)| *n == nk && *kd == kind)
            }) {
                return Err(SpecError::at(
                    key.span(),
                    format!(
                        "`{k}` belongs in [{other}], not [{section}], expected it under `[{other}]`"
                    ),
                ));
            }
            // A `[backends]` list that names targets (or whose key says it does: `target_list`,
            // `gpu_archs`) is a target list under another name, and ignoring it would plan for
            // fewer targets. A list of other words (`os = ["linux", "windows"]`) describes where
            // the kernel runs without naming a target: a note.
            let target_word = [
                "target",
                "device",
                "gpu",
                "arch",
                "backend",
                "platform_target",
            ]
            .iter()
            .any(|w| nk.contains(w));
            let names_a_target = target_word
                || match val.get_ref() {
                    toml::Value::Array(items) => {
                        items.is_empty() || items.iter().any(|i| i.as_str().map_or(true, is_target))
                    }
                    _ => false,
                };
            if section == "backends" && kind == Array && names_a_target {
                return Err(SpecError::at(
                    key.span(),
                    format!(
                        "unknown field `{k}` in [backends], expected one of {}",
                        list(known)
                    ),
                ));
            }
            notes.push(SpecNote::at(
                key.span(),
                format!(
                    "key `{k}` not used by kplan: [{section}] has no `{k}`; read as a description, the plan does not depend on it"
                ),
            ));
        }
    }
    notes.sort_by_key(|n| n.span.start);
    Ok(notes)
}

/// The known name `name` is a misspelling of: close by edit distance and starting with the same
/// letter (a typo keeps the first letter; `paged` is not a spelling of `ragged`).
pub(crate) fn typo_of<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let first = name.trim().chars().next().map(|c| c.to_ascii_lowercase());
    kplan_kb::closest(
        name,
        candidates
            .into_iter()
            .filter(|c| c.chars().next().map(|x| x.to_ascii_lowercase()) == first),
    )
}

fn list(known: &[(&str, Kind)]) -> String {
    known
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[kernel]\nname = \"k\"\nop = \"norm\"\ndtypes = [\"bf16\"]\nproblem = { rows = 8, cols = 64 }\n\n[backends]\ntargets = [\"sm_90\"]\n";

    #[test]
    fn descriptive_kernel_key_is_a_note() {
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\nmodel = \"llama-3-8b\"");
        let n = check(&t, &IS_TARGET).unwrap();
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].message.contains("key `model` not used by kplan"));
        assert_eq!(n[0].line_col(&t), (4, 1));
    }

    #[test]
    fn typo_of_a_known_key_of_the_same_kind_is_an_error() {
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\ncausl = true");
        let e = check(&t, &IS_TARGET).unwrap_err();
        assert_eq!(e.suggestion.as_deref(), Some("causal"));
    }

    #[test]
    fn close_name_of_another_kind_is_a_note_not_a_typo() {
        // `scale` is two edits from `stable`, but `stable` is a boolean.
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\nscale = \"per-token\"");
        assert_eq!(check(&t, &IS_TARGET).unwrap().len(), 1);
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\nscale = true");
        assert!(check(&t, &IS_TARGET).is_err());
    }

    #[test]
    fn a_word_close_to_a_key_but_not_its_spelling_is_a_note() {
        // Two edits from `ragged`, both booleans, but another word.
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\npaged = true");
        assert_eq!(check(&t, &IS_TARGET).unwrap().len(), 1);
    }

    #[test]
    fn misplaced_known_key_is_an_error() {
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\nlatency_us = 20");
        let e = check(&t, &IS_TARGET).unwrap_err();
        assert!(e.message.contains("belongs in [requirements]"), "{e:?}");
    }

    #[test]
    fn dashed_spelling_of_a_known_key_is_an_error() {
        let t = BASE.replace("op = \"norm\"", "op = \"norm\"\nkv-dtype = \"fp8\"");
        assert_eq!(
            check(&t, &IS_TARGET).unwrap_err().suggestion.as_deref(),
            Some("kv_dtype")
        );
    }

    /// Targets for these tests: any name but a few operating-system words.
    const IS_TARGET: fn(&str) -> bool = |n| !matches!(n, "linux" | "windows");

    #[test]
    fn a_backends_list_naming_no_target_is_a_note() {
        let t = BASE.replace("[backends]", "[backends]\nos = [\"linux\", \"windows\"]");
        let notes = check(&t, &IS_TARGET).unwrap();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].message.contains("`os`"), "{}", notes[0].message);
        // one target-like entry makes it a target list under another name: an error
        let t = BASE.replace("[backends]", "[backends]\nos = [\"linux\", \"h100\"]");
        assert!(check(&t, &IS_TARGET).is_err());
    }

    #[test]
    fn latency_in_other_units_is_a_known_key() {
        let t = BASE.replace("[backends]", "[requirements]\nlatency_ms = 5\n\n[backends]");
        assert!(check(&t, &IS_TARGET).unwrap().is_empty());
    }

    #[test]
    fn unknown_list_in_backends_is_an_error_a_string_is_a_note() {
        let t = BASE.replace("[backends]", "[backends]\nfleet = [\"a\"]");
        assert!(check(&t, &IS_TARGET).is_err());
        let t = BASE.replace("[backends]", "[backends]\ncluster = \"8 nodes\"");
        assert_eq!(check(&t, &IS_TARGET).unwrap().len(), 1);
    }

    #[test]
    fn unknown_table_is_a_note_a_misspelt_one_an_error() {
        let t = format!("{BASE}\n[context]\nowner = \"serving\"\n");
        assert_eq!(check(&t, &IS_TARGET).unwrap().len(), 1);
        let t = format!("{BASE}\n[requirments]\nlatency_us = 3\n");
        assert_eq!(
            check(&t, &IS_TARGET).unwrap_err().suggestion.as_deref(),
            Some("requirements")
        );
    }

    #[test]
    fn known_keys_give_no_notes() {
        assert!(check(BASE, &IS_TARGET).unwrap().is_empty());
    }
}
