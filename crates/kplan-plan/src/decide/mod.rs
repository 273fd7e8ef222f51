//! The decision engine. Each submodule makes one section's decisions from the spec and the KB;
//! every decision records the inputs and KB facts (with source keys) behind it.

pub mod backend;
pub mod checklist;
pub mod ci;
pub mod hazards;
pub mod perf;
pub mod risks;
pub mod strategy;
pub mod tiles;
pub mod verdict;
pub mod when;

use crate::spec::Spec;
use kplan_kb::{Arch, Device, Kb, ResolvedVia, Vendor};

/// One spec target, resolved.
#[derive(Debug, Clone)]
pub struct Target<'kb> {
    /// As the spec wrote it.
    pub name: String,
    pub arch: &'kb Arch,
    /// The device as one kernel launch sees it (one GCD of an MI250X).
    pub device: Option<std::borrow::Cow<'kb, Device>>,
    pub via: ResolvedVia,
}

impl Target<'_> {
    pub fn vendor(&self) -> Vendor {
        self.arch.vendor
    }
    pub fn is_gpu(&self) -> bool {
        self.arch.vendor != Vendor::Cpu
    }
    pub fn warp(&self) -> Option<u32> {
        self.arch.warp_size.value
    }
    /// RDNA-class AMD architecture (KB family): runs wave32 by default, wave64 selectable.
    pub fn is_rdna(&self) -> bool {
        self.arch.is_rdna()
    }
    /// CDNA-class (datacenter, MFMA, wave64) AMD architecture (KB family).
    pub fn is_cdna(&self) -> bool {
        self.arch.is_cdna()
    }
    /// NVIDIA SM number (`sm_90a` -> 90), if this is an NVIDIA architecture.
    pub fn sm(&self) -> Option<u32> {
        self.arch
            .compute_capability()
            .map(|(major, minor)| major * 10 + minor)
    }
}

/// Resolves every spec target. The spec parser already rejected unknown names; a target the
/// KB no longer knows (a `--kb` swap between parse and plan) is skipped.
pub fn resolve_targets<'kb>(spec: &Spec, kb: &'kb Kb) -> Vec<Target<'kb>> {
    spec.targets
        .iter()
        .filter_map(|n| kb.resolve(n).ok())
        .map(|r| Target {
            name: r.name,
            arch: r.arch,
            device: r.device.map(|d| d.per_kernel_view()),
            via: r.via,
        })
        .collect()
}

/// `a, b and c`
pub(crate) fn join_names<S: AsRef<str>>(v: &[S]) -> String {
    match v.len() {
        0 => String::new(),
        1 => v[0].as_ref().to_string(),
        _ => {
            let head: Vec<&str> = v[..v.len() - 1].iter().map(|s| s.as_ref()).collect();
            format!("{} and {}", head.join(", "), v[v.len() - 1].as_ref())
        }
    }
}

pub(crate) fn kib(b: u64) -> String {
    if b % 1024 == 0 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}
