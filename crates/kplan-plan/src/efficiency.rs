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
    /// The architectures the band's figures were measured on; elsewhere the band is a proxy.
    pub measured_on: Vec<String>,
    /// The dtypes the figures were measured with; empty: any (bandwidth-bound classes).
    pub dtypes: Vec<String>,
    pub basis: String,
    pub sources: Vec<String>,
    /// True when the row stands in for a figure that was not found.
    #[serde(default)]
    pub proxy: bool,
}

impl Efficiency {
    /// Why the band is a proxy for `arch` and `dtype`, or `None` when it was measured there.
    pub fn proxy_reason(&self, arch: &str, dtype: &str) -> Option<String> {
        let mut why = Vec::new();
        if self.proxy {
            why.push("no figure for this class and strategy was found (see its basis)".to_string());
        }
        if !self.measured_on.iter().any(|a| a == arch) {
            why.push(format!(
                "measured on {}, applied to {arch}",
                self.measured_on.join("/")
            ));
        }
        if !self.dtypes.is_empty() && !self.dtypes.iter().any(|d| d == dtype) {
            why.push(format!(
                "measured with {}, applied to {dtype}",
                self.dtypes.join("/")
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// The launch floor: the least time one kernel launch takes, per vendor.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchFloor {
    pub vendor: String,
    pub floor_us: f64,
    pub basis: String,
    pub sources: Vec<String>,
    #[serde(default)]
    pub proxy: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EfficiencyTable {
    pub efficiency: Vec<Efficiency>,
    #[serde(default)]
    pub launch: Vec<LaunchFloor>,
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
                launch: Vec::new(),
                sources: BTreeMap::new(),
            })
        })
    }

    pub fn launch_floor(&self, vendor: &str) -> Option<&LaunchFloor> {
        self.launch.iter().find(|l| l.vendor == vendor)
    }

    pub fn lookup(&self, vendor: &str, class: &str, strategy: &str) -> Option<&Efficiency> {
        self.efficiency
            .iter()
            .find(|e| e.vendor == vendor && e.class == class && e.strategy == strategy)
    }
}

/// The table as Markdown, for docs/plan.md (between its `efficiency-table` markers).
pub fn markdown_table(t: &EfficiencyTable) -> String {
    let mut s = String::from("| vendor | class | strategy | low | high | measured on | dtypes | basis | sources |\n|---|---|---|---|---|---|---|---|---|\n");
    for e in &t.efficiency {
        s.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {} | {} | {}{} | {} |\n",
            e.vendor,
            e.class,
            e.strategy,
            e.low,
            e.high,
            e.measured_on.join(", "),
            if e.dtypes.is_empty() {
                "any".to_string()
            } else {
                e.dtypes.join(", ")
            },
            if e.proxy { "(proxy) " } else { "" },
            e.basis.replace('|', "\\|"),
            e.sources.join(", ")
        ));
    }
    s.push_str("\nLaunch floor (the least time per call, whatever the problem size):\n\n| vendor | floor | basis | sources |\n|---|---|---|---|\n");
    for l in &t.launch {
        s.push_str(&format!(
            "| {} | {} us | {}{} | {} |\n",
            l.vendor,
            l.floor_us,
            if l.proxy { "(proxy) " } else { "" },
            l.basis.replace('|', "\\|"),
            l.sources.join(", ")
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
            // Where the figures come from: a band without an architecture cannot say where it
            // is a proxy; a matrix-class band without a dtype cannot either.
            assert!(!e.measured_on.is_empty(), "{e:?}");
            if e.class == "gemm" || e.class == "attention" {
                assert!(!e.dtypes.is_empty(), "{e:?}");
            }
            // A row that stands in for a missing figure says so in its basis text too.
            if e.proxy {
                let b = e.basis.to_lowercase();
                assert!(
                    b.contains("proxy") || b.contains("assumption") || b.contains("no "),
                    "{e:?}"
                );
            }
        }
        for l in &t.launch {
            assert!(l.floor_us > 0.0 && !l.sources.is_empty(), "{l:?}");
            for s in &l.sources {
                assert!(t.sources.contains_key(s), "source {s} of {l:?}");
            }
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

#[cfg(test)]
mod proxy_tests {
    use super::*;

    #[test]
    fn a_band_is_a_proxy_off_its_architecture_or_dtype() {
        let t = EfficiencyTable::builtin();
        let amd = t.lookup("amd", "streaming", "hand-written").unwrap();
        assert_eq!(amd.proxy_reason("gfx942", "bf16"), None);
        let r = amd.proxy_reason("gfx1100", "bf16").unwrap();
        assert!(r.contains("gfx942") && r.contains("gfx1100"), "{r}");
        let g = t.lookup("nvidia", "gemm", "vendor-library").unwrap();
        assert_eq!(g.proxy_reason("sm_90a", "bf16"), None);
        assert!(g.proxy_reason("sm_90a", "int8").unwrap().contains("int8"));
    }
}
