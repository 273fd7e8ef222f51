//! `amd-builtin-unavailable`: an `__builtin_amdgcn_*` builtin that an in-scope AMD target does
//! not have (an MFMA on RDNA, a WMMA on CDNA, `sdot4` on gfx11, `s_memtime` on gfx11,
//! `permlane64` before gfx11), in code compiled for that target.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::target_cond::{amd_passes, branch_taken, AmdPass};

pub static META: RuleMeta = RuleMeta {
    id: "amd-builtin-unavailable",
    summary: "an `__builtin_amdgcn_*` builtin an in-scope AMD target does not have, compiled for it",
    what: "Finds calls of AMDGPU builtins that exist on some AMD generations only, in code that an in-scope \
target's device pass compiles (no architecture test, or one that target passes): the matrix-core builtins \
(`__builtin_amdgcn_mfma_*` on CDNA only, their fp8, xf32 and int8 K=32 forms on gfx94x only, `bf16_1k` and \
f64 from gfx90a; `__builtin_amdgcn_wmma_*` on RDNA3 only, `*_gfx12` on RDNA4 only; `smfmac` on gfx94x), the \
dot products (`sdot2`, `sdot4`, `sdot8` not on gfx11/gfx12; `sudot4`, `sudot8` and the f16/bf16 `fdot2` forms \
on gfx11/gfx12 only), the cross-lane builtins (`permlane16`/`permlanex16` from gfx10, `permlane64` from gfx11, \
`ballot_w32` on wave32 targets only), the clocks (`s_memtime`/`s_memrealtime` not on gfx11/gfx12, \
`s_sendmsg_rtn` from gfx11), the fp8 conversions (gfx94x and gfx12) and the floating global atomics (f64 from \
gfx90a; packed bf16 on gfx94x and gfx12). Each name is reported once per file, naming the targets that lack it. \
Targets clang-19 does not know (gfx950) are not judged.",
    why: "clang rejects the call for a target without the instruction (\"'__builtin_amdgcn_sudot4' needs \
target feature dot8-insts\", or the backend cannot select it): the whole translation unit fails to build for \
that `--offload-arch`, so a multi-target build fails even if no kernel for that target would call it. \
Availability per target is what clang-19 accepts, compiling each builtin for gfx908, gfx90a, gfx942, gfx1030, \
gfx1100, gfx1151 and gfx1201 (`tests/amdgcn_builtins.rs` checks the table against the compiler).",
    example: "__device__ int dot4(int a, int b, int acc) {\n    return __builtin_amdgcn_sdot4(a, b, acc, false);\n}",
    use_instead: "__device__ int dot4(int a, int b, int acc) {\n#if defined(__GFX11__) || defined(__GFX12__)\n    return __builtin_amdgcn_sudot4(true, a, true, b, acc, false);\n#else\n    return __builtin_amdgcn_sdot4(a, b, acc, false);\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Whether the target `arch` has the builtin `__builtin_amdgcn_<name>`: `None` when the table
/// does not know the builtin or clang-19 does not know the target.
pub fn has_builtin(name: &str, arch: &str) -> Option<bool> {
    let g908 = arch == "gfx908";
    let g90a = arch == "gfx90a";
    let g94 = matches!(arch, "gfx940" | "gfx941" | "gfx942");
    let g103 = arch.starts_with("gfx103");
    let g11 = arch.starts_with("gfx11") && arch.len() == 7;
    let g12 = arch.starts_with("gfx120") && arch.len() == 7;
    // targets the table was checked on (clang-19): other gfx9 parts (gfx950) are not judged
    if !(g908 || g90a || g94 || g103 || g11 || g12) {
        return None;
    }
    let cdna = g908 || g90a || g94;
    let v = match name {
        // on every target the table judges
        "udot4"
        | "udot8"
        | "fdot2"
        | "ds_bpermute"
        | "ds_swizzle"
        | "mov_dpp"
        | "update_dpp"
        | "ballot_w64"
        | "s_setprio"
        | "iglp_opt"
        | "sched_group_barrier"
        | "readfirstlane"
        | "s_sleep"
        | "fmed3h"
        | "perm"
        | "ds_atomic_fadd_f32" => true,
        "sdot2" | "udot2" | "sdot4" | "sdot8" => cdna || g103,
        "sudot4" | "sudot8" | "fdot2_f16_f16" | "fdot2_bf16_bf16" | "fdot2_f32_bf16" => g11 || g12,
        "permlane16" | "permlanex16" => g103 || g11 || g12,
        "permlane64" => g11 || g12,
        "ballot_w32" => g103 || g11 || g12,
        "s_memtime" | "s_memrealtime" => cdna || g103,
        "s_sendmsg_rtn" | "s_sendmsg_rtnl" => g11 || g12,
        "cvt_pk_fp8_f32" | "cvt_pk_bf8_f32" | "cvt_f32_fp8" | "cvt_f32_bf8" | "cvt_pk_f32_fp8"
        | "cvt_pk_f32_bf8" => g94 || g12,
        "global_atomic_fadd_f64" | "flat_atomic_fadd_f64" => g90a || g94,
        "global_atomic_fadd_f32" => g90a || g94 || g11 || g12,
        "global_atomic_fadd_v2f16" => g90a || g94 || g12,
        "global_atomic_fadd_v2bf16" => g94 || g12,
        "s_wait_event_export_ready" => g11 || g12,
        "s_barrier_signal" => g12,
        _ if name.starts_with("global_load_tr_") => g12,
        _ if name.starts_with("smfmac_") => g94,
        _ if name.starts_with("mfma_") => {
            let n = &name[5..];
            // the gfx94x forms: fp8/bf8 operands, xf32, and the K=32/K=16 int8 shapes spelt `_i8`
            if n.contains("fp8") || n.contains("bf8") || n.contains("xf32") || n.ends_with("_i8") {
                g94
            } else if n.contains("bf16_1k") || n.contains("f64") {
                g90a || g94
            } else {
                cdna
            }
        }
        _ if name.starts_with("wmma_") => {
            if name.ends_with("_w64") || name.contains("_w64_") {
                return None;
            }
            if name.ends_with("_gfx12") {
                g12
            } else {
                g11
            }
        }
        _ => return None,
    };
    Some(v)
}

pub fn check(cx: &mut Cx) {
    if !cx.has("__builtin_amdgcn_") {
        return;
    }
    let passes = amd_passes(cx);
    if passes.is_empty() {
        return;
    }
    let src = cx.src;
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut hits: Vec<(usize, String, Vec<String>)> = Vec::new();
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) || src.s(i + 1) != "(" {
            continue;
        }
        let w = src.s(i);
        let Some(name) = w.strip_prefix("__builtin_amdgcn_") else {
            continue;
        };
        if seen.contains(w) {
            continue;
        }
        let b = src.toks[i].branch;
        let lack: Vec<String> = passes
            .iter()
            .filter(|p: &&AmdPass| {
                has_builtin(name, &p.arch) == Some(false) && branch_taken(cx, b, p) == Some(true)
            })
            .map(|p| p.arch.clone())
            .collect();
        if lack.is_empty() {
            continue;
        }
        seen.insert(w);
        let msg = format!(
            "`{w}` does not exist on {}, which compiles this line: clang rejects it and the build for that target fails",
            lack.join(", ")
        );
        hits.push((i, msg, lack));
    }
    for (i, msg, lack) in hits {
        cx.report_with(
            &META,
            META.severity,
            lack,
            i,
            i,
            msg,
            "put the call under an architecture test that only the targets with the instruction pass (`#if defined(__gfx942__) || ...`, `__GFX11__`) and give the others their own path",
        );
    }
}
