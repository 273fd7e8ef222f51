//! `wave-size-arch-list`: a warp-width constant chosen by a list of AMD architectures that
//! gives an AMD target in scope the other width.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::target_cond::{amd_passes, branch_taken, names_amd_arch, AmdPass};

pub static META: RuleMeta = RuleMeta {
    id: "wave-size-arch-list",
    summary: "warp width chosen by an AMD architecture list that gives a target in scope the wrong width",
    what: "Finds warp-width constants (`#define WARP_SIZE 64`, `constexpr int kWaveSize = 32;`: a name with \
`warp` or `wave` and the value 32 or 64) defined in preprocessor branches that test AMD architecture macros \
(`__gfx1030__`, `__GFX9__`, ...), evaluates those conditions for the device pass of each AMD target in scope, \
and reports the list when a target gets a width other than its own. AMD architectures the knowledge base \
knows but the scope leaves out (gfx950, gfx1201, ...) are evaluated too: when only they get the wrong width, \
the finding is a note naming them.",
    why: "clang defines exactly one `__gfxNNNN__` and one `__GFXn__` macro per device pass. An allow-list of \
wave32 parts (`#if defined(__gfx1030__)` / `32` / `#else` / `64`) sends every RDNA part it does not name, such \
as gfx1100 or a newer one, to the 64 branch, although HIP compiles RDNA for 32-lane wavefronts; a wave64 list \
that misses a CDNA part gives it 32. Masks, lane ids and reductions built on the constant then cover half, or \
twice, the real wavefront.",
    example: "#if defined(__gfx1030__)\n#define WARP_SIZE 32\n#else\n#define WARP_SIZE 64\n#endif",
    use_instead: "// device passes only, by family: every RDNA generation compiles for 32-lane wavefronts\n#if defined(__HIP_DEVICE_COMPILE__)\n#if defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)\n#define WARP_SIZE 32\n#else\n#define WARP_SIZE 64\n#endif\n#endif\n// host code: hipDeviceProp_t::warpSize",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// A name that reads as a warp width (and not a bound on one).
fn width_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    (l.contains("warp") || l.contains("wave"))
        && !l.contains("max")
        && !l.contains("min")
        && !l.contains("per")
        && !l.contains("log")
        && !l.contains("mask")
        && !l.contains("shift")
}

/// The innermost enclosing branch of `b` whose group tests an AMD architecture: the group's
/// first branch.
fn deciding_group(cx: &Cx, mut b: u32) -> Option<u32> {
    let src = cx.src;
    let mut guard = 0;
    while b != 0 && guard < 10_000 {
        guard += 1;
        let br = src.branches.get(b as usize)?;
        let text = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        let first = if br.is_alternative {
            src.branches
                .iter()
                .position(|x| x.group == br.group && !x.is_alternative)
                .map(|p| p as u32)
        } else {
            Some(b)
        };
        let group_names_arch = names_amd_arch(text)
            || src.branches.iter().any(|x| {
                x.group == br.group
                    && names_amd_arch(
                        src.text
                            .get(x.cond.0 as usize..x.cond.1 as usize)
                            .unwrap_or(""),
                    )
            });
        if group_names_arch {
            return first;
        }
        b = br.parent;
    }
    None
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__gfx") || cx.has("__GFX")) {
        return;
    }
    let passes = amd_passes(cx);
    if passes.is_empty() {
        return;
    }
    // the AMD architectures the KB knows that the scope leaves out
    let outside: Vec<AmdPass> = cx
        .ctx
        .kb
        .archs_by_vendor(kplan_kb::Vendor::Amd)
        .filter(|a| a.id.starts_with("gfx") && !passes.iter().any(|p| p.arch == a.id))
        .filter_map(|a| {
            a.warp_size.get().map(|w| AmdPass {
                arch: a.id.clone(),
                wave: w,
            })
        })
        .collect();
    let src = cx.src;
    // (branch of the definition, name, value)
    let mut defs: Vec<(u32, &str, u64)> = Vec::new();
    for d in &src.defines {
        if d.function_like || d.branch == 0 {
            continue;
        }
        let name = src
            .text
            .get(d.name_start as usize..d.name_end as usize)
            .unwrap_or("");
        // the body is a token range: `64` or `(64)`
        let (b0, b1) = (d.body.0 as usize, d.body.1 as usize);
        let lit = match b1.saturating_sub(b0) {
            1 => b0,
            3 if src.is(b0, "(") && src.is(b0 + 2, ")") => b0 + 1,
            _ => continue,
        };
        let Some(v) = src.int(lit) else {
            continue;
        };
        if matches!(v, 32 | 64) && width_name(name) {
            defs.push((d.branch, name, v));
        }
    }
    // `constexpr int kWaveSize = 64;` / `const int WARP_SIZE = 32;` in a branch
    for i in 1..src.toks.len().saturating_sub(2) {
        let Some(t) = src.toks.get(i) else { break };
        if t.branch == 0 || t.kind != Tk::Ident || !src.is(i + 1, "=") {
            continue;
        }
        let Some(v) = src.int(i + 2) else { continue };
        if !matches!(v, 32 | 64) || !src.is(i + 3, ";") || !width_name(src.s(i)) {
            continue;
        }
        let decl = (i.saturating_sub(6)..i)
            .rev()
            .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
            .any(|j| matches!(src.s(j), "constexpr" | "const"));
        if decl {
            defs.push((t.branch, src.s(i), v));
        }
    }
    // per deciding group: the targets that get the wrong width (in scope, out of scope)
    type Found<'n> = (u32, &'n str, u64, Vec<String>, Vec<String>);
    let mut found: Vec<Found> = Vec::new();
    for (b, name, v) in defs {
        let Some(g) = deciding_group(cx, b) else {
            continue;
        };
        let wrong_of = |ps: &[AmdPass]| -> Vec<String> {
            ps.iter()
                .filter(|p| u64::from(p.wave) != v && branch_taken(cx, b, p) == Some(true))
                .map(|p| p.arch.clone())
                .collect()
        };
        let wrong = wrong_of(&passes);
        let wrong_out = wrong_of(&outside);
        if wrong.is_empty() && wrong_out.is_empty() {
            continue;
        }
        if let Some(e) = found.iter_mut().find(|e| e.0 == g && e.1 == name) {
            for w in wrong {
                if !e.3.contains(&w) {
                    e.3.push(w);
                }
            }
            for w in wrong_out {
                if !e.4.contains(&w) {
                    e.4.push(w);
                }
            }
        } else {
            found.push((g, name, v, wrong, wrong_out));
        }
    }
    let help = "in device code, test the architecture families (`__GFX10__`, `__GFX11__`, `__GFX12__` are wave32; `__GFX9__` wave64) under `__HIP_DEVICE_COMPILE__` rather than single parts; in host code, query `hipDeviceProp_t::warpSize`";
    for (g, name, v, wrong, wrong_out) in found {
        let Some(br) = src.branches.get(g as usize) else {
            continue;
        };
        let wave_of = |a: &String| {
            passes
                .iter()
                .chain(outside.iter())
                .find(|p| &p.arch == a)
                .map_or(0, |p| p.wave)
        };
        let own: Vec<String> = wrong
            .iter()
            .map(|a| format!("{a} ({}-lane wavefronts)", wave_of(a)))
            .collect();
        let out: Vec<String> = wrong_out
            .iter()
            .map(|a| format!("{a} ({})", wave_of(a)))
            .collect();
        let text = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        let end = br.cond.0 as usize + text.trim_end().len();
        if wrong.is_empty() {
            let msg = format!(
                "this architecture list gives {} `{name}` = {v}: no target in scope is affected, but these AMD architectures fall to the other branch",
                out.join(", ")
            );
            cx.report_span(
                &META,
                Severity::Note,
                wrong_out,
                br.cond.0 as usize,
                end,
                msg,
                help,
            );
            continue;
        }
        let also = if out.is_empty() {
            String::new()
        } else {
            format!(" (outside the scope too: {})", out.join(", "))
        };
        let msg = format!(
            "this architecture list gives {} `{name}` = {v}: the condition does not name it, so it falls to the other branch{also}",
            own.join(", ")
        );
        cx.report_span(
            &META,
            META.severity,
            wrong,
            br.cond.0 as usize,
            end,
            msg,
            help,
        );
    }
}
