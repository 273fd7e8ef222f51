//! `amd-isa-generation`: GCN inline assembly or a DPP control that an AMD target in scope
//! does not have, compiled for that target.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::inline_asm_unguarded::{asm_statements, AsmKind};
use crate::rules::target_cond::{amd_passes, branch_taken, AmdPass};

pub static META: RuleMeta = RuleMeta {
    id: "amd-isa-generation",
    summary: "instruction or DPP control that an AMD target in scope lacks, compiled for that target",
    what: "Finds GCN inline assembly whose instructions exist only on some AMD generations \
(`buffer_wbinvl1_vol`, `buffer_invl2`, `buffer_gl0_inv`, `buffer_inv`, `global_inv`, `s_memtime`, \
`s_memrealtime`, gfx10/gfx11's `s_waitcnt_vscnt` / `s_waitcnt_lgkmcnt`, gfx12's `s_wait_*` counters, gfx8/9 \
DPP `row_bcast` and `wave_*` shifts; mnemonics are matched whole, as clang-19's assembler accepts them per \
target), VALU instructions whose scalar lane-mask operand (`v_mad_u64_u32` / `v_add_co_u32` carry, a `v_cmp_*_e64` \
result) is bound to an SGPR constraint (`\"=s\"`) where a wave32 target compiles them, and DPP control \
words that only gfx8/gfx9 have (`0x142` row_bcast:15, `0x143` row_bcast:31, `0x130`/`0x134`/`0x138`/`0x13c` \
wave shifts and rotates) passed to `__builtin_amdgcn_update_dpp` / `__builtin_amdgcn_mov_dpp` or to a \
project function or template named `*dpp*`. It evaluates the preprocessor branches around the use for the \
device pass of each AMD target in scope (`__GFX9__`, `__gfx942__`, `__HIP_DEVICE_COMPILE__`, ...) and reports \
the targets that compile it although they lack it. A branch on a project macro kplan cannot evaluate (a \
feature switch such as `HAS_DPP_BROADCAST`) is trusted.",
    why: "AMD's instruction set changes between generations: gfx940-gfx950 (MI300, MI350) dropped \
`buffer_wbinvl1_vol` for `buffer_inv sc1`, RDNA (gfx10+) has `buffer_gl0_inv`/`buffer_gl1_inv` and no \
row-broadcast or wave-shift DPP, gfx11 has no `s_memtime`, gfx12 added separate `s_wait_*` counters and \
dropped gfx10/gfx11's `s_waitcnt_vscnt`. `__GFX9__` covers gfx900 to gfx950, so a guard on the family does not \
exclude MI300. The assembler rejects the instruction for that target; where it still accepts it \
(`buffer_wbinvl1_vol` on gfx94x) the instruction no longer does the cache maintenance the code relies on; for \
a DPP control the hardware ignores, the lanes read the wrong values.",
    example: "__device__ void release() {\n#if defined(__GFX9__)\n    __asm__ volatile(\"buffer_wbinvl1_vol\" ::: \"memory\");\n#else\n    __threadfence();\n#endif\n}",
    use_instead: "__device__ void release() {\n    // the compiler emits the right cache maintenance for each target\n    __threadfence();\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

fn arch_in(p: &AmdPass, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|x| p.arch.starts_with(x))
}

/// (mnemonic or DPP control, matched as a whole word; whether a pass has it; what to write
/// instead). Availability as clang-19's assembler (`llvm-mc -mcpu=...`) accepts each.
type Avail = fn(&AmdPass) -> bool;
const INSNS: &[(&str, Avail, &str)] = &[
    (
        "buffer_wbinvl1",
        |p| p.family().is_some_and(|f| (6..=9).contains(&f)) && !arch_in(p, &["gfx94", "gfx95"]),
        "`__threadfence()` / `__atomic_thread_fence`, or per generation `buffer_inv sc1` (gfx94x/gfx950) and `buffer_gl1_inv; buffer_gl0_inv` (gfx10/gfx11)",
    ),
    (
        "buffer_wbinvl1_vol",
        |p| p.family().is_some_and(|f| (6..=9).contains(&f)) && !arch_in(p, &["gfx94", "gfx95"]),
        "`__threadfence()` / `__atomic_thread_fence`, or per generation `buffer_inv sc1` (gfx94x/gfx950) and `buffer_gl1_inv; buffer_gl0_inv` (gfx10/gfx11)",
    ),
    (
        "buffer_invl2",
        |p| arch_in(p, &["gfx90a"]),
        "`__threadfence()`, or `buffer_inv sc1` on gfx94x, under an architecture guard",
    ),
    (
        "global_inv",
        |p| p.family().is_some_and(|f| f >= 12),
        "`__threadfence()`, or a branch per generation",
    ),
    (
        "s_waitcnt_vscnt",
        |p| p.family().is_some_and(|f| f == 10 || f == 11),
        "`s_waitcnt vmcnt(0)` on gfx9, `s_wait_storecnt` on gfx12, under an architecture guard, or `__builtin_amdgcn_s_waitcnt`",
    ),
    (
        "s_waitcnt_lgkmcnt",
        |p| p.family().is_some_and(|f| f == 10 || f == 11),
        "`s_waitcnt lgkmcnt(0)` on gfx9, `s_wait_dscnt` / `s_wait_kmcnt` on gfx12, under an architecture guard",
    ),
    (
        "buffer_gl0_inv",
        |p| p.family().is_some_and(|f| f == 10 || f == 11),
        "`__threadfence()`, or a branch per generation",
    ),
    (
        "buffer_gl1_inv",
        |p| p.family().is_some_and(|f| f == 10 || f == 11),
        "`__threadfence()`, or a branch per generation",
    ),
    (
        "buffer_inv",
        |p| arch_in(p, &["gfx94", "gfx95"]),
        "`__threadfence()`, or a branch per generation",
    ),
    (
        "s_memrealtime",
        |p| p.family().is_some_and(|f| (8..=10).contains(&f)),
        "`__builtin_readcyclecounter()` / `wall_clock64()`",
    ),
    (
        "s_memtime",
        |p| p.family().is_some_and(|f| f <= 10),
        "`__builtin_readcyclecounter()` / `clock64()`",
    ),
    (
        "s_wait_loadcnt",
        |p| p.family().is_some_and(|f| f >= 12),
        "`s_waitcnt` on gfx11 and older, under an architecture guard",
    ),
    (
        "s_wait_dscnt",
        |p| p.family().is_some_and(|f| f >= 12),
        "`s_waitcnt lgkmcnt(0)` on gfx11 and older, under an architecture guard",
    ),
    (
        "s_wait_kmcnt",
        |p| p.family().is_some_and(|f| f >= 12),
        "`s_waitcnt lgkmcnt(0)` on gfx11 and older, under an architecture guard",
    ),
    (
        "s_wait_storecnt",
        |p| p.family().is_some_and(|f| f >= 12),
        "`s_waitcnt_vscnt` on gfx10/gfx11, `s_waitcnt vmcnt` on gfx9, under an architecture guard",
    ),
    (
        "s_barrier_signal",
        |p| p.family().is_some_and(|f| f >= 12),
        "`__syncthreads()` / `__builtin_amdgcn_s_barrier()`",
    ),
    (
        "s_barrier_wait",
        |p| p.family().is_some_and(|f| f >= 12),
        "`__syncthreads()` / `__builtin_amdgcn_s_barrier()`",
    ),
    (
        "row_bcast",
        |p| p.family().is_some_and(|f| f == 8 || f == 9),
        "`__shfl` / `__builtin_amdgcn_ds_bpermute`, or `row_share` / `v_permlane*` on RDNA, under an architecture guard",
    ),
    (
        "wave_shr",
        |p| p.family().is_some_and(|f| f == 8 || f == 9),
        "`__shfl_up` / `__builtin_amdgcn_ds_bpermute`",
    ),
    (
        "wave_shl",
        |p| p.family().is_some_and(|f| f == 8 || f == 9),
        "`__shfl_down` / `__builtin_amdgcn_ds_bpermute`",
    ),
    (
        "wave_ror",
        |p| p.family().is_some_and(|f| f == 8 || f == 9),
        "`__shfl` / `__builtin_amdgcn_ds_bpermute`",
    ),
    (
        "wave_rol",
        |p| p.family().is_some_and(|f| f == 8 || f == 9),
        "`__shfl` / `__builtin_amdgcn_ds_bpermute`",
    ),
];

/// DPP control words only gfx8/gfx9 have: wave_shl:1, wave_rol:1, wave_shr:1, wave_ror:1,
/// row_bcast:15, row_bcast:31.
const GFX9_DPP: &[(u64, &str)] = &[
    (0x130, "wave_shl:1"),
    (0x134, "wave_rol:1"),
    (0x138, "wave_shr:1"),
    (0x13c, "wave_ror:1"),
    (0x142, "row_bcast:15"),
    (0x143, "row_bcast:31"),
];

/// The gfx8/gfx9-only DPP control that the argument tokens `a..=b` give, if any: a literal
/// control word (`0x142`), a helper or constant named for the control (`dpp_row_bcast(15)`,
/// `DPP_ROW_BCAST31`, `row_bcast_15`, `dpp_wave_shr1`).
fn gfx9_dpp_control(src: &crate::lex::Src, a: usize, b: usize) -> Option<&'static str> {
    if a == b {
        if let Some(v) = src.int(a) {
            return GFX9_DPP.iter().find(|(c, _)| *c == v).map(|(_, n)| *n);
        }
    }
    if src.kind(a) != Some(Tk::Ident) {
        return None;
    }
    let name: String = src
        .s(a)
        .to_ascii_lowercase()
        .chars()
        .filter(|&c| c != '_')
        .collect();
    // the row number as the name's tail or as the helper's one argument
    let arg = if b == a + 3 && src.is(a + 1, "(") && src.is(b, ")") {
        src.int(a + 2)
    } else if a == b {
        None
    } else {
        return None;
    };
    let tail = |stem: &str| -> Option<u64> {
        let rest = &name[name.find(stem)? + stem.len()..];
        if rest.is_empty() {
            arg
        } else {
            rest.parse().ok().filter(|_| arg.is_none())
        }
    };
    if name.contains("rowbcast") {
        return match tail("rowbcast") {
            Some(15) => Some("row_bcast:15"),
            Some(31) => Some("row_bcast:31"),
            _ => None,
        };
    }
    for (stem, ctl) in [
        ("waveshl", "wave_shl:1"),
        ("waverol", "wave_rol:1"),
        ("waveshr", "wave_shr:1"),
        ("waveror", "wave_ror:1"),
    ] {
        if name.contains(stem) {
            return matches!(tail(stem), Some(1) | None).then_some(ctl);
        }
    }
    None
}

/// VALU instructions with a scalar lane-mask operand (carry-out / carry-in of VOP3b, a VOPC
/// compare's result): `s[n:n+1]` on wave64, one SGPR on wave32.
fn lane_mask_insn(w: &str) -> bool {
    matches!(
        w,
        "v_mad_u64_u32"
            | "v_mad_i64_i32"
            | "v_add_co_u32"
            | "v_sub_co_u32"
            | "v_subrev_co_u32"
            | "v_addc_co_u32"
            | "v_subb_co_u32"
            | "v_subbrev_co_u32"
            | "v_div_scale_f32"
            | "v_div_scale_f64"
    ) || w.starts_with("v_cmp_") && w.ends_with("_e64")
}

/// Whether an operand constraint of the `asm` statement at `i..=c` allows an SGPR (`"=s"`,
/// `"+s"`, `"s"`).
fn sgpr_constraint(src: &crate::lex::Src, i: usize, c: usize) -> bool {
    let Some(colon) = (i..c).find(|&k| src.is(k, ":")) else {
        return false;
    };
    (colon..c).any(|k| {
        src.kind(k) == Some(Tk::Str) && {
            let b = src.str_body(k);
            !b.is_empty() && b.trim_start_matches(['=', '+', '&']).starts_with('s')
        }
    })
}

/// Words of an assembly template (mnemonics and modifiers).
fn words(t: &str) -> impl Iterator<Item = &str> {
    t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The AMD targets in scope that compile token `i` although `has` says they lack the feature.
fn lacking_at(cx: &Cx, passes: &[AmdPass], i: usize, has: Avail) -> Vec<String> {
    let b = cx.src.toks.get(i).map_or(0, |t| t.branch);
    passes
        .iter()
        .filter(|p| !has(p) && branch_taken(cx, b, p) == Some(true))
        .map(|p| p.arch.clone())
        .collect()
}

fn report(cx: &mut Cx, a: usize, b: usize, what: &str, targets: Vec<String>, instead: &str) {
    let msg = format!(
        "{what} does not exist on {}, which compiles this line",
        targets.join(", ")
    );
    let help = format!("use {instead}");
    cx.report_with(&META, META.severity, targets, a, b, msg, &help);
}

pub fn check(cx: &mut Cx) {
    let has_asm = cx.has("asm");
    let has_dpp = cx.has("dpp") || cx.has("DPP") || cx.has("Dpp");
    if !has_asm && !has_dpp {
        return;
    }
    let passes = amd_passes(cx);
    if passes.is_empty() {
        return;
    }
    let src = cx.src;
    if has_asm {
        for (i, c, tpl, kind) in asm_statements(src) {
            if kind != AsmKind::Gcn {
                continue;
            }
            // the first instruction of the template the table knows, with the targets lacking it
            let hit = words(&tpl).find_map(|w| {
                let (name, has, instead) = INSNS.iter().find(|(m, _, _)| w == *m)?;
                let lack = lacking_at(cx, &passes, i, *has);
                (!lack.is_empty()).then(|| (w.to_string(), *name, lack, *instead))
            });
            if let Some((w, _name, lack, instead)) = hit {
                report(cx, i, c, &format!("`{w}`"), lack, instead);
            } else if let Some(w) = words(&tpl).find(|w| lane_mask_insn(w)) {
                // an SGPR operand for the instruction's lane mask (carry, compare result):
                // a register pair on wave64, one SGPR on wave32
                if sgpr_constraint(src, i, c) {
                    let lack = lacking_at(cx, &passes, i, |p| p.wave == 64);
                    // Compiled for wave32 only (a wave32 guard around it): a one-SGPR
                    // operand is the right form there, and without the operand's C type the
                    // scanner cannot tell it from a 64-bit one, so only assembly that both
                    // wave sizes compile is reported (one operand cannot suit both).
                    let wave64 = lacking_at(cx, &passes, i, |p| p.wave != 64);
                    if !lack.is_empty() && !wave64.is_empty() {
                        let msg = format!(
                            "`{w}` binds its lane-mask operand to an SGPR constraint: the mask is a register pair on wave64 and one SGPR on wave32, and the wave32 target(s) {} compile this line",
                            lack.join(", ")
                        );
                        cx.report_with(&META, META.severity, lack, i, c, msg, "guard the assembly for wave64 (`__AMDGCN_WAVEFRONT_SIZE == 64`) and give wave32 a path, or let the compiler pick the registers (`__builtin_amdgcn_*` or plain C++)");
                    }
                }
            }
        }
    }
    if has_dpp {
        let n = src.toks.len();
        for i in 0..n {
            if src.kind(i) != Some(Tk::Ident) || !src.s(i).to_ascii_lowercase().contains("dpp") {
                continue;
            }
            // `f<T, 0x142>(...)` or `f(..., 0x142, ...)`
            let open = i + 1;
            let args: Vec<(usize, usize)> = match src.s(open) {
                "(" => cx.call_args(open),
                "<" => {
                    let Some(close) = (open + 1..n.min(open + 32)).find(|&k| src.is(k, ">")) else {
                        continue;
                    };
                    let mut out = Vec::new();
                    let mut st = open + 1;
                    for k in open + 1..=close {
                        if src.is(k, ",") || k == close {
                            if k > st {
                                out.push((st, k - 1));
                            }
                            st = k + 1;
                        }
                    }
                    out
                }
                _ => continue,
            };
            for (a, b) in args {
                let Some(name) = gfx9_dpp_control(src, a, b) else {
                    continue;
                };
                let has: Avail = |p| p.family().is_some_and(|f| f == 8 || f == 9);
                let lack = lacking_at(cx, &passes, a, has);
                if lack.is_empty() {
                    continue;
                }
                let what = format!("the DPP control `{}` ({name})", cx.snippet(a, b));
                report(cx, a, a, &what, lack, "`__shfl` / `__builtin_amdgcn_ds_bpermute`, or `row_share` / `__builtin_amdgcn_permlanex16` on RDNA, behind an architecture test");
            }
        }
    }
}
