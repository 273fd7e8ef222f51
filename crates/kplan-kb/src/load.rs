use crate::model::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The data files, in the order they are read. A `--kb DIR` must hold the first four;
/// `measurements.toml` and `ops.toml` are optional there (none when absent).
pub const FILES: [&str; 6] = [
    "sources.toml",
    "architectures.toml",
    "devices.toml",
    "features.toml",
    "measurements.toml",
    "ops.toml",
];

/// The compiled-in copies of [`FILES`], in the same order.
pub const BUILTIN: [(&str, &str); 6] = [
    ("sources.toml", include_str!("../data/sources.toml")),
    (
        "architectures.toml",
        include_str!("../data/architectures.toml"),
    ),
    ("devices.toml", include_str!("../data/devices.toml")),
    ("features.toml", include_str!("../data/features.toml")),
    (
        "measurements.toml",
        include_str!("../data/measurements.toml"),
    ),
    ("ops.toml", include_str!("../data/ops.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum KbError {
    #[error("{path}: cannot read knowledge-base file: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourcesFile {
    sources: BTreeMap<String, Source>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchFile {
    arch: Vec<Arch>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceFile {
    device: Vec<Device>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeatureFile {
    feature: Vec<Feature>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsFile {
    #[serde(default)]
    op: Vec<OpInfo>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeasurementFile {
    #[serde(default)]
    measurement: Vec<Measurement>,
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T, KbError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| crate::text::line_col(text, s.start))
            .unwrap_or((1, 1));
        KbError::Parse {
            path: path.to_owned(),
            line,
            column,
            message: e.message().to_string(),
        }
    })
}

impl Kb {
    /// The knowledge base compiled into kplan.
    pub fn builtin() -> &'static Kb {
        static KB: OnceLock<Kb> = OnceLock::new();
        KB.get_or_init(|| {
            Kb::from_texts(
                Path::new("<builtin kb>"),
                &BUILTIN.map(|(n, t)| (n, t.to_string())),
            )
            .expect("the built-in knowledge base is validated by kplan-kb's tests")
        })
    }

    /// Reads the data files from `dir` (a user's copy of the KB). Errors name the file and,
    /// for syntax and type errors, the line and column.
    pub fn load_dir(dir: &Path) -> Result<Kb, KbError> {
        let mut texts: [(&str, String); 6] = FILES.map(|n| (n, String::new()));
        for (name, text) in texts.iter_mut() {
            let path = dir.join(*name);
            match std::fs::read_to_string(&path) {
                Ok(t) => *text = t,
                Err(e)
                    if matches!(*name, "measurements.toml" | "ops.toml")
                        && e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(KbError::Io { path, source }),
            }
        }
        Kb::from_texts(dir, &texts)
    }

    fn from_texts(dir: &Path, texts: &[(&str, String); 6]) -> Result<Kb, KbError> {
        let p = |name: &str| dir.join(name);
        let sources: SourcesFile = parse(&p(texts[0].0), &texts[0].1)?;
        let archs: ArchFile = parse(&p(texts[1].0), &texts[1].1)?;
        let devices: DeviceFile = parse(&p(texts[2].0), &texts[2].1)?;
        let features: FeatureFile = parse(&p(texts[3].0), &texts[3].1)?;
        let measurements: MeasurementFile = parse(&p(texts[4].0), &texts[4].1)?;
        let ops: OpsFile = parse(&p(texts[5].0), &texts[5].1)?;
        let mut kb = Kb {
            archs: archs.arch,
            devices: devices.device,
            features: features.feature,
            sources: sources.sources,
            measurements: measurements.measurement,
            ops: ops.op,
        };
        kb.validate(dir)?;
        kb.derive_generic_support();
        Ok(kb)
    }

    /// Cross-references: every source key resolves, every device names a known architecture,
    /// every reference device exists, names and aliases are unique.
    fn validate(&self, dir: &Path) -> Result<(), KbError> {
        let invalid = |file: &str, message: String| KbError::Invalid {
            path: dir.join(file),
            message,
        };
        let src = |file: &str, owner: &str, key: &str| -> Result<(), KbError> {
            if self.sources.contains_key(key) {
                Ok(())
            } else {
                Err(invalid(
                    file,
                    format!("{owner}: unknown source key `{key}` (not in sources.toml)"),
                ))
            }
        };
        for (key, s) in &self.sources {
            if !Source::KINDS.contains(&s.kind.as_str()) {
                return Err(invalid(
                    "sources.toml",
                    format!(
                        "source {key}: unknown kind `{}` (expected one of {})",
                        s.kind,
                        Source::KINDS.join(", ")
                    ),
                ));
            }
        }
        let mut names = HashSet::new();
        for a in &self.archs {
            if let Some(w) = a.warp_size.value {
                if w == 0 || (!a.warp_sizes.is_empty() && !a.warp_sizes.contains(&w)) {
                    return Err(invalid(
                        "architectures.toml",
                        format!(
                            "arch {}: warp_size {w} must be non-zero and listed in warp_sizes",
                            a.id
                        ),
                    ));
                }
            }
            for n in std::iter::once(&a.id).chain(&a.aliases) {
                if !names.insert(n.to_ascii_lowercase()) {
                    return Err(invalid(
                        "architectures.toml",
                        format!("name `{n}` is used twice"),
                    ));
                }
            }
            let o = format!("arch {}", a.id);
            for k in a.fact_sources() {
                src("architectures.toml", &o, k)?;
            }
            if let Some(d) = &a.reference_device {
                match self.device(d) {
                    None => {
                        return Err(invalid(
                            "architectures.toml",
                            format!("{o}: unknown reference_device `{d}`"),
                        ))
                    }
                    // The stand-in must be the same hardware generation (sm_90 may use an
                    // sm_90a device; sm_80 may not use an sm_86 one).
                    Some(dev) => {
                        let same = dev.arch == a.id
                            || !matches!(self.arch(&dev.arch), Some(da) if da.family != a.family || da.vendor != a.vendor);
                        if !same {
                            return Err(invalid(
                                "architectures.toml",
                                format!("{o}: reference_device `{d}` belongs to `{}`, a different family", dev.arch),
                            ));
                        }
                    }
                }
            }
            for f in a.facts() {
                if f.value.is_none() && f.note.is_none() {
                    return Err(invalid(
                        "architectures.toml",
                        format!(
                            "{o}: `{}` has no value and no note (an unknown fact must say why)",
                            f.name
                        ),
                    ));
                }
            }
        }
        for d in &self.devices {
            for n in std::iter::once(&d.id).chain(&d.aliases) {
                if !names.insert(n.to_ascii_lowercase()) {
                    return Err(invalid("devices.toml", format!("name `{n}` is used twice")));
                }
            }
            let o = format!("device {}", d.id);
            if self.arch(&d.arch).is_none() {
                return Err(invalid(
                    "devices.toml",
                    format!("{o}: unknown arch `{}`", d.arch),
                ));
            }
            for k in d.fact_sources() {
                src("devices.toml", &o, k)?;
            }
            for f in d.facts().into_iter().filter(|f| !f.source.is_empty()) {
                if f.value.is_none() && f.note.is_none() {
                    return Err(invalid(
                        "devices.toml",
                        format!(
                            "{o}: `{}` has no value and no note (an unknown fact must say why)",
                            f.name
                        ),
                    ));
                }
            }
            let mut numbers = vec![("bandwidth_gbs", d.bandwidth_gbs.value)];
            numbers.extend(d.peak_tflops.iter().map(|(dt, f)| (dt.as_str(), f.value)));
            numbers.extend(
                d.peak_vector_tflops
                    .iter()
                    .map(|(dt, f)| (dt.as_str(), f.value)),
            );
            for (what, v) in numbers {
                if let Some(v) = v {
                    if !(v.is_finite() && v > 0.0) {
                        return Err(invalid(
                            "devices.toml",
                            format!("{o}: {what} must be a positive number, got {v}"),
                        ));
                    }
                }
            }
        }
        for d in &self.devices {
            for dt in d.peak_tflops.keys().chain(d.peak_vector_tflops.keys()) {
                if !dt.has_peak_table() {
                    return Err(invalid(
                        "devices.toml",
                        format!(
                            "device {}: no peak table for `{}` (peaks are recorded for {})",
                            d.id,
                            dt.as_str(),
                            Dtype::PEAK.map(|d| d.as_str()).join(", ")
                        ),
                    ));
                }
            }
        }
        let mut fids = HashSet::new();
        let mut fnames = HashSet::new();
        for f in &self.features {
            if !fids.insert(&f.id) {
                return Err(invalid(
                    "features.toml",
                    format!("feature `{}` is defined twice", f.id),
                ));
            }
            for n in std::iter::once(&f.id).chain(&f.aliases) {
                if !fnames.insert(n.to_ascii_lowercase()) {
                    return Err(invalid(
                        "features.toml",
                        format!("feature name `{n}` is used twice"),
                    ));
                }
            }
            if !f.members.is_empty() && !f.support.is_empty() {
                return Err(invalid(
                    "features.toml",
                    format!(
                        "feature {}: a generic feature (with `members`) takes its support from them, expected no support table",
                        f.id
                    ),
                ));
            }
            for m in &f.members {
                match self.feature(m) {
                    Some(mf) if mf.members.is_empty() => {}
                    Some(_) => {
                        return Err(invalid(
                            "features.toml",
                            format!("feature {}: member `{m}` is itself generic", f.id),
                        ))
                    }
                    None => {
                        return Err(invalid(
                            "features.toml",
                            format!("feature {}: unknown member feature `{m}`", f.id),
                        ))
                    }
                }
            }
            for (arch, s) in &f.support {
                let o = format!("feature {} on {arch}", f.id);
                if self.arch(arch).is_none() {
                    return Err(invalid(
                        "features.toml",
                        format!("{o}: unknown arch `{arch}`"),
                    ));
                }
                src("features.toml", &o, &s.source)?;
            }
        }
        let mut oids = HashSet::new();
        for o in &self.ops {
            let owner = format!("op {}", o.id);
            if !oids.insert(&o.id) {
                return Err(invalid("ops.toml", format!("{owner}: defined twice")));
            }
            let mut rids = HashSet::new();
            // Vendor-scoped groups (`{nvidia: ... | amd: ...}`) in every printed text.
            let texts = [o.latency_bound.as_str(), o.tile_hint.as_str()]
                .into_iter()
                .chain(o.library.iter().flat_map(|l| {
                    [l.name.as_str(), l.covers.as_str()]
                        .into_iter()
                        .chain(l.min_version.as_deref())
                }))
                .chain(
                    o.algorithm
                        .iter()
                        .flat_map(|a| [a.name.as_str(), a.when.as_str()]),
                )
                .chain(
                    o.risk
                        .iter()
                        .flat_map(|r| [r.title.as_str(), r.why.as_str(), r.mitigation.as_str()]),
                );
            for t in texts {
                crate::scoped::check(t)
                    .map_err(|e| invalid("ops.toml", format!("{owner}: {e}")))?;
            }
            for l in &o.library {
                if !OpInfo::VENDORS.contains(&l.vendor.as_str()) {
                    return Err(invalid(
                        "ops.toml",
                        format!(
                            "{owner}: library `{}`: unknown vendor `{}` (expected one of {})",
                            l.name,
                            l.vendor,
                            OpInfo::VENDORS.join(", ")
                        ),
                    ));
                }
                if !OpInfo::ROLES.contains(&l.role.as_str()) {
                    return Err(invalid(
                        "ops.toml",
                        format!(
                            "{owner}: library `{}`: unknown role `{}` (expected reuse or baseline)",
                            l.name, l.role
                        ),
                    ));
                }
                src("ops.toml", &owner, &l.source)?;
                match (&l.deterministic, &l.deterministic_source) {
                    (Some(_), Some(s)) => src("ops.toml", &owner, s)?,
                    (None, None) => {}
                    _ => {
                        return Err(invalid(
                            "ops.toml",
                            format!(
                                "{owner}: library `{}`: `deterministic` and `deterministic_source` go together",
                                l.name
                            ),
                        ))
                    }
                }
            }
            for a in &o.algorithm {
                src("ops.toml", &owner, &a.source)?;
            }
            for r in &o.risk {
                if !matches!(r.direction.as_deref(), None | Some("forward" | "backward")) {
                    return Err(invalid(
                        "ops.toml",
                        format!(
                            "{owner}: risk `{}`: direction must be forward or backward",
                            r.id
                        ),
                    ));
                }
                if !rids.insert(&r.id) {
                    return Err(invalid(
                        "ops.toml",
                        format!("{owner}: risk `{}` twice", r.id),
                    ));
                }
                src("ops.toml", &owner, &r.source)?;
            }
        }
        let mut mids = HashSet::new();
        for m in &self.measurements {
            let o = format!("measurement {}", m.id);
            let bad = |msg: String| Err(invalid("measurements.toml", format!("{o}: {msg}")));
            if !mids.insert(&m.id) {
                return bad("id is used twice".into());
            }
            if self.device(&m.device).is_none() {
                return bad(format!("unknown device `{}`", m.device));
            }
            if !Measurement::OPS.contains(&m.op.as_str()) {
                return bad(format!(
                    "unknown op `{}` (expected one of {})",
                    m.op,
                    Measurement::OPS.join(", ")
                ));
            }
            if !Measurement::UNITS.contains(&m.unit.as_str()) {
                return bad(format!(
                    "unknown unit `{}` (expected GB/s or TFLOP/s)",
                    m.unit
                ));
            }
            if Dtype::parse(&m.dtype).is_none() {
                return bad(format!("unknown dtype `{}`", m.dtype));
            }
            if !m.achieved.is_finite() || m.achieved < 0.0 {
                return bad(format!(
                    "achieved must be a finite number >= 0, got {}",
                    m.achieved
                ));
            }
            if let Some(f) = m.fraction_of_peak {
                if !f.is_finite() || f < 0.0 {
                    return bad(format!(
                        "fraction_of_peak must be a finite number >= 0, got {f}"
                    ));
                }
            }
            src("measurements.toml", &o, &m.source)?;
        }
        Ok(())
    }
}

impl Arch {
    pub(crate) fn fact_sources(&self) -> Vec<&str> {
        let mut v = vec![
            self.warp_size.source.as_str(),
            &self.max_threads_per_block.source,
            &self.shared_per_block_bytes.source,
            &self.shared_per_sm_bytes.source,
            &self.shared_banks.source,
            &self.registers_per_sm.source,
            &self.max_registers_per_thread.source,
            &self.max_threads_per_sm.source,
            &self.max_blocks_per_sm.source,
            &self.min_toolchain.source,
        ];
        let opt32 = [
            &self.simd_bits,
            &self.max_warps_per_sm,
            &self.shared_alloc_granularity_bytes,
            &self.register_alloc_granularity,
            &self.sm_sub_partitions,
            &self.simds_per_cu,
            &self.max_waves_per_simd,
            &self.vgprs_per_simd_lane,
            &self.cus_per_wgp,
        ];
        v.extend(opt32.into_iter().flatten().map(|f| f.source.as_str()));
        let opt64 = [
            &self.shared_per_block_default_bytes,
            &self.shared_reserved_per_block_bytes,
        ];
        v.extend(opt64.into_iter().flatten().map(|f| f.source.as_str()));
        v
    }
}

impl Device {
    pub(crate) fn fact_sources(&self) -> Vec<&str> {
        let mut v = vec![
            self.compute_units.source.as_str(),
            &self.l2_bytes.source,
            &self.memory_bytes.source,
            &self.bandwidth_gbs.source,
        ];
        if let Some(f) = &self.llc_bytes {
            v.push(&f.source);
        }
        v.extend(
            [&self.clock_mhz, &self.memory_clock_mhz]
                .into_iter()
                .flatten()
                .map(|f| f.source.as_str()),
        );
        if let Some(f) = &self.memory_bus_bits {
            v.push(&f.source);
        }
        if let Some(f) = &self.dies_per_package {
            v.push(&f.source);
        }
        v.extend(self.peak_tflops.values().map(|f| f.source.as_str()));
        v.extend(self.peak_vector_tflops.values().map(|f| f.source.as_str()));
        v
    }
}

impl Kb {
    /// Fills each generic feature's support from its members: per architecture, the first
    /// member that is available (yes, then partial) stands for it, with its toolchain and
    /// source, and the note says which member it is; where no member is, the first member's
    /// entry (no / unknown) stands.
    fn derive_generic_support(&mut self) {
        let derived: Vec<(usize, BTreeMap<String, Support>)> = self
            .features
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.members.is_empty())
            .map(|(i, f)| {
                let mut table = BTreeMap::new();
                for a in &self.archs {
                    let entries: Vec<(&str, &Support)> = f
                        .members
                        .iter()
                        .filter_map(|m| self.support(m, &a.id).map(|s| (m.as_str(), s)))
                        .collect();
                    let pick = entries
                        .iter()
                        .find(|(_, s)| s.status == Availability::Yes)
                        .or_else(|| {
                            entries
                                .iter()
                                .find(|(_, s)| s.status == Availability::Partial)
                        })
                        .or_else(|| entries.iter().find(|(_, s)| s.status == Availability::No))
                        .or(entries.first());
                    if let Some((m, s)) = pick {
                        let mut s = (*s).clone();
                        let via = match s.status {
                            Availability::Yes | Availability::Partial => format!("as `{m}`"),
                            _ => format!(
                                "none of {} (`{m}`: {})",
                                f.members.join(", "),
                                s.status.as_str()
                            ),
                        };
                        s.note = Some(match s.note {
                            Some(n) => format!("{via}; {n}"),
                            None => via,
                        });
                        table.insert(a.id.clone(), s);
                    }
                }
                (i, table)
            })
            .collect();
        for (i, t) in derived {
            self.features[i].support = t;
        }
    }

    /// The member feature a generic feature resolves to on `arch` (itself when not generic).
    pub fn resolve_feature<'a>(&'a self, id: &'a str, arch: &str) -> &'a str {
        let Some(f) = self.feature(id) else { return id };
        if f.members.is_empty() {
            return &f.id;
        }
        f.members
            .iter()
            .find(|m| self.availability(m, arch) == Availability::Yes)
            .or_else(|| {
                f.members
                    .iter()
                    .find(|m| self.availability(m, arch) == Availability::Partial)
            })
            .map(String::as_str)
            .unwrap_or(&f.id)
    }
}
