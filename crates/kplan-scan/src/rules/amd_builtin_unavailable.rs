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
Only source files are read, and calls in device-function templates are left alone: clang rejects a builtin \
only in a function it emits, and a header's inline functions and templates are emitted only where they are used \
(a kernel template of a source file is taken as instantiated there). A builtin the file \
tests with `__has_builtin`, a matrix builtin clang-19 does not know (a newer generation's) and targets clang-19 \
does not know (gfx950) are not judged.",
    why: "clang rejects the call for a target without the instruction (\"'__builtin_amdgcn_sudot4' needs \
target feature dot8-insts\", or the backend cannot select it) in every function it emits for that \
`--offload-arch`: a non-template function of a source file is emitted for every target of the build, so a \
multi-target build fails even if no kernel for that target would call it. \
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
        // the transposing loads: some forms need wave64 (and fail on gfx1201), not judged
        _ if name.starts_with("global_load_tr_") => return None,
        _ if ["mfma_", "smfmac_", "wmma_", "swmmac_"]
            .iter()
            .any(|p| name.starts_with(p))
            && !CLANG19_MMA.contains(&name) =>
        {
            return None
        }
        _ if name.starts_with("smfmac_") => g94,
        _ if name.starts_with("swmmac_") => g12,
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

/// The matrix-core builtins clang-19 knows (its builtin table, read from libclang-cpp 19):
/// a name outside it (a newer generation's, or a misspelling) is not judged.
const CLANG19_MMA: &[&str] = &[
    "mfma_f32_16x16x16bf16_1k",
    "mfma_f32_16x16x16f16",
    "mfma_f32_16x16x1f32",
    "mfma_f32_16x16x2bf16",
    "mfma_f32_16x16x32_bf8_bf8",
    "mfma_f32_16x16x32_bf8_fp8",
    "mfma_f32_16x16x32_fp8_bf8",
    "mfma_f32_16x16x32_fp8_fp8",
    "mfma_f32_16x16x4bf16_1k",
    "mfma_f32_16x16x4f16",
    "mfma_f32_16x16x4f32",
    "mfma_f32_16x16x8_xf32",
    "mfma_f32_16x16x8bf16",
    "mfma_f32_32x32x16_bf8_bf8",
    "mfma_f32_32x32x16_bf8_fp8",
    "mfma_f32_32x32x16_fp8_bf8",
    "mfma_f32_32x32x16_fp8_fp8",
    "mfma_f32_32x32x1f32",
    "mfma_f32_32x32x2bf16",
    "mfma_f32_32x32x2f32",
    "mfma_f32_32x32x4_xf32",
    "mfma_f32_32x32x4bf16",
    "mfma_f32_32x32x4bf16_1k",
    "mfma_f32_32x32x4f16",
    "mfma_f32_32x32x8bf16_1k",
    "mfma_f32_32x32x8f16",
    "mfma_f32_4x4x1f32",
    "mfma_f32_4x4x2bf16",
    "mfma_f32_4x4x4bf16_1k",
    "mfma_f32_4x4x4f16",
    "mfma_f64_16x16x4f64",
    "mfma_f64_4x4x4f64",
    "mfma_i32_16x16x16i8",
    "mfma_i32_16x16x32_i8",
    "mfma_i32_16x16x4i8",
    "mfma_i32_32x32x16_i8",
    "mfma_i32_32x32x4i8",
    "mfma_i32_32x32x8i8",
    "mfma_i32_4x4x4i8",
    "smfmac_f32_16x16x32_bf16",
    "smfmac_f32_16x16x32_f16",
    "smfmac_f32_16x16x64_bf8_bf8",
    "smfmac_f32_16x16x64_bf8_fp8",
    "smfmac_f32_16x16x64_fp8_bf8",
    "smfmac_f32_16x16x64_fp8_fp8",
    "smfmac_f32_32x32x16_bf16",
    "smfmac_f32_32x32x16_f16",
    "smfmac_f32_32x32x32_bf8_bf8",
    "smfmac_f32_32x32x32_bf8_fp8",
    "smfmac_f32_32x32x32_fp8_bf8",
    "smfmac_f32_32x32x32_fp8_fp8",
    "smfmac_i32_16x16x64_i8",
    "smfmac_i32_32x32x32_i8",
    "swmmac_bf16_16x16x32_bf16_w32",
    "swmmac_bf16_16x16x32_bf16_w64",
    "swmmac_f16_16x16x32_f16_w32",
    "swmmac_f16_16x16x32_f16_w64",
    "swmmac_f32_16x16x32_bf16_w32",
    "swmmac_f32_16x16x32_bf16_w64",
    "swmmac_f32_16x16x32_bf8_bf8_w32",
    "swmmac_f32_16x16x32_bf8_bf8_w64",
    "swmmac_f32_16x16x32_bf8_fp8_w32",
    "swmmac_f32_16x16x32_bf8_fp8_w64",
    "swmmac_f32_16x16x32_f16_w32",
    "swmmac_f32_16x16x32_f16_w64",
    "swmmac_f32_16x16x32_fp8_bf8_w32",
    "swmmac_f32_16x16x32_fp8_bf8_w64",
    "swmmac_f32_16x16x32_fp8_fp8_w32",
    "swmmac_f32_16x16x32_fp8_fp8_w64",
    "swmmac_i32_16x16x32_iu4_w32",
    "swmmac_i32_16x16x32_iu4_w64",
    "swmmac_i32_16x16x32_iu8_w32",
    "swmmac_i32_16x16x32_iu8_w64",
    "swmmac_i32_16x16x64_iu4_w32",
    "swmmac_i32_16x16x64_iu4_w64",
    "wmma_bf16_16x16x16_bf16_tied_w32",
    "wmma_bf16_16x16x16_bf16_tied_w64",
    "wmma_bf16_16x16x16_bf16_w32",
    "wmma_bf16_16x16x16_bf16_w32_gfx12",
    "wmma_bf16_16x16x16_bf16_w64",
    "wmma_bf16_16x16x16_bf16_w64_gfx12",
    "wmma_f16_16x16x16_f16_tied_w32",
    "wmma_f16_16x16x16_f16_tied_w64",
    "wmma_f16_16x16x16_f16_w32",
    "wmma_f16_16x16x16_f16_w32_gfx12",
    "wmma_f16_16x16x16_f16_w64",
    "wmma_f16_16x16x16_f16_w64_gfx12",
    "wmma_f32_16x16x16_bf16_w32",
    "wmma_f32_16x16x16_bf16_w32_gfx12",
    "wmma_f32_16x16x16_bf16_w64",
    "wmma_f32_16x16x16_bf16_w64_gfx12",
    "wmma_f32_16x16x16_bf8_bf8_w32_gfx12",
    "wmma_f32_16x16x16_bf8_bf8_w64_gfx12",
    "wmma_f32_16x16x16_bf8_fp8_w32_gfx12",
    "wmma_f32_16x16x16_bf8_fp8_w64_gfx12",
    "wmma_f32_16x16x16_f16_w32",
    "wmma_f32_16x16x16_f16_w32_gfx12",
    "wmma_f32_16x16x16_f16_w64",
    "wmma_f32_16x16x16_f16_w64_gfx12",
    "wmma_f32_16x16x16_fp8_bf8_w32_gfx12",
    "wmma_f32_16x16x16_fp8_bf8_w64_gfx12",
    "wmma_f32_16x16x16_fp8_fp8_w32_gfx12",
    "wmma_f32_16x16x16_fp8_fp8_w64_gfx12",
    "wmma_i32_16x16x16_iu4_w32",
    "wmma_i32_16x16x16_iu4_w32_gfx12",
    "wmma_i32_16x16x16_iu4_w64",
    "wmma_i32_16x16x16_iu4_w64_gfx12",
    "wmma_i32_16x16x16_iu8_w32",
    "wmma_i32_16x16x16_iu8_w32_gfx12",
    "wmma_i32_16x16x16_iu8_w64",
    "wmma_i32_16x16x16_iu8_w64_gfx12",
    "wmma_i32_16x16x32_iu4_w32_gfx12",
    "wmma_i32_16x16x32_iu4_w64_gfx12",
];

pub fn check(cx: &mut Cx) {
    if !cx.has("__builtin_amdgcn_") {
        return;
    }
    // clang rejects the builtin only in a function it emits: a header's inline functions and
    // templates are emitted only where a translation unit uses them (for the targets it picks)
    if cx.ctx.is_header(cx.path) {
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
        if seen.contains(w) || in_template(src, i) {
            continue;
        }
        // `if constexpr (__has_builtin(__builtin_amdgcn_x))` or `#if __has_builtin(...)`
        if cx.has(&format!("__has_builtin({w})")) {
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

/// Whether token `i` sits in a function that is a template (or a member of a class template):
/// the function is emitted only where it is instantiated.
fn in_template(src: &crate::lex::Src, i: usize) -> bool {
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    if t.func == 0 {
        return false;
    }
    let Some(f) = src.funcs.get(t.func as usize - 1) else {
        return false;
    };
    // a kernel template of a source file is instantiated there (its launch is in the file)
    if f.kind == crate::lex::FnKind::Global {
        return false;
    }
    // `template <...>` within the few tokens before the function's declaration
    let start = f.marker as usize;
    (start.saturating_sub(64)..start).any(|k| src.s(k) == "template")
}
