//! Modifier values in the forms users write them: a list of names where kplan reads one
//! (`reduce = ["max", "mean"]`), a sentence where kplan reads a flag
//! (`deterministic = "nice to have"`, `determinism = "bitwise identical across runs"`).
//!
//! What the intent is, is read from the words; what cannot be read (a number for a name, a
//! sentence with neither a requirement nor a preference in it) is an error at the value.

use crate::error::SpecError;
use crate::keys::SpecNote;
use toml::Spanned;

/// Words that make a flag a requirement.
const REQUIRE: &[&str] = &[
    "true",
    "yes",
    "required",
    "require",
    "requires",
    "must",
    "always",
    "strict",
    "exact",
    "exactly",
    "bitwise",
    "bit-exact",
    "identical",
    "reproducible",
    "on",
    "mandatory",
    "needed",
    "need",
    "enabled",
];

/// Words that make a flag a preference, not a requirement (read as `false`, with a note).
const PREFER: &[&str] = &[
    "false",
    "no",
    "optional",
    "preferred",
    "prefer",
    "preferably",
    "ideally",
    "best-effort",
    "off",
    "desirable",
    "bonus",
    "disabled",
    "unneeded",
];

/// Phrases that make a flag a preference (checked before the words that require it: "not
/// required" has "required" in it).
const PREFER_PHRASES: &[&str] = &[
    "nice to have",
    "not required",
    "not needed",
    "if possible",
    "best effort",
    "where possible",
    "not necessary",
];

fn words(s: &str) -> Vec<String> {
    s.to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// A flag: a boolean, or words that say required (`true`) or preferred (`false`, noted).
pub(crate) fn flag(
    v: Option<Spanned<toml::Value>>,
    key: &str,
    notes: &mut Vec<SpecNote>,
) -> Result<Option<Spanned<bool>>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    let span = v.span();
    match v.into_inner() {
        toml::Value::Boolean(b) => Ok(Some(Spanned::new(span, b))),
        toml::Value::String(s) => {
            let w = words(&s);
            let lower = w.join(" ");
            let soft = PREFER_PHRASES.iter().any(|p| lower.contains(p))
                || w.iter().any(|x| PREFER.contains(&x.as_str()));
            let hard = w.iter().any(|x| REQUIRE.contains(&x.as_str()));
            if soft {
                notes.push(SpecNote::at(
                    span.clone(),
                    format!("`{key} = \"{s}\"` read as a preference, not a requirement (`{key} = false`): the plan does not require it; write `{key} = true` to require it"),
                ));
                Ok(Some(Spanned::new(span, false)))
            } else if hard {
                notes.push(SpecNote::at(
                    span.clone(),
                    format!("`{key} = \"{s}\"` read as `{key} = true`"),
                ));
                Ok(Some(Spanned::new(span, true)))
            } else {
                Err(SpecError::at(
                    span,
                    format!("unreadable `{key}` \"{s}\", expected `true` or `false` (or words such as \"required\" or \"nice to have\")"),
                ))
            }
        }
        _ => Err(SpecError::at(
            span,
            format!("wrong type for `{key}`, expected `true` or `false`"),
        )),
    }
}

/// A name: a string, or a list of names (the first is planned, the others are noted).
pub(crate) fn name(
    v: Option<Spanned<toml::Value>>,
    key: &str,
    notes: &mut Vec<SpecNote>,
) -> Result<Option<Spanned<String>>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    let span = v.span();
    let wrong = |span| {
        SpecError::at(
            span,
            format!(
                "wrong type for `{key}`, expected a name (`{key} = \"...\"`) or a list of names"
            ),
        )
    };
    match v.into_inner() {
        toml::Value::String(s) => Ok(Some(Spanned::new(span, s))),
        toml::Value::Array(a) => {
            let names: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            let Some(names) = names else {
                return Err(wrong(span));
            };
            let Some(first) = names.first().cloned() else {
                return Err(SpecError::at(
                    span,
                    format!("empty `{key}`, expected at least one name"),
                ));
            };
            if names.len() > 1 {
                notes.push(SpecNote::at(
                    span.clone(),
                    format!(
                        "`{key}` lists {}: planned for `{first}` (the work model and risks of one variant); the others share its access pattern, plan them with `{key} = \"...\"` where they differ",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            Ok(Some(Spanned::new(span, first)))
        }
        _ => Err(wrong(span)),
    }
}
