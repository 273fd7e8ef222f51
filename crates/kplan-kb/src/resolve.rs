use crate::model::*;

/// What a name in a spec or on the command line resolved to.
#[derive(Debug, Clone)]
pub struct Resolved<'kb> {
    /// The name as the user wrote it.
    pub name: String,
    pub arch: &'kb Arch,
    /// The device whose numbers apply: the named device, or the architecture's reference device.
    pub device: Option<&'kb Device>,
    pub via: ResolvedVia,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedVia {
    /// The name is an architecture id or alias; `device` is its documented reference device.
    Arch,
    /// The name is a device id or product alias.
    Device,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown target `{name}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
pub struct ResolveError {
    pub name: String,
    pub suggestion: Option<String>,
}

impl Kb {
    /// Resolves an architecture id, a device id, or an alias of either. Matching ignores case,
    /// treats spaces and underscores between words like `-` ("RTX 4090" = `rtx-4090`), and
    /// drops an AMD target-id feature suffix (`gfx90a:xnack+` = `gfx90a`).
    pub fn resolve(&self, name: &str) -> Result<Resolved<'_>, ResolveError> {
        let n = name.trim().to_ascii_lowercase();
        std::iter::once(n.clone())
            .chain(spellings(&n))
            .find_map(|variant| self.resolve_exact(name, &variant))
            .ok_or_else(|| ResolveError {
                name: name.to_string(),
                suggestion: self.suggest(&n),
            })
    }

    fn resolve_exact(&self, name: &str, n: &str) -> Option<Resolved<'_>> {
        let hit = |id: &str, aliases: &[String]| {
            id.eq_ignore_ascii_case(n) || aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
        };
        if let Some(arch) = self.archs.iter().find(|a| hit(&a.id, &a.aliases)) {
            let device = arch
                .reference_device
                .as_deref()
                .and_then(|d| self.device(d));
            return Some(Resolved {
                name: name.to_string(),
                arch,
                device,
                via: ResolvedVia::Arch,
            });
        }
        let dev = self.devices.iter().find(|d| hit(&d.id, &d.aliases))?;
        let arch = self.arch(&dev.arch)?;
        Some(Resolved {
            name: name.to_string(),
            arch,
            device: Some(dev),
            via: ResolvedVia::Device,
        })
    }

    /// Every name `resolve` accepts.
    pub fn target_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for a in &self.archs {
            v.push(&a.id);
            v.extend(a.aliases.iter().map(String::as_str));
        }
        for d in &self.devices {
            v.push(&d.id);
            v.extend(d.aliases.iter().map(String::as_str));
        }
        v
    }

    /// Closest known target name, if one is close enough to be a likely typo.
    pub fn suggest(&self, name: &str) -> Option<String> {
        closest(name, self.target_names())
    }
}

/// Other spellings of a lower-cased name: AMD target-id features dropped
/// (`gfx942:sramecc+:xnack-`), whitespace runs written as `-` (`rtx 4090`), then `_` as `-`
/// (`rx_7900_xtx`). Ids that contain `_` (`sm_90a`, `cpu-x86_64`) match before these apply.
fn spellings(n: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let base = match n.split_once(':') {
        Some((head, _)) if head.starts_with("gfx") => head.trim().to_string(),
        _ => n.to_string(),
    };
    let dashed = base.split_whitespace().collect::<Vec<_>>().join("-");
    let underscores = dashed.replace('_', "-");
    for v in [base, dashed, underscores] {
        if v != n && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The known name closest to `name` by edit distance (Damerau-Levenshtein), if it is a likely
/// misspelling of it: at most one edit for names up to four characters, two up to eight, a
/// quarter of the length beyond; ties go to the closest by Jaro-Winkler. Only names of the same kind should be passed as candidates.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let n = name.trim().to_ascii_lowercase();
    let limit = match n.chars().count() {
        0..=4 => 1,
        5..=8 => 2,
        l => l / 4,
    };
    candidates
        .into_iter()
        .map(|c| {
            let lc = c.to_ascii_lowercase();
            (
                strsim::damerau_levenshtein(&n, &lc),
                strsim::jaro_winkler(&n, &lc),
                c,
            )
        })
        .filter(|(d, _, _)| *d <= limit && *d > 0)
        // Fewest edits; among equals, the most similar by Jaro-Winkler (then the first).
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|(_, _, c)| c.to_string())
}
