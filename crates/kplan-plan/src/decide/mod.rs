//! The decision engine. Each submodule makes one section's decisions from the spec and the KB;
//! every decision records the inputs and KB facts (with source keys) behind it.

pub mod backend;
pub mod checklist;
pub mod ci;
pub mod hazards;
pub mod perf;
pub mod risks;
#[cfg(test)]
mod scope_tests;
pub mod strategy;
pub mod tiles;
pub mod verdict;
pub mod when;

use crate::analysis::Work;
use crate::spec::Spec;
use kplan_kb::{Device, Kb, OpInfo, Vendor};

/// What one target's code is written in (section 3), as the strategy decided it. The printed
/// names are the plan's `strategy.per_target[].abstraction` strings.
///
/// Every spec level ([`crate::spec::Abstraction`], what a team allows) is one of these by the
/// same name (the spec's `vendor-blas` is `vendor-library`); [`Abstraction::of_level`] converts
/// by that name. The plan's outcomes add the library kinds, the CPU fallback and `none`, which
/// a spec cannot allow, so the two are separate types.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::AsRefStr,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Abstraction {
    /// The framework's built-in op (PyTorch, JAX, ...).
    Framework,
    /// Libraries shipped with the vendor's toolkit (cuBLAS, rocBLAS, CUB, ...).
    #[strum(to_string = "vendor-library", serialize = "vendor-blas")]
    VendorLibrary,
    /// Open-source kernel libraries (FlashAttention, CK, ...).
    KernelLibrary,
    /// Both kinds of library.
    Library,
    Triton,
    HipSingleSource,
    Cutlass,
    ComposableKernel,
    PerBackend,
    Sycl,
    Opencl,
    Metal,
    /// The hand-written CPU loop nest (also the verification reference).
    CpuFallback,
    /// Nothing allowed reaches the target.
    None,
}

impl Abstraction {
    /// A call into existing code (a library or the framework): no kernel is written.
    pub fn is_library(self) -> bool {
        matches!(
            self,
            Self::Framework | Self::VendorLibrary | Self::KernelLibrary | Self::Library
        )
    }
    /// GPU kernel code written in CUDA/HIP C++ (the portability header's language).
    pub fn is_cuda_hip(self) -> bool {
        matches!(
            self,
            Self::PerBackend | Self::HipSingleSource | Self::Cutlass | Self::ComposableKernel
        )
    }
    /// The efficiency-table strategy group (data/efficiency.toml) this code is measured as.
    pub fn efficiency_group(self) -> &'static str {
        match self {
            Self::Framework => "framework",
            Self::VendorLibrary | Self::KernelLibrary | Self::Library => "vendor-library",
            Self::Triton => "triton",
            _ => "hand-written",
        }
    }
    /// The per-target strategy of a spec abstraction level (the library level is labelled by
    /// the libraries themselves, see [`verdict::library_label`]).
    pub fn of_level(a: crate::spec::Abstraction) -> Self {
        // Every level parses (`every_spec_level_is_a_strategy` below): `None` is never the
        // answer for a real level.
        a.as_str().parse().unwrap_or(Self::None)
    }
}

/// Everything every section decides from, built once per plan: the spec, the KB, the op
/// knowledge entry, the work model and the resolved targets (in spec order; every per-target
/// decision is a vector aligned with [`Context::targets`]).
pub struct Context<'a, 'kb> {
    pub spec: &'a Spec,
    pub kb: &'kb Kb,
    pub op: Option<&'kb OpInfo>,
    pub work: Work,
    pub targets: Vec<Target<'kb>>,
}

impl<'a, 'kb> Context<'a, 'kb> {
    pub fn new(spec: &'a Spec, kb: &'kb Kb) -> Self {
        Context {
            spec,
            kb,
            op: kb.op_info(spec.kb_op()),
            work: crate::analysis::work(spec),
            targets: resolve_targets(spec, kb),
        }
    }
    pub fn gpu(&self) -> impl Iterator<Item = &Target<'kb>> {
        self.targets.iter().filter(|t| t.is_gpu())
    }
}

/// One spec target: the knowledge base's resolution of the name (its `name`, `arch` and `via`
/// read through it), its position in the spec, and the device as one kernel launch sees it,
/// which is what the planner sizes work for (one GCD of an MI250X, not the whole product the
/// resolution names).
#[derive(Debug, Clone)]
pub struct Target<'kb> {
    /// Position in the spec's target list (and in every per-target decision vector).
    pub index: usize,
    /// The knowledge base's resolution of the name as the spec wrote it.
    pub resolved: kplan_kb::Resolved<'kb>,
    /// The device as one kernel launch sees it (one GCD of an MI250X).
    pub device: Option<std::borrow::Cow<'kb, Device>>,
}

impl<'kb> std::ops::Deref for Target<'kb> {
    type Target = kplan_kb::Resolved<'kb>;
    fn deref(&self) -> &kplan_kb::Resolved<'kb> {
        &self.resolved
    }
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
    /// A device of several dies that one launch sees apart: an MI250X-style package of GCDs
    /// (each its own device) or an MI300-class device of XCDs (one L2 per XCD).
    pub fn is_multi_die(&self) -> bool {
        self.has_gcds() || self.has_xcds()
    }
    /// A package of dies that are separate devices (MI250X: one GCD per launch).
    pub fn has_gcds(&self) -> bool {
        self.device
            .as_deref()
            .is_some_and(|d| d.dies_per_package.is_some())
    }
    /// One device of several XCDs with their own L2s (MI300-class, from the KB's CU note).
    pub fn has_xcds(&self) -> bool {
        self.device.as_deref().is_some_and(|d| {
            d.compute_units
                .note
                .as_deref()
                .is_some_and(|n| n.contains("per XCD"))
        })
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
        .enumerate()
        .map(|(index, r)| Target {
            index,
            device: r.device.map(|d| d.per_kernel_view()),
            resolved: r,
        })
        .collect()
}

/// The vendor-scope tags of the targets in scope (their vendors and AMD families), for KB text
/// with vendor-scoped groups ([`kplan_kb::scoped`]).
pub(crate) fn scope_tags(targets: &[Target]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for t in targets {
        v.push(t.vendor().as_str());
        if t.is_cdna() {
            v.push("cdna");
        }
        if t.is_rdna() {
            v.push("rdna");
        }
    }
    v.sort();
    v.dedup();
    v
}

/// KB text reduced to the vendors of `targets` in scope.
pub(crate) fn scoped(s: &str, targets: &[Target]) -> String {
    kplan_kb::scoped::scoped(s, &scope_tags(targets))
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

#[cfg(test)]
mod tests {
    use super::Abstraction;
    use crate::spec::Abstraction as Level;

    #[test]
    fn every_spec_level_is_a_strategy() {
        for l in Level::ALL {
            let a = Abstraction::of_level(l);
            assert_ne!(
                a,
                Abstraction::None,
                "level `{}` has no strategy",
                l.as_str()
            );
            let expected = match l {
                Level::VendorBlas => "vendor-library",
                _ => l.as_str(),
            };
            assert_eq!(a.as_ref(), expected, "level `{}`", l.as_str());
        }
        // the plan's outcomes print as before
        assert_eq!(Abstraction::VendorLibrary.to_string(), "vendor-library");
        assert_eq!(Abstraction::CpuFallback.as_ref(), "cpu-fallback");
    }
}
