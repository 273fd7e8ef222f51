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
    /// The AMD family the row is for (`cdna`, `rdna`); none: every architecture of the vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

/// A kernel class whose time no bandwidth or FLOP/s fraction describes (atomic-bound: the
/// rate of atomics on hot addresses, set by the key distribution): the plan gives no expected
/// range and says why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unbanded {
    pub class: String,
    pub basis: String,
    #[serde(default)]
    pub sources: Vec<String>,
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
    #[serde(default)]
    pub unbanded: Vec<Unbanded>,
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
                unbanded: Vec::new(),
                sources: BTreeMap::new(),
            })
        })
    }

    pub fn launch_floor(&self, vendor: &str) -> Option<&LaunchFloor> {
        self.launch.iter().find(|l| l.vendor == vendor)
    }

    /// The row for a vendor (any family; a family-less row first).
    pub fn lookup(&self, vendor: &str, class: &str, strategy: &str) -> Option<&Efficiency> {
        self.lookup_family(vendor, None, class, strategy)
    }

    /// The row for a vendor's family (`cdna`, `rdna`): the family's own row, else a row for
    /// every family of the vendor, else another family's row (a proxy off its architectures).
    pub fn lookup_family(
        &self,
        vendor: &str,
        family: Option<&str>,
        class: &str,
        strategy: &str,
    ) -> Option<&Efficiency> {
        let rows = || {
            self.efficiency
                .iter()
                .filter(|e| e.vendor == vendor && e.class == class && e.strategy == strategy)
        };
        family
            .and_then(|f| rows().find(|e| e.family.as_deref() == Some(f)))
            .or_else(|| rows().find(|e| e.family.is_none()))
            .or_else(|| rows().next())
    }

    /// Why a class has no expected range, where the table says so.
    pub fn unbanded(&self, class: &str) -> Option<&Unbanded> {
        self.unbanded.iter().find(|u| u.class == class)
    }
}

/// The table as Markdown, for docs/plan.md (between its `efficiency-table` markers).
pub fn markdown_table(t: &EfficiencyTable) -> String {
    let mut s = String::from("| vendor | class | strategy | low | high | measured on | dtypes | basis | sources |\n|---|---|---|---|---|---|---|---|---|\n");
    for e in &t.efficiency {
        s.push_str(&format!(
            "| {}{} | {} | {} | {:.2} | {:.2} | {} | {} | {}{} | {} |\n",
            e.vendor,
            e.family
                .as_deref()
                .map(|f| format!(" ({f})"))
                .unwrap_or_default(),
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
    if !t.unbanded.is_empty() {
        s.push_str(
            "\nClasses with no expected range:\n\n| class | why | sources |\n|---|---|---|\n",
        );
        for u in &t.unbanded {
            s.push_str(&format!(
                "| {} | {} | {} |\n",
                u.class,
                u.basis.replace('|', "\\|"),
                u.sources.join(", ")
            ));
        }
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
            assert!(
                matches!(e.family.as_deref(), None | Some("cdna" | "rdna")),
                "{e:?}"
            );
            if e.family.is_some() {
                assert_eq!(e.vendor, "amd", "{e:?}");
            }
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
        for u in &t.unbanded {
            for s in &u.sources {
                assert!(t.sources.contains_key(s), "source {s} of {u:?}");
            }
        }
        // no duplicate (vendor, family, class, strategy)
        let mut keys: Vec<_> = t
            .efficiency
            .iter()
            .map(|e| (&e.vendor, &e.family, &e.class, &e.strategy))
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

    /// The RDNA rows are kplan's estimate, derived as their basis says: the low end is the
    /// CDNA row's (MI300X) and the high end the NVIDIA row's, for the same class and strategy.
    #[test]
    fn rdna_rows_follow_their_stated_derivation() {
        let t = EfficiencyTable::builtin();
        let rdna: Vec<&Efficiency> = t
            .efficiency
            .iter()
            .filter(|e| e.family.as_deref() == Some("rdna"))
            .collect();
        assert!(!rdna.is_empty());
        for e in rdna {
            assert!(e.proxy && e.basis.contains("kplan's estimate"), "{e:?}");
            let cdna = t
                .lookup_family("amd", Some("cdna"), &e.class, &e.strategy)
                .unwrap();
            let nv = t.lookup("nvidia", &e.class, &e.strategy).unwrap();
            assert_eq!(e.low, cdna.low.min(nv.low), "{e:?}");
            assert_eq!(e.high, nv.high.max(cdna.high), "{e:?}");
        }
        // An RDNA target gets the RDNA row, a CDNA target the CDNA row.
        let r = t
            .lookup_family("amd", Some("rdna"), "streaming", "hand-written")
            .unwrap();
        assert_eq!(r.family.as_deref(), Some("rdna"));
        let c = t
            .lookup_family("amd", Some("cdna"), "streaming", "hand-written")
            .unwrap();
        assert_eq!(c.family.as_deref(), Some("cdna"));
    }
}
