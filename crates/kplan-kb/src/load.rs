use crate::model::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The data files, in the order they are read. A `--kb DIR` must hold all four.
pub const FILES: [&str; 4] = ["sources.toml", "architectures.toml", "devices.toml", "features.toml"];

const BUILTIN: [(&str, &str); 4] = [
    ("sources.toml", include_str!("../data/sources.toml")),
    ("architectures.toml", include_str!("../data/architectures.toml")),
    ("devices.toml", include_str!("../data/devices.toml")),
    ("features.toml", include_str!("../data/features.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum KbError {
    #[error("{path}: cannot read knowledge-base file: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}:{column}: {message}")]
    Parse { path: PathBuf, line: usize, column: usize, message: String },
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

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T, KbError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_col(text, s.start))
            .unwrap_or((1, 1));
        KbError::Parse { path: path.to_owned(), line, column, message: e.message().to_string() }
    })
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = offset - before.iter().rposition(|&b| b == b'\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

impl Kb {
    /// The knowledge base compiled into kplan.
    pub fn builtin() -> &'static Kb {
        static KB: OnceLock<Kb> = OnceLock::new();
        KB.get_or_init(|| {
            Kb::from_texts(Path::new("<builtin kb>"), &BUILTIN.map(|(n, t)| (n, t.to_string())))
                .expect("the built-in knowledge base is validated by kplan-kb's tests")
        })
    }

    /// Reads the four data files from `dir` (a user's copy of the KB).
    pub fn load_dir(dir: &Path) -> Result<Kb, KbError> {
        let mut texts = Vec::new();
        for name in FILES {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path)
                .map_err(|source| KbError::Io { path: path.clone(), source })?;
            texts.push((name, text));
        }
        let texts: [(&str, String); 4] = texts.try_into().expect("four files");
        Kb::from_texts(dir, &texts)
    }

    fn from_texts(dir: &Path, texts: &[(&str, String); 4]) -> Result<Kb, KbError> {
        let p = |name: &str| dir.join(name);
        let sources: SourcesFile = parse(&p(texts[0].0), &texts[0].1)?;
        let archs: ArchFile = parse(&p(texts[1].0), &texts[1].1)?;
        let devices: DeviceFile = parse(&p(texts[2].0), &texts[2].1)?;
        let features: FeatureFile = parse(&p(texts[3].0), &texts[3].1)?;
        let kb = Kb {
            archs: archs.arch,
            devices: devices.device,
            features: features.feature,
            sources: sources.sources,
        };
        kb.validate(dir)?;
        Ok(kb)
    }

    /// Cross-references: every source key resolves, every device names a known architecture,
    /// every reference device exists, names and aliases are unique.
    fn validate(&self, dir: &Path) -> Result<(), KbError> {
        let invalid = |file: &str, message: String| KbError::Invalid { path: dir.join(file), message };
        let src = |file: &str, owner: &str, key: &str| -> Result<(), KbError> {
            if self.sources.contains_key(key) {
                Ok(())
            } else {
                Err(invalid(file, format!("{owner}: unknown source key `{key}` (not in sources.toml)")))
            }
        };
        let mut names = HashSet::new();
        for a in &self.archs {
            for n in std::iter::once(&a.id).chain(&a.aliases) {
                if !names.insert(n.to_ascii_lowercase()) {
                    return Err(invalid("architectures.toml", format!("name `{n}` is used twice")));
                }
            }
            let o = format!("arch {}", a.id);
            for k in a.fact_sources() {
                src("architectures.toml", &o, k)?;
            }
            if let Some(d) = &a.reference_device {
                if self.device(d).is_none() {
                    return Err(invalid("architectures.toml", format!("{o}: unknown reference_device `{d}`")));
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
                return Err(invalid("devices.toml", format!("{o}: unknown arch `{}`", d.arch)));
            }
            for k in d.fact_sources() {
                src("devices.toml", &o, k)?;
            }
        }
        let mut fids = HashSet::new();
        for f in &self.features {
            if !fids.insert(&f.id) {
                return Err(invalid("features.toml", format!("feature `{}` is defined twice", f.id)));
            }
            for (arch, s) in &f.support {
                let o = format!("feature {} on {arch}", f.id);
                if self.arch(arch).is_none() {
                    return Err(invalid("features.toml", format!("{o}: unknown arch `{arch}`")));
                }
                src("features.toml", &o, &s.source)?;
            }
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
        if let Some(f) = &self.shared_per_block_default_bytes {
            v.push(&f.source);
        }
        if let Some(f) = &self.simd_bits {
            v.push(&f.source);
        }
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
        v.extend(self.peak_tflops.values().map(|f| f.source.as_str()));
        v.extend(self.peak_vector_tflops.values().map(|f| f.source.as_str()));
        v
    }
}
