//! kplan-gen: the portability header (`kplan header`, section 5 of a plan).
//!
//! The header is one C/C++ file in which every platform difference lives: warp size, lane-mask
//! type, ballot, shuffles, reductions, fences, atomics and qualifiers, for CUDA, HIP on AMD
//! (wave64 and wave32) and host C/C++ (one lane per warp). Its text is a pure function of the
//! [`HeaderConfig`], so the same target set always yields the same bytes.
//!
//! The backend fragments live in `src/header/*.h`; [`render_header`] puts together the ones in
//! scope with a generated preamble.

mod spec;

pub use spec::{spec_targets, spec_targets_from_str, SpecError, SpecTarget};

use kplan_kb::{Arch, Vendor};

/// The backends one header covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeaderConfig {
    /// NVIDIA targets (nvcc or clang CUDA).
    pub cuda: bool,
    /// AMD targets that run 64-lane wavefronts (gfx9: gfx90a, gfx942, gfx950).
    pub hip_wave64: bool,
    /// AMD targets that run 32-lane wavefronts (gfx10, gfx11, gfx12).
    pub hip_wave32: bool,
    /// The CPU fallback (plain C/C++, one lane per warp).
    pub host: bool,
    /// Architecture ids the header was generated for, listed in its preamble (sorted, unique).
    pub targets: Vec<String>,
}

impl HeaderConfig {
    /// Every backend kplan knows; the committed `include/kplan_portability.h` is this one.
    pub fn all() -> HeaderConfig {
        HeaderConfig {
            cuda: true,
            hip_wave64: true,
            hip_wave32: true,
            host: true,
            targets: Vec::new(),
        }
    }

    /// The backends the given architectures need. AMD architectures count by their default
    /// wavefront size; one whose size is unknown to the KB (or that also runs the other size)
    /// brings in both AMD variants. Vendors without a backend here (Intel, Apple) add nothing.
    pub fn from_archs(archs: &[&Arch]) -> HeaderConfig {
        let mut c = HeaderConfig {
            cuda: false,
            hip_wave64: false,
            hip_wave32: false,
            host: false,
            targets: Vec::new(),
        };
        for a in archs {
            match a.vendor {
                Vendor::Nvidia => c.cuda = true,
                Vendor::Amd => match a.warp_size.get() {
                    Some(64) => c.hip_wave64 = true,
                    Some(32) => c.hip_wave32 = true,
                    _ => {
                        c.hip_wave64 = true;
                        c.hip_wave32 = true;
                    }
                },
                Vendor::Cpu => c.host = true,
                Vendor::Intel | Vendor::Apple => {}
            }
            c.targets.push(a.id.clone());
        }
        c.targets.sort();
        c.targets.dedup();
        c
    }

    pub fn hip(&self) -> bool {
        self.hip_wave64 || self.hip_wave32
    }

    /// Names of the backends in scope, in header order.
    pub fn backend_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.cuda {
            v.push("CUDA (NVIDIA)");
        }
        if self.hip_wave64 {
            v.push("HIP on AMD wave64");
        }
        if self.hip_wave32 {
            v.push("HIP on AMD wave32");
        }
        if self.host {
            v.push("host C/C++ (one lane)");
        }
        v
    }
}

const PRELUDE: &str = include_str!("header/prelude.h");
const CUDA: &str = include_str!("header/cuda.h");
const HIP_BODY: &str = include_str!("header/hip.h");
const HIP_WAVE: &str = include_str!("header/hip_wave.h");
const HOST: &str = include_str!("header/host.h");
const COMMON: &str = include_str!("header/common.h");
const SIMT: &str = include_str!("simt/kplan_simt.h");

/// The file name under which [`render_simt_runtime`] is written next to a kernel build.
pub const SIMT_RUNTIME_NAME: &str = "kplan_simt.h";

/// The cpu-simt runtime: CUDA's names (and the portability header's KPLAN_ names) for kernel
/// source compiled by the host C++ compiler with W-lane warps (`-DKPLAN_SIMT_WARP=W`), every GPU
/// thread a fiber. Force-included before the kernel source; the translation unit that launches
/// defines `KPLAN_SIMT_MAIN`. Deterministic text.
pub fn render_simt_runtime() -> String {
    SIMT.replace("@KPLAN_COMMON@\n", COMMON)
}

/// The HIP backend fragment with its wave-size block in place.
fn hip_text() -> String {
    HIP_BODY.replace("@KPLAN_HIP_WAVE_SIZE@\n", HIP_WAVE)
}

/// A self-contained translation unit holding only the header's backend selection and AMD
/// wave-size logic (no HIP runtime include), so tests can compile it with the compiler's
/// wave-size macros removed or contradicted and check what `KPLAN_WARP_SIZE` becomes.
pub fn hip_wave_size_probe() -> String {
    let mut s = String::from(PRELUDE);
    s.push_str("#define KPLAN_DETAIL_SCOPE_WAVE64 1\n#define KPLAN_DETAIL_SCOPE_WAVE32 1\n");
    s.push_str(HIP_WAVE);
    s
}

/// The first line of every generated header; tests and `kplan header` users can spot it.
pub const GENERATED_MARKER: &str = "@generated by `kplan header`";

/// Renders the portability header for `cfg`. Deterministic: no dates, paths or versions.
pub fn render_header(cfg: &HeaderConfig) -> String {
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(&format!(
        "/* kplan_portability.h -- {GENERATED_MARKER}; do not edit.\n"
    ));
    s.push_str(" *\n * One header for every platform difference a portable GPU kernel meets. Include it first; it\n");
    s.push_str(" * includes the CUDA or HIP runtime header itself. Write the kernel against the KPLAN_ and\n");
    s.push_str(" * kplan_ names only.\n *\n");
    let backends = cfg.backend_names();
    s.push_str(&format!(
        " * Backends: {}.\n",
        if backends.is_empty() {
            "none".to_string()
        } else {
            backends.join(", ")
        }
    ));
    if cfg.targets.is_empty() {
        s.push_str(" * Targets: every target kplan knows.\n");
    } else {
        s.push_str(&format!(" * Targets: {}.\n", cfg.targets.join(", ")));
    }
    s.push_str(" * Compiling for a backend outside this set stops with an #error that says so.\n");
    s.push_str(" *\n * Semantics shared by every backend: cross-lane operations (ballot, shuffles, reductions)\n");
    s.push_str(
        " * must be executed by all lanes of the warp together (converged code); masks are\n",
    );
    s.push_str(" * kplan_lane_mask_t with bit i = lane i; widths are powers of two <= KPLAN_WARP_SIZE.\n */\n");
    s.push_str("#ifndef KPLAN_PORTABILITY_H\n#define KPLAN_PORTABILITY_H\n\n");
    s.push_str(PRELUDE);
    s.push('\n');
    // Scope: which backends this text carries.
    s.push_str("/* Scope of this header (generated from the target set). */\n");
    let flag = |b: bool| if b { 1 } else { 0 };
    s.push_str(&format!(
        "#define KPLAN_DETAIL_SCOPE_CUDA {}\n",
        flag(cfg.cuda)
    ));
    s.push_str(&format!(
        "#define KPLAN_DETAIL_SCOPE_WAVE64 {}\n",
        flag(cfg.hip_wave64)
    ));
    s.push_str(&format!(
        "#define KPLAN_DETAIL_SCOPE_WAVE32 {}\n",
        flag(cfg.hip_wave32)
    ));
    s.push_str(&format!(
        "#define KPLAN_DETAIL_SCOPE_HOST {}\n",
        flag(cfg.host)
    ));
    s.push_str("#if KPLAN_BACKEND_CUDA && !KPLAN_DETAIL_SCOPE_CUDA\n#  error \"kplan: this header was generated without an NVIDIA target; regenerate it with `kplan header --targets ...` including one\"\n#endif\n");
    s.push_str("#if KPLAN_BACKEND_HIP && !(KPLAN_DETAIL_SCOPE_WAVE64 || KPLAN_DETAIL_SCOPE_WAVE32)\n#  error \"kplan: this header was generated without an AMD target; regenerate it with `kplan header --targets ...` including one\"\n#endif\n");
    s.push_str("#if KPLAN_BACKEND_HOST && !KPLAN_DETAIL_SCOPE_HOST\n#  error \"kplan: this header was generated without the CPU (host) target; regenerate it with `kplan header --targets ...` including one\"\n#endif\n\n");
    if cfg.cuda {
        s.push_str(CUDA);
        s.push('\n');
    }
    if cfg.hip() {
        s.push_str(&hip_text());
        s.push('\n');
    }
    if cfg.host {
        s.push_str(HOST);
        s.push('\n');
    }
    if cfg.cuda || cfg.hip() || cfg.host {
        s.push_str(COMMON);
        s.push('\n');
    }
    s.push_str("#endif /* KPLAN_PORTABILITY_H */\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_is_deterministic_and_scoped() {
        let all = render_header(&HeaderConfig::all());
        assert_eq!(all, render_header(&HeaderConfig::all()));
        assert!(all.contains("KPLAN_BACKEND_CUDA") && all.contains("__shfl_xor_sync"));
        assert!(all.contains("__builtin_amdgcn_ballot_w64"));
        let cuda_only = HeaderConfig {
            cuda: true,
            hip_wave64: false,
            hip_wave32: false,
            host: false,
            targets: vec!["sm_90a".into()],
        };
        let t = render_header(&cuda_only);
        assert!(t.contains("__shfl_xor_sync"));
        assert!(!t.contains("__builtin_amdgcn"));
        assert!(t.contains("#define KPLAN_DETAIL_SCOPE_WAVE64 0"));
        assert!(t.contains("Targets: sm_90a."));
    }

    #[test]
    fn every_required_name_is_defined_for_each_backend() {
        let names = [
            "KPLAN_WARP_SIZE",
            "kplan_lane_mask_t",
            "KPLAN_FULL_MASK",
            "KPLAN_BALLOT(pred)",
            "KPLAN_ACTIVEMASK()",
            "KPLAN_POPC_MASK(m)",
            "KPLAN_FFS_MASK(m)",
            "KPLAN_LANE_ID()",
            "KPLAN_WARP_ID()",
            "KPLAN_SYNCWARP()",
            "KPLAN_FENCE_BLOCK()",
            "KPLAN_FENCE_DEVICE()",
            "KPLAN_FENCE_SYSTEM()",
            "KPLAN_RESTRICT",
            "KPLAN_INLINE",
            "KPLAN_LAUNCH_BOUNDS(max_threads)",
            "KPLAN_SHARED_ALIGN",
            "kplan_warp_size(int device)",
            "kplan_atomic_add",
        ];
        let hip = hip_text();
        for (frag, label) in [(CUDA, "cuda"), (hip.as_str(), "hip"), (HOST, "host")] {
            for n in names {
                let defined = frag.contains(&format!("#define {n}"))
                    || frag.contains(&format!("#  define {n}"))
                    || frag.contains(&format!("typedef unsigned int {n}"))
                    || frag.contains(&format!("typedef unsigned long long {n}"))
                    || frag.contains(&format!("int {n}"))
                    || frag.contains(&format!("T {n}("));
                assert!(defined, "{n} is not defined in the {label} fragment");
            }
        }
        for n in [
            "KPLAN_SHFL(v, src)",
            "KPLAN_SHFL_DOWN(v, off)",
            "KPLAN_SHFL_UP(v, off)",
            "KPLAN_SHFL_XOR(v, mask)",
        ] {
            assert!(COMMON.contains(&format!("#  define {n}")), "{n}");
        }
        for n in [
            "kplan_warp_reduce_sum",
            "kplan_warp_reduce_max",
            "kplan_warp_reduce_min",
        ] {
            assert!(COMMON.contains(&format!("T {n}(T v, int width")), "{n}");
        }
    }

    #[test]
    fn wavefront_size_has_more_than_one_source_of_truth() {
        let hip = hip_text();
        #[allow(non_snake_case)]
        let HIP = hip.as_str();
        // ROCm 7 deprecates __AMDGCN_WAVEFRONT_SIZE: the header prefers the new spelling and
        // cross-checks against the gfx family macros.
        assert!(HIP.contains("defined(__AMDGCN_WAVEFRONT_SIZE__)"));
        assert!(HIP.contains("defined(__GFX9__)"));
        assert!(HIP.contains("defined(__GFX11__)"));
        let first_new = HIP.find("__AMDGCN_WAVEFRONT_SIZE__").unwrap();
        let first_old = HIP.find("defined(__AMDGCN_WAVEFRONT_SIZE)").unwrap();
        assert!(
            first_new < first_old,
            "the ROCm 7 spelling must be preferred"
        );
        assert!(
            !strip_comments(HIP).contains("warpSize"),
            "warpSize is not constexpr on ROCm 7"
        );
        // The deprecated macro is read only in one #elif, never as the sole definition.
        let code = strip_comments(HIP);
        assert_eq!(
            code.matches("__AMDGCN_WAVEFRONT_SIZE\n").count()
                + code.matches("__AMDGCN_WAVEFRONT_SIZE)").count(),
            2
        );
    }

    /// The code of a C fragment without its /* */ comments.
    pub(crate) fn strip_comments(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("/*") {
            out.push_str(&rest[..i]);
            match rest[i..].find("*/") {
                Some(j) => rest = &rest[i + j + 2..],
                None => return out,
            }
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn from_archs_picks_backends_by_vendor_and_wave_size() {
        let kb = kplan_kb::Kb::builtin();
        let archs: Vec<&Arch> = kb.archs.iter().collect();
        let c = HeaderConfig::from_archs(&archs);
        for a in &kb.archs {
            match (a.vendor, a.warp_size.get()) {
                (Vendor::Nvidia, _) => assert!(c.cuda),
                (Vendor::Amd, Some(64)) => assert!(c.hip_wave64),
                (Vendor::Amd, Some(32)) => assert!(c.hip_wave32),
                (Vendor::Cpu, _) => assert!(c.host),
                _ => {}
            }
        }
        let mut sorted = c.targets.clone();
        sorted.sort();
        assert_eq!(sorted, c.targets);
    }
}
