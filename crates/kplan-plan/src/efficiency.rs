//! The efficiency table (`data/efficiency.toml`, compiled in): what fraction of the roofline a
//! kernel class reaches with a strategy on a vendor's hardware, with sources.

use kplan_kb::Source;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Efficiency {
    pub vendor: String,
    pub class: String,
    pub strategy: String,
    pub low: f64,
    pub high: f64,
    pub basis: String,
    pub sources: Vec<String>,
    /// True when the row stands in for a figure that was not found.
    #[serde(default)]
    pub proxy: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EfficiencyTable {
    pub efficiency: Vec<Efficiency>,
    pub sources: BTreeMap<String, Source>,
}

const DATA: &str = include_str!("../data/efficiency.toml");

impl EfficiencyTable {
    /// The built-in table; its consistency is checked by this module's tests.
    pub fn builtin() -> &'static EfficiencyTable {
        static T: OnceLock<EfficiencyTable> = OnceLock::new();
        T.get_or_init(|| {
            toml::from_str(DATA).unwrap_or_else(|_| EfficiencyTable {
                efficiency: Vec::new(),
                sources: BTreeMap::new(),
            })
        })
    }

    pub fn lookup(&self, vendor: &str, class: &str, strategy: &str) -> Option<&Efficiency> {
        self.efficiency
            .iter()
            .find(|e| e.vendor == vendor && e.class == class && e.strategy == strategy)
    }
}

/// The table as Markdown, for docs/plan.md (between its `efficiency-table` markers).
pub fn markdown_table(t: &EfficiencyTable) -> String {
    let mut s = String::from("| vendor | class | strategy | low | high | basis | sources |\n|---|---|---|---|---|---|---|\n");
    for e in &t.efficiency {
        s.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {}{} | {} |\n",
            e.vendor,
            e.class,
            e.strategy,
            e.low,
            e.high,
            if e.proxy { "(proxy) " } else { "" },
            e.basis.replace('|', "\\|"),
            e.sources.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_every_source_is_listed() {
        let t: EfficiencyTable = toml::from_str(DATA).expect("efficiency.toml parses");
        assert!(t.efficiency.len() >= 20);
        for e in &t.efficiency {
            assert!(e.low > 0.0 && e.low <= e.high && e.high <= 1.0, "{e:?}");
            assert!(!e.sources.is_empty(), "{e:?}");
            for s in &e.sources {
                assert!(
                    t.sources.contains_key(s),
                    "source {s} of {e:?} is not in [sources]"
                );
            }
            assert!(["streaming", "row", "gemm", "attention"].contains(&e.class.as_str()));
            assert!(["framework", "vendor-library", "triton", "hand-written"]
                .contains(&e.strategy.as_str()));
        }
        // no duplicate (vendor, class, strategy)
        let mut keys: Vec<_> = t
            .efficiency
            .iter()
            .map(|e| (&e.vendor, &e.class, &e.strategy))
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), t.efficiency.len());
    }
}
