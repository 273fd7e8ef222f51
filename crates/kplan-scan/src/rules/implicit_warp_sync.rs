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
    if !(cx.has("volatile")
        || cx.has("__shfl")
        || cx.has("__ballot")
        || cx.has("__any")
        || cx.has("__all"))
    {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let nv = cx.ctx.vendor_targets(Vendor::Nvidia);
    // .hip files and files including the HIP runtime get HIP's wrappers for the unmasked forms
    let is_hip = cx
        .path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("hip"))
        || src.text.contains("hip/hip_runtime")
        || in_hip_dir(cx.path)
        || cx.hip_file();
    if !nv.is_empty() && !is_hip {
        for i in 0..n {
            let w = src.s(i);
            if matches!(
                w,
                "__shfl"
                    | "__shfl_up"
                    | "__shfl_down"
                    | "__shfl_xor"
                    | "__ballot"
                    | "__any"
                    | "__all"
            ) && src.is(i + 1, "(")
                && src.platform(i) != Platform::Amd
                && !in_amd_disjunct(src, i)
                && !(i > 0 && matches!(src.s(i - 1), "." | "->" | "::"))
            {
                let msg = format!("`{w}` without a mask relies on implicit warp synchronization and is unavailable for sm_70 and newer");
                cx.report_with(
                    &META,
                    Severity::Error,
                    nv.clone(),
                    i,
                    i,
                    msg,
                    &format!("use `{w}_sync` with an explicit mask (`__activemask()`)"),
                );
            }
        }
    }
    // volatile lockstep reductions
    let gpu: Vec<String> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() != Vendor::Cpu)
        .map(|t| t.id().to_string())
        .collect();
    if gpu.is_empty() {
        return;
    }
    for (fi, f) in src.funcs.iter().enumerate() {
        let (lo, hi) = (f.open as usize, (f.close as usize).min(n));
        if !(f.marker as usize..hi).any(|k| src.is(k, "volatile"))
            || (lo..hi).any(|k| src.is(k, "__syncwarp"))
        {
            continue;
        }
        // s[tid + 16] style neighbour reads
        let mut hit = None;
        for k in lo..hi {
            if src.is(k, "[")
                && src.kind(k + 1) == Some(Tk::Ident)
                && is_thread_ident(src.s(k + 1))
                && src.is(k + 2, "+")
            {
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

/// Token `i` sits in a branch for AMD and pre-Volta toolkits only (`#if CUDA_VERSION < 9000 ||
/// defined(USE_ROCM)`), or, at any level, a pre-Volta toolkit branch: the unmasked form is
/// the one those compilers have.
fn in_amd_disjunct(src: &crate::lex::Src, i: usize) -> bool {
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    let mut b = t.branch;
    let mut innermost = true;
    let mut guard = 0;
    while b != 0 && guard < 10_000 {
        let Some(br) = src.branches.get(b as usize) else {
            break;
        };
        let cond = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        let body = cond.trim_start_matches(['#', ' ', '\t']);
        if !body.starts_with("else") {
            let body = body.trim_start_matches("elif").trim_start_matches("if");
            if pre_volta_toolkit(body) && !body.contains("||") {
                return true;
            }
            if innermost
                && crate::lex::amd_disjunct(body)
                && split_or(body)
                    .iter()
                    .all(|d| pre_volta_toolkit(d) || crate::lex::amd_disjunct(&format!("{d} || 0")))
            {
                return true;
            }
        }
        innermost = false;
        b = br.parent;
        guard += 1;
    }
    false
}

/// Top-level `||` terms of a condition.
fn split_or(c: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let b = c.as_bytes();
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'|' if depth == 0 && b.get(k + 1) == Some(&b'|') => {
                out.push(&c[start..k]);
                start = k + 2;
                k += 1;
            }
            _ => {}
        }
        k += 1;
    }
    out.push(&c[start..]);
    out
}

/// `CUDA_VERSION < 9000` (or `CUDART_VERSION`, `__CUDACC_VER_MAJOR__ < 9`): a toolkit that has
/// no `*_sync` intrinsics and cannot target sm_70, so the unmasked form is the only one there.
fn pre_volta_toolkit(cond: &str) -> bool {
    let c: String = cond.chars().filter(|c| !c.is_whitespace()).collect();
    for (key, limit) in [
        ("CUDA_VERSION<", 9000u64),
        ("CUDART_VERSION<", 9000),
        ("__CUDACC_VER_MAJOR__<", 9),
    ] {
        let mut from = 0;
        while let Some(p) = c[from..].find(key) {
            let at = from + p + key.len();
            let digits: String = c[at..].chars().take_while(|d| d.is_ascii_digit()).collect();
            if digits.parse::<u64>().is_ok_and(|v| v <= limit) && !c[..from + p].ends_with('!') {
                return true;
            }
            from = at;
        }
    }
    false
}

/// The file sits in a HIP-only part of the tree: a directory named `hip`, `*-hip`, `*_hip`,
/// `hip-*` or `hip_*` (a HIP port kept next to its CUDA original), or a file named `*_hip.*`.
fn in_hip_dir(path: &std::path::Path) -> bool {
    let hip_name = |s: &str| {
        let l = s.to_ascii_lowercase();
        l == "hip"
            || l.ends_with("-hip")
            || l.ends_with("_hip")
            || l.starts_with("hip-")
            || l.starts_with("hip_")
    };
    let dirs = path
        .parent()
        .map(|p| {
            p.components()
                .any(|c| c.as_os_str().to_str().is_some_and(hip_name))
        })
        .unwrap_or(false);
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.to_ascii_lowercase().ends_with("_hip"));
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

    #[test]
    fn pre_volta_toolkit_branches() {
        assert!(super::pre_volta_toolkit("#if CUDA_VERSION < 9000"));
        assert!(super::pre_volta_toolkit(
            "#if defined(X) && __CUDACC_VER_MAJOR__ < 9"
        ));
        assert!(!super::pre_volta_toolkit("#if CUDA_VERSION < 12000"));
        assert!(!super::pre_volta_toolkit("#if CUDA_VERSION >= 9000"));
    }

    #[test]
    fn amd_or_pre_volta_branches_only() {
        let check = |text: &str| {
            let src = crate::lex::lex(text);
            let i = (0..src.toks.len()).find(|&i| src.is(i, "__any")).unwrap();
            super::in_amd_disjunct(&src, i)
        };
        assert!(check(
            "#if CUDA_VERSION < 9000 || defined(USE_ROCM)\nx = __any(p);\n#endif\n"
        ));
        assert!(!check(
            "#if defined(__CUDACC__) || defined(__HIPCC__)\nx = __any(p);\n#endif\n"
        ));
        assert!(!check("#if (__CUDA_ARCH__ >= 300) || (defined(__HIP_PLATFORM_AMD__) && HIP_VERSION >= 502)\nx = __any(p);\n#endif\n"));
    }
}
