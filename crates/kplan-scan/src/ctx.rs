//! The scan context: targets in scope (resolved through the KB) and the configuration.

use crate::config::Config;
use crate::diag::Severity;
use crate::error::ScanError;
use crate::rule::{RuleMeta, Scope};
use kplan_kb::{Arch, Availability, Kb, Resolved, Vendor};
use std::path::Path;

/// Default targets when neither `--targets` nor `kplan.toml` names any: one NVIDIA
/// data-centre part, one AMD wave64 part (CDNA3) and one AMD wave32 part (RDNA3). Names the
/// KB does not know are left out of the default scope.
pub const DEFAULT_TARGETS: &[&str] = &["sm_90a", "gfx942", "gfx1100"];

/// One target in scope: the KB's resolution of the name (architecture, device), with the
/// wavefront width this scan compiles it for. Every other fact is the KB's, read through it.
#[derive(Debug, Clone)]
pub struct Target<'kb> {
    pub resolved: Resolved<'kb>,
    /// Warp / wavefront width the compiler uses: the architecture's default, or 64 for an AMD
    /// part that can run it when the project builds with `-mwavefrontsize64` (`hip-flags`).
    pub warp_size: Option<u32>,
}

impl<'kb> Target<'kb> {
    /// The name as given (`gfx942`, `h100`).
    pub fn name(&self) -> &str {
        &self.resolved.name
    }
    /// Display name: the KB architecture id.
    pub fn id(&self) -> &'kb str {
        &self.resolved.arch.id
    }
    pub fn arch(&self) -> &'kb Arch {
        self.resolved.arch
    }
    pub fn vendor(&self) -> Vendor {
        self.resolved.arch.vendor
    }
    /// Every width the hardware can run.
    pub fn warp_sizes(&self) -> &'kb [u32] {
        &self.resolved.arch.warp_sizes
    }
    /// Largest shared memory / LDS per block after opt-in.
    pub fn shared_max(&self) -> Option<u64> {
        self.resolved.arch.shared_per_block_bytes.get()
    }
    /// Shared memory a block gets without opt-in (static `__shared__` is bounded by it).
    pub fn shared_default(&self) -> Option<u64> {
        self.resolved
            .arch
            .shared_per_block_default_bytes
            .as_ref()
            .and_then(|f| f.get())
    }
    pub fn is_wave64(&self) -> bool {
        self.warp_size.is_some_and(|w| w > 32)
    }
    /// Limit for static (non-opt-in) shared memory per block.
    pub fn static_shared_limit(&self) -> Option<u64> {
        self.shared_default().or(self.shared_max())
    }
}

/// What every rule sees: the KB, the targets in scope and the configuration.
pub struct ScanCtx<'kb> {
    pub kb: &'kb Kb,
    pub targets: Vec<Target<'kb>>,
    pub config: Config,
    /// What the whole scan's files define ([`crate::index`]); `None` when each file is
    /// scanned alone (then each file's own definitions are known).
    pub index: Option<std::sync::Arc<crate::index::ProjectIndex>>,
}

impl<'kb> ScanCtx<'kb> {
    /// Resolves `names` through the KB; an empty list means `config.targets`, then
    /// [`DEFAULT_TARGETS`]. Unknown names given by the user are errors.
    pub fn new(kb: &'kb Kb, names: &[String], config: Config) -> Result<ScanCtx<'kb>, ScanError> {
        let (list, from_default, from_config): (Vec<String>, bool, bool) = if !names.is_empty() {
            (names.to_vec(), false, false)
        } else if let Some(t) = config.targets.clone().filter(|t| !t.is_empty()) {
            (t, false, true)
        } else {
            (
                DEFAULT_TARGETS.iter().map(|s| s.to_string()).collect(),
                true,
                false,
            )
        };
        let mut targets: Vec<Target<'kb>> = Vec::new();
        for raw in &list {
            for name in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let r = match kb.resolve(name) {
                    Ok(r) => r,
                    Err(_) if from_default => continue,
                    Err(e) if from_config => {
                        let at = config.target_locations.iter().find(|t| t.name == *raw);
                        let hint = e
                            .suggestion
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default();
                        return Err(ScanError::Config {
                            path: config.path.clone().unwrap_or_default(),
                            line: at.map_or(1, |t| t.line),
                            column: at.map_or(1, |t| t.column),
                            message: format!("unknown target `{}` in `targets`{hint}", e.name),
                        });
                    }
                    Err(e) => {
                        return Err(ScanError::UnknownTarget {
                            name: e.name,
                            suggestion: e.suggestion,
                        })
                    }
                };
                if targets.iter().any(|t| t.id() == r.arch.id) {
                    continue;
                }
                let a = r.arch;
                // `-mwavefrontsize64`: RDNA parts that can run 64 lanes are built for it
                let wave64 =
                    config.forces_wave64() && a.vendor == Vendor::Amd && a.warp_sizes.contains(&64);
                let warp_size = if wave64 { Some(64) } else { a.warp_size.get() };
                targets.push(Target {
                    resolved: r,
                    warp_size,
                });
            }
        }
        Ok(ScanCtx {
            kb,
            targets,
            config,
            index: None,
        })
    }

    /// A context with explicit targets and default configuration (tests, fuzzing, library use).
    pub fn with_targets(kb: &'kb Kb, names: &[&str]) -> Result<ScanCtx<'kb>, ScanError> {
        let v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        if v.is_empty() {
            return Ok(ScanCtx {
                kb,
                targets: Vec::new(),
                config: Config::default(),
                index: None,
            });
        }
        ScanCtx::new(kb, &v, Config::default())
    }

    /// This context with the project index of a multi-file scan.
    pub fn with_index(&self, index: crate::index::ProjectIndex) -> ScanCtx<'kb> {
        self.with_shared_index(std::sync::Arc::new(index))
    }

    /// [`ScanCtx::with_index`] with an index shared by several contexts (one per `kplan.toml`).
    pub fn with_shared_index(
        &self,
        index: std::sync::Arc<crate::index::ProjectIndex>,
    ) -> ScanCtx<'kb> {
        ScanCtx {
            kb: self.kb,
            targets: self.targets.clone(),
            config: self.config.clone(),
            index: Some(index),
        }
    }

    pub fn target_ids(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.id().to_string()).collect()
    }
    pub fn wave64_targets(&self) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| t.is_wave64())
            .map(|t| t.id().to_string())
            .collect()
    }
    pub fn has_wave64(&self) -> bool {
        self.targets.iter().any(Target::is_wave64)
    }
    /// Widest warp in scope (32 when no target says otherwise).
    pub fn max_warp_size(&self) -> u32 {
        self.targets
            .iter()
            .filter_map(|t| t.warp_size)
            .max()
            .unwrap_or(32)
    }
    pub fn vendor_targets(&self, v: Vendor) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| t.vendor() == v)
            .map(|t| t.id().to_string())
            .collect()
    }
    /// The AMD targets in scope that run 32-lane wavefronts (RDNA, unless built for wave64).
    pub fn wave32_amd_targets(&self) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| t.vendor() == Vendor::Amd && !t.is_wave64())
            .map(|t| t.id().to_string())
            .collect()
    }
    pub fn has_vendor(&self, v: Vendor) -> bool {
        self.targets.iter().any(|t| t.vendor() == v)
    }
    /// GPU vendors in scope (CPU fallbacks do not run CUDA/HIP code).
    pub fn gpu_vendor_count(&self) -> usize {
        let mut n = 0;
        for v in [Vendor::Nvidia, Vendor::Amd, Vendor::Intel, Vendor::Apple] {
            if self.has_vendor(v) {
                n += 1;
            }
        }
        n
    }

    /// Severity and affected targets of `meta` under this scope; `None` when the rule is silent
    /// for these targets. `PerFinding` rules get the default severity and all targets.
    pub fn scope_severity(&self, meta: &RuleMeta) -> Option<(Severity, Vec<String>)> {
        let targets = match meta.scope {
            Scope::Wave64 => self.wave64_targets(),
            Scope::Amd => self.vendor_targets(Vendor::Amd),
            Scope::Nvidia => self.vendor_targets(Vendor::Nvidia),
            Scope::MultiVendor => {
                if self.gpu_vendor_count() > 1 {
                    self.targets
                        .iter()
                        .filter(|t| t.vendor() != Vendor::Cpu)
                        .map(|t| t.id().to_string())
                        .collect()
                } else {
                    Vec::new()
                }
            }
            Scope::PerFinding => self.target_ids(),
        };
        if targets.is_empty() {
            None
        } else {
            Some((meta.severity, targets))
        }
    }

    /// Targets in scope where the KB says `feature` is missing or partial, with the status.
    /// Targets the KB has no entry for are left out (unknown is not reported as missing).
    pub fn lacking(&self, feature: &str) -> Vec<(String, Availability)> {
        self.targets
            .iter()
            .filter(|t| t.vendor() != Vendor::Cpu)
            .filter_map(|t| match self.kb.availability(feature, t.id()) {
                a @ (Availability::No | Availability::Partial) => Some((t.id().to_string(), a)),
                _ => None,
            })
            .collect()
    }

    /// Smallest static shared-memory limit over the GPU targets in scope, with its target.
    pub fn min_static_shared(&self) -> Option<(u64, String)> {
        self.targets
            .iter()
            .filter(|t| t.vendor() != Vendor::Cpu)
            .filter_map(|t| t.static_shared_limit().map(|b| (b, t.id().to_string())))
            .min()
    }
    /// Smallest opt-in shared-memory limit over the GPU targets in scope, with its target.
    pub fn min_max_shared(&self) -> Option<(u64, String)> {
        self.targets
            .iter()
            .filter(|t| t.vendor() != Vendor::Cpu)
            .filter_map(|t| t.shared_max().map(|b| (b, t.id().to_string())))
            .min()
    }

    /// Whether rule `id` runs on `path` under the configuration.
    pub fn rule_enabled(&self, id: &str, path: &Path) -> bool {
        self.config.rule_enabled(id, path)
    }
    /// Whether `path` is the project's portability header (where platform branches belong).
    pub fn is_header(&self, path: &Path) -> bool {
        self.config.is_header(path)
    }
}
