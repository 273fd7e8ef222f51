//! Names users write in a spec for kplan's own words: problem-key aliases and library families,
//! one data table (`data/spec_names.toml`) compiled in and read once.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::LazyLock;

const DATA: &str = include_str!("../../data/spec_names.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecNames {
    /// A name users write for a problem key -> the documented keys it stands for, in order of
    /// preference.
    problem_keys: BTreeMap<String, Vec<String>>,
    /// A library name written in `allowed` -> the other names of its family.
    libraries: BTreeMap<String, Vec<String>>,
}

fn parse() -> Result<SpecNames, toml::de::Error> {
    toml::from_str(DATA)
}

/// The built-in table. The tests below fail on a table that does not parse, so the empty
/// fallback is never what a built kplan reads.
static NAMES: LazyLock<SpecNames> = LazyLock::new(|| parse().unwrap_or_default());

/// The documented keys that `key` (lowercase, underscores) may stand for, in order of
/// preference.
pub(super) fn problem_key_candidates(key: &str) -> Option<&'static [String]> {
    NAMES.problem_keys.get(key).map(Vec::as_slice)
}

/// The other names of the family of library `name` (normalised, see `norm_name`), when kplan
/// knows it as a vendor or open-source library.
pub(super) fn library_family(name: &str) -> Option<&'static [String]> {
    NAMES.libraries.get(name).map(Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{norm_name, Abstraction, Op};

    #[test]
    fn the_table_parses() {
        let names = parse().expect("data/spec_names.toml parses");
        assert!(!names.problem_keys.is_empty());
        assert!(!names.libraries.is_empty());
    }

    #[test]
    fn every_problem_key_alias_maps_to_real_keys() {
        let names = parse().expect("data/spec_names.toml parses");
        let read_by_some_op = |k: &str| Op::ALL.iter().any(|o| o.problem_keys().0.contains(&k));
        for (alias, keys) in &names.problem_keys {
            // The lookup lowercases and turns dashes into underscores: another spelling could
            // never be found.
            assert_eq!(
                *alias,
                alias.to_ascii_lowercase().replace('-', "_"),
                "alias `{alias}` is not written lowercase with underscores"
            );
            assert!(!keys.is_empty(), "alias `{alias}` stands for no key");
            for k in keys {
                assert!(
                    read_by_some_op(k),
                    "alias `{alias}` stands for `{k}`, which no op documents as a problem key"
                );
                assert_ne!(alias, k, "alias `{alias}` stands for itself");
            }
        }
    }

    #[test]
    fn every_library_name_is_reachable() {
        let names = parse().expect("data/spec_names.toml parses");
        for (lib, family) in &names.libraries {
            assert_eq!(
                *lib,
                norm_name(lib),
                "library `{lib}` is not written normalised"
            );
            // A name that is an abstraction level or its alias is read as that, never as a
            // library.
            assert!(
                Abstraction::ALL.iter().all(|a| a.as_str() != lib)
                    && Abstraction::ALIASES.iter().all(|a| a.0 != lib),
                "library `{lib}` is also an abstraction name"
            );
            for f in family {
                assert_eq!(
                    *f,
                    norm_name(f),
                    "family name `{f}` of `{lib}` is not normalised"
                );
                assert_ne!(lib, f, "library `{lib}` lists itself");
            }
        }
    }
}
