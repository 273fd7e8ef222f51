//! `implicit-warp-sync`: warp-synchronous code that relies on lockstep execution without a sync.

use crate::cuda::{is_thread_ident, Cx};
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "implicit-warp-sync",
    summary: "warp-synchronous code that relies on lockstep execution without a sync",
    what: "Finds the legacy warp intrinsics without a mask (`__shfl_down`, `__ballot`, `__any`, `__all`, ...) in \
CUDA sources, and `volatile` shared-memory reductions that read neighbours at fixed offsets (`s[tid] += \
s[tid + 16]`) in a function with no `__syncwarp`.",
    why: "Since Volta, NVIDIA warps are not guaranteed to run in lockstep; the unmasked intrinsics are removed \
for sm_70 and newer and the volatile pattern races. On AMD the fixed offsets assume a 32-lane warp. Both give \
wrong results, intermittently.",
    example: "if (tid < 32) {\n    volatile float* s = sdata;\n    s[tid] += s[tid + 32];\n    s[tid] += s[tid + 16];\n}",
    use_instead: "if (tid < warpSize) {\n    float v = sdata[tid] + sdata[tid + warpSize];\n    for (int o = warpSize / 2; o > 0; o /= 2)\n        v += __shfl_down_sync(__activemask(), v, o);\n}",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !(cx.has("volatile") || cx.has("__shfl") || cx.has("__ballot") || cx.has("__any") || cx.has("__all")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let nv = cx.ctx.vendor_targets(Vendor::Nvidia);
    // .hip files and files including the HIP runtime get HIP's wrappers for the unmasked forms
    let is_hip = cx.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("hip")) || src.text.contains("hip/hip_runtime") || in_hip_dir(cx.path);
    if !nv.is_empty() && !is_hip {
        for i in 0..n {
            let w = src.s(i);
            if matches!(w, "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor" | "__ballot" | "__any" | "__all")
                && src.is(i + 1, "(")
                && src.platform(i) != Platform::Amd
                && !(i > 0 && matches!(src.s(i - 1), "." | "->" | "::"))
            {
                let msg = format!("`{w}` without a mask relies on implicit warp synchronization and is unavailable for sm_70 and newer");
                cx.report_with(&META, Severity::Error, nv.clone(), i, i, msg, &format!("use `{w}_sync` with an explicit mask (`__activemask()`)"));
            }
        }
    }
    // volatile lockstep reductions
    let gpu: Vec<String> = cx.ctx.targets.iter().filter(|t| t.vendor != Vendor::Cpu).map(|t| t.arch.clone()).collect();
    if gpu.is_empty() {
        return;
    }
    for (fi, f) in src.funcs.iter().enumerate() {
        let (lo, hi) = (f.open as usize, (f.close as usize).min(n));
        if !(f.marker as usize..hi).any(|k| src.is(k, "volatile")) || (lo..hi).any(|k| src.is(k, "__syncwarp")) {
            continue;
        }
        // s[tid + 16] style neighbour reads
        let mut hit = None;
        for k in lo..hi {
            if src.is(k, "[") && src.kind(k + 1) == Some(Tk::Ident) && is_thread_ident(src.s(k + 1)) && src.is(k + 2, "+") {
                if let Some(v) = src.int(k + 3) {
                    if matches!(v, 16 | 32) && src.is(k + 4, "]") && !cx.guarded(k) {
                        hit = Some(k);
                        break;
                    }
                }
            }
        }
        if let Some(k) = hit {
            let _ = fi;
            let start = k.saturating_sub(1);
            let msg = format!("warp-synchronous reduction through volatile shared memory (`{}`) relies on lockstep execution", cx.snippet(start, k + 4));
            cx.report_with(&META, Severity::Warning, gpu.clone(), start, k + 4, msg, "reduce in registers with `__shfl_down_sync` over `warpSize` lanes, or put `__syncwarp()` between the steps");
        }
    }
}

/// The file sits in a HIP-only part of the tree: a directory named `hip`, `*-hip`, `*_hip`,
/// `hip-*` or `hip_*` (a HIP port kept next to its CUDA original), or a file named `*_hip.*`.
fn in_hip_dir(path: &std::path::Path) -> bool {
    let hip_name = |s: &str| {
        let l = s.to_ascii_lowercase();
        l == "hip" || l.ends_with("-hip") || l.ends_with("_hip") || l.starts_with("hip-") || l.starts_with("hip_")
    };
    let dirs = path.parent().map(|p| p.components().any(|c| c.as_os_str().to_str().is_some_and(hip_name))).unwrap_or(false);
    let stem = path.file_stem().and_then(|s| s.to_str()).is_some_and(|s| s.to_ascii_lowercase().ends_with("_hip"));
    dirs || stem
}

#[cfg(test)]
mod tests {
    use super::in_hip_dir;
    use std::path::Path;

    #[test]
    fn hip_ports_are_recognised_by_directory_or_file_name() {
        assert!(in_hip_dir(Path::new("src/local-ht-hip/src/kernel.hpp")));
        assert!(in_hip_dir(Path::new("csrc/hip/reduce.cuh")));
        assert!(in_hip_dir(Path::new("kernels/softmax_hip.h")));
        assert!(!in_hip_dir(Path::new("src/local-ht-cuda/src/kernel.hpp")));
        assert!(!in_hip_dir(Path::new("src/chip/shfl.cuh")));
        assert!(!in_hip_dir(Path::new("hip.cu")));
    }
}
