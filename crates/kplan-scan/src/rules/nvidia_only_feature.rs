//! `nvidia-only-feature`: NVIDIA-specific features, each mapped through the knowledge base to the
//! targets in scope where it is missing or partial. Also the source of the inventory.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::inline_asm_unguarded::{asm_statements, AsmKind};
use kplan_kb::{Availability, Vendor};

pub static META: RuleMeta = RuleMeta {
    id: "nvidia-only-feature",
    summary: "feature specific to NVIDIA used where a target in scope lacks it",
    what: "Finds uses of NVIDIA-specific features: WMMA (`nvcuda::wmma`), `mma.sync`/`ldmatrix`, WGMMA, \
`tcgen05`, `cp.async` and the pipeline API, TMA (`cp.async.bulk`, `CUtensorMap`), thread-block clusters, \
`__nv_fp8*` types, `__reduce_*_sync`, `__match_*_sync`, `__syncwarp`, `__nanosleep`, block-scoped atomics \
(`atomicAdd_block`, ...), cooperative launch, dynamic parallelism (launches from device code), and CUTLASS/CuTe \
atoms named after them. Each is looked up in the knowledge base; the finding lists \
the targets in scope where the feature is missing (error) or partial (warning). For the warp and atomic \
intrinsics HIP's headers gained late or lack (`__syncwarp`, `__nanosleep`, `*_block` atomics, `__reduce_*_sync`, \
`__match_*_sync`) the finding quotes the knowledge base's evidence: which headers were read and what they \
declare (`__syncwarp(mask)` there needs a 64-bit mask).",
    why: "These features have no drop-in equivalent on the other targets: the code does not compile there, or \
compiles to a slow emulation. Each needs a per-backend path (MFMA/WMMA on AMD, a plain loop on CPU) that the plan \
must budget for.",
    example: "#include <mma.h>\nusing namespace nvcuda;\nwmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;",
    use_instead: "#if defined(__CUDA_ARCH__)\n// WMMA path\n#elif defined(__HIP_PLATFORM_AMD__)\n// rocWMMA or MFMA builtins\n#endif",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &[
        "wmma", "mma-sync", "wgmma", "tcgen05", "async-copy", "tma", "clusters", "fp8-ocp", "warp-reduce", "warp-match",
        "cooperative-launch", "dynamic-parallelism", "warp-shuffle-sync", "warp-shuffle", "warp-vote", "syncwarp", "inline-ptx",
        "inline-gcn-asm", "nanosleep", "block-scoped-atomics",
    ],
};

/// A feature detector: the KB id and whether it is NVIDIA-only even when the KB does not say.
struct Det {
    feature: &'static str,
    nvidia_only: bool,
    /// Warp intrinsics HIP provides: inventoried, their hazards left to the mask/width rules.
    inventory_only: bool,
}

const fn d(feature: &'static str, nvidia_only: bool) -> Det {
    Det {
        feature,
        nvidia_only,
        inventory_only: false,
    }
}

const fn inv(feature: &'static str) -> Det {
    Det {
        feature,
        nvidia_only: false,
        inventory_only: true,
    }
}

/// Feature of an identifier (the token after it is given for `ns::` checks).
/// Whether `nvidia-only-feature` reads identifier `w` (followed by `next`) as an NVIDIA-only
/// hardware feature.
pub fn names_feature(w: &str, next: &str) -> bool {
    ident_feature(w, next).is_some()
}

fn ident_feature(w: &str, next: &str) -> Option<Det> {
    // cheap rejection first: most identifiers start with none of these
    let b = w.as_bytes();
    if b.len() < 4
        || !matches!(
            b[0],
            b'_' | b'S' | b'w' | b'n' | b'm' | b'c' | b'C' | b't' | b'g' | b'G' | b'U' | b'a'
        )
    {
        return None;
    }
    Some(match w {
        "wmma" if next == "::" => d("wmma", true),
        "nvcuda" if next == "::" => d("wmma", true),
        "__pipeline_memcpy_async"
        | "__pipeline_commit"
        | "__pipeline_wait_prior"
        | "memcpy_async"
        | "cp_async_fence"
        | "cp_async_wait" => d("async-copy", true),
        "CUtensorMap" | "cuTensorMapEncodeTiled" | "cuTensorMapEncodeIm2col" | "cudaTensorMap" => {
            d("tma", true)
        }
        "__cluster_dims__"
        | "this_cluster"
        | "cluster_group"
        | "cudaLaunchAttributeClusterDimension"
        | "cudaFuncAttributeNonPortableClusterSizeAllowed"
        | "cluster_sync"
        | "cluster_arrive"
        | "cluster_wait" => d("clusters", true),
        "__reduce_add_sync" | "__reduce_min_sync" | "__reduce_max_sync" | "__reduce_and_sync"
        | "__reduce_or_sync" | "__reduce_xor_sync" => d("warp-reduce", false),
        "__match_any_sync" | "__match_all_sync" => d("warp-match", false),
        "cudaLaunchCooperativeKernel"
        | "cudaLaunchCooperativeKernelMultiDevice"
        | "this_grid"
        | "grid_group" => d("cooperative-launch", false),
        "__shfl_sync" | "__shfl_up_sync" | "__shfl_down_sync" | "__shfl_xor_sync" => {
            inv("warp-shuffle-sync")
        }
        "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor" => inv("warp-shuffle"),
        "__ballot_sync" | "__any_sync" | "__all_sync" | "__activemask" | "__uni_sync" => {
            inv("warp-vote")
        }
        // HIP's headers gained `__syncwarp` late (ROCm 7, per the KB): reported where AMD
        // compiles it, like any feature the KB marks partial
        "__syncwarp" => d("syncwarp", false),
        "__nanosleep" => d("nanosleep", false),
        "atomicAdd_block" | "atomicSub_block" | "atomicExch_block" | "atomicMin_block"
        | "atomicMax_block" | "atomicInc_block" | "atomicDec_block" | "atomicCAS_block"
        | "atomicAnd_block" | "atomicOr_block" | "atomicXor_block" => {
            d("block-scoped-atomics", false)
        }
        _ => {
            if w.starts_with("__nv_fp8") || w.starts_with("__nv_cvt_") && w.contains("fp8") {
                d("fp8-ocp", true)
            } else if w.starts_with("SM90_") && (w.contains("TMA") || w.contains("BULK"))
                || w.starts_with("SM90_BULK")
            {
                d("tma", true)
            } else if w.starts_with("SM90_") && w.contains("GMMA") || w == "GMMA" && next == "::" {
                d("wgmma", true)
            } else if w.starts_with("SM100_") && (w.contains("MMA") || w.contains("UMMA"))
                || w == "UMMA" && next == "::"
            {
                d("tcgen05", true)
            } else if w.starts_with("SM80_CP_ASYNC") {
                d("async-copy", true)
            } else if ((w.starts_with("SM80_")
                || w.starts_with("SM75_")
                || w.starts_with("SM89_")
                || w.starts_with("SM70_"))
                && !w.contains("MMA")
                && w.contains('x')
                && w.contains('_')
                && w.chars().nth(5).is_some_and(|c| c.is_ascii_digit()))
                || w.starts_with("SM75_U32x")
                || w.starts_with("SM75_U16x")
            {
                d("mma-sync", true)
            } else {
                return None;
            }
        }
    })
}

/// Features of an inline PTX template.
fn asm_features(t: &str) -> Vec<Det> {
    let mut v = Vec::new();
    if t.contains("wgmma.") {
        v.push(d("wgmma", true));
    }
    if t.contains("tcgen05.") {
        v.push(d("tcgen05", true));
    }
    if t.contains("cp.async.bulk") || t.contains("cp.reduce.async.bulk") {
        v.push(d("tma", true));
    } else if t.contains("cp.async") {
        v.push(d("async-copy", true));
    }
    if t.contains("mma.sync") || t.contains("ldmatrix") || t.contains("stmatrix") {
        v.push(d("mma-sync", true));
    }
    if t.contains("barrier.cluster")
        || t.contains("%cluster")
        || t.contains("mapa.")
        || t.contains("shared::cluster")
    {
        v.push(d("clusters", true));
    }
    if t.contains("e4m3") || t.contains("e5m2") {
        v.push(d("fp8-ocp", true));
    }
    v
}

/// `__nv_*` type names the file defines itself (`struct __nv_fp8_e4m3 { ... }` in a SYCL or CPU
/// port, `using __nv_bfloat16 = ...`): their uses are the project's types, not NVIDIA's.
fn own_types<'a>(src: &crate::lex::Src<'a>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for i in 1..src.toks.len() {
        let w = src.s(i);
        if !w.starts_with("__nv_") || out.contains(&w) {
            continue;
        }
        let defines = matches!(src.s(i - 1), "struct" | "class" | "union")
            && matches!(src.s(i + 1), "{" | ":" | ";")
            || src.is(i - 1, "using") && src.is(i + 1, "=")
            || src.is(i + 1, ";") && (0..i.min(12)).any(|k| src.is(i - 1 - k, "typedef"));
        if defines {
            out.push(w);
        }
    }
    out
}

pub fn check(cx: &mut Cx, report: bool) {
    let src = cx.src;
    let n = src.toks.len();
    let mut hits: Vec<(usize, usize, Det)> = Vec::new();
    let mut defined_names: Option<std::collections::HashSet<&str>> = None;
    let mut own = if cx.has("__nv_") {
        own_types(src)
    } else {
        Vec::new()
    };
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) {
            if src.is(i, "<<<") && src.in_device(i) {
                hits.push((i, i, d("dynamic-parallelism", true)));
            }
            continue;
        }
        let w = src.s(i);
        if let Some(det) = ident_feature(w, src.s(i + 1)).filter(|_| !own.contains(&w)) {
            // a device function the project provides under that name (a compatibility shim:
            // `#define __syncwarp() ...`, `__device__ void __syncwarp() {}`) is its own
            if det.feature == "syncwarp"
                || det.feature == "nanosleep"
                || det.feature == "block-scoped-atomics"
            {
                let shim = matches!(
                    src.s(i.wrapping_sub(1)),
                    "void" | "int" | "unsigned" | "float" | "double" | "define"
                ) || defined_names
                    .get_or_insert_with(|| {
                        src.defines
                            .iter()
                            .filter_map(|d| {
                                src.text.get(d.name_start as usize..d.name_end as usize)
                            })
                            .collect()
                    })
                    .contains(w);
                if shim {
                    own.push(w);
                    hits.retain(|h: &(usize, usize, Det)| src.s(h.0) != w);
                    continue;
                }
            }
            // `wmma::` counted once per statement would be nicer; count every use
            hits.push((i, i, det));
        }
    }
    for (i, c, tpl, kind) in asm_statements(src) {
        match kind {
            AsmKind::Ptx => cx.record_use("inline-ptx", "inline-asm-unguarded", i),
            AsmKind::Gcn => cx.record_use("inline-gcn-asm", "inline-asm-unguarded", i),
            AsmKind::Unknown => {}
        }
        for det in asm_features(&tpl) {
            hits.push((i, c, det));
        }
    }
    for (a, _, det) in &hits {
        cx.record_use(det.feature, META.id, *a);
    }
    if !report || !cx.enabled(&META) {
        return;
    }
    // one finding per feature per file, at its first unguarded use, with the count
    let mut firsts: Vec<(usize, usize, Det, usize)> = Vec::new();
    for (a, b, det) in hits {
        if det.inventory_only || src.platform(a) != Platform::Any || src.in_conditional(a, true) {
            continue;
        }
        // features HIP gained late or lacks among the warp and atomic intrinsics: a use under a
        // project's own condition (an NVIDIA architecture switch, a feature macro) is the
        // project's choice
        if matches!(
            det.feature,
            "syncwarp" | "nanosleep" | "block-scoped-atomics"
        ) && src.in_conditional(a, false)
        {
            continue;
        }
        match firsts.iter_mut().find(|f| f.2.feature == det.feature) {
            Some(f) => f.3 += 1,
            None => firsts.push((a, b, det, 1)),
        }
    }
    for (a, b, det, count) in firsts {
        let mut missing: Vec<String> = Vec::new();
        let mut partial: Vec<String> = Vec::new();
        for t in &cx.ctx.targets {
            if t.vendor() == Vendor::Cpu
                || t.vendor() == Vendor::Nvidia && cx.ctx.kb.support(det.feature, t.id()).is_none()
            {
                continue;
            }
            match cx.ctx.kb.availability(det.feature, t.id()) {
                Availability::No => missing.push(t.id().to_string()),
                Availability::Partial => partial.push(t.id().to_string()),
                Availability::Unknown if det.nvidia_only && t.vendor() != Vendor::Nvidia => {
                    missing.push(t.id().to_string())
                }
                _ => {}
            }
        }
        if missing.is_empty() && partial.is_empty() {
            continue;
        }
        let name = cx
            .ctx
            .kb
            .feature(det.feature)
            .map(|f| f.name.clone())
            .unwrap_or_else(|| det.feature.to_string());
        let (sev, mut targets, how) = if !missing.is_empty() {
            (Severity::Error, missing.clone(), "is not available on")
        } else {
            (
                Severity::Warning,
                partial.clone(),
                "is only partly available on",
            )
        };
        if !missing.is_empty() && !partial.is_empty() {
            targets.extend(partial.iter().cloned());
        }
        let what = if a == b {
            format!("`{}`", src.s(a))
        } else {
            "inline assembly".to_string()
        };
        // where the KB knows the toolchain that first has it on a partial target, say so
        let since = if missing.is_empty() {
            partial
                .iter()
                .find_map(|a| cx.ctx.kb.support(det.feature, a)?.min_toolchain.clone())
                .map(|t| format!(" (from {t})"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let more = if count > 1 {
            format!(" ({count} unguarded uses in this file)")
        } else {
            String::new()
        };
        // for the intrinsics HIP's headers gained late or lack, the evidence is what those
        // headers declare: say it (which headers, which mask type) instead of a bare verdict
        let evidence = if matches!(
            det.feature,
            "syncwarp" | "nanosleep" | "block-scoped-atomics" | "warp-reduce" | "warp-match"
        ) {
            targets
                .iter()
                .find_map(|a| cx.ctx.kb.support(det.feature, a)?.note.clone())
                .map(|n| format!(" ({})", n.trim().trim_end_matches('.')))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let msg = format!(
            "{what} uses {name} ({}), which {how} {}{since}{more}{evidence}",
            det.feature,
            targets.join(", ")
        );
        let help = cx
            .ctx
            .kb
            .feature(det.feature)
            .and_then(|f| f.fallback.clone())
            .map(|f| {
                format!(
                    "guard it for NVIDIA and give the other targets a path: {}",
                    f.trim().trim_end_matches('.')
                )
            })
            .unwrap_or_else(|| {
                "guard it for NVIDIA (`__CUDA_ARCH__`) and give the other targets their own path"
                    .to_string()
            });
        cx.report_with(&META, sev, targets, a, b, msg, &help);
    }
}
