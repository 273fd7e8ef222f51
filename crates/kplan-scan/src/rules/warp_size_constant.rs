//! `warp-size-constant`: a warp-size macro or constant defined as a fixed 32 for every platform.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Tk, IN_DEFINE};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "warp-size-constant",
    summary: "warp-size macro or constant fixed at 32 for every platform, or at 64 for every AMD target",
    what: "Finds `#define WARP_SIZE 32`, `constexpr int kWarpSize = 32;`, `NumThreadsPerWarp = 32` and similar \
definitions of the warp width that are not under a platform guard. Code that uses the name is portable only if \
the definition is. Also finds the AMD branch that fixes the width at 64 for every AMD GPU (`#ifdef \
__HIP_PLATFORM_AMD__` / `#define WARP_SIZE 64`) when a wave32 AMD target (RDNA, gfx10/gfx11/gfx12) is in scope; a \
branch that tests for a wave64 architecture (`__GFX9__`, `__gfx942__`, `== 64`) is fine. A defaulted parameter \
(`int WarpSize = 64`) counts as a definition.",
    why: "Every use of the constant inherits the 32-lane assumption. On wave64 AMD targets the lane masks, \
reductions and per-warp buffers built from it cover half a wavefront. The mirror image bites RDNA: a width \
fixed at 64 for every AMD build makes RDNA kernels (wave32 by default) index lanes that do not exist, launch \
half-empty reductions and read the wrong shuffle sources. One finding at the definition replaces hundreds at the \
uses.",
    example: "#define WARP_SIZE 32",
    use_instead: "#if defined(__HIP_PLATFORM_AMD__) && defined(__GFX9__)\n#define WARP_SIZE 64  // CDNA/GCN device code: wave64\n#elif defined(__HIP_PLATFORM_AMD__)\n#define WARP_SIZE 32  // RDNA: wave32 (host code: hipDeviceProp_t::warpSize)\n#else\n#define WARP_SIZE 32\n#endif",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// Names that denote the warp width (AMD's name for it, the wavefront, too: `WAVE_SIZE`,
/// `kWavefrontSize`).
pub fn warp_width_name(s: &str) -> bool {
    let l = s
        .to_ascii_lowercase()
        .replace("wavefront", "warp")
        .replace("wave", "warp");
    let plural = l
        .replace("warpsize", "")
        .replace("warp_size", "")
        .contains("warps");
    if !l.contains("warp") || plural || l.contains("per_block") || l.contains("perblock") {
        return false;
    }
    let rest = l.replace("warp", "");
    let rest = rest.trim_matches('_');
    rest.is_empty()
        || rest == "k"
        || rest == "k_"
        || rest.contains("size")
        || rest.contains("width")
        || rest.contains("threads")
        || rest.contains("lanes")
        || rest.contains("len")
}

/// The file uses `name` as an explicit shuffle width (a logical 32-lane warp on purpose): as
/// the `width` argument of a shuffle, `width = name`, or a template argument of a warp
/// reduction helper.
pub fn used_as_width(cx: &Cx, name: &str) -> bool {
    cx.width_uses.get_or_init(|| width_uses(cx)).contains(name)
}

/// Every name the file uses as a logical width, in one pass: assigned to a `*width*` variable,
/// a template argument of a reduce/shuffle/warp callee, or the explicit last (width) argument
/// of a shuffle.
pub fn width_uses<'a>(cx: &Cx<'_, 'a, '_>) -> std::collections::HashSet<&'a str> {
    let src = cx.src;
    let n = src.toks.len();
    let mut out = std::collections::HashSet::new();
    for i in 1..n {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let name = src.s(i);
        if src.is(i - 1, "=") && i >= 2 && src.s(i - 2).to_ascii_lowercase().contains("width") {
            out.insert(name);
            continue;
        }
        if matches!(src.s(i - 1), "<" | ",") && matches!(src.s(i + 1), ">" | ",") {
            // callee of the template argument list
            let mut k = i - 1;
            let mut steps = 0;
            while k > 0 && steps < 16 && !src.is(k, "<") {
                k -= 1;
                steps += 1;
            }
            if k > 0 && src.is(k, "<") {
                let callee = src.s(k - 1).to_ascii_lowercase();
                if callee.contains("reduce")
                    || callee.contains("shfl")
                    || callee.contains("shuffle")
                    || callee.contains("warp")
                {
                    out.insert(name);
                    continue;
                }
            }
        }
        if src.is(i + 1, ")") {
            // last argument of a shuffle with an explicit width
            let Some(open) = src.mate(i + 1) else {
                continue;
            };
            if open == 0 {
                continue;
            }
            if let Some(ar) = crate::rules::shuffle_offset_literal::shuffle_arity(src.s(open - 1)) {
                if cx.call_args(open).len() == ar + 1 {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// The condition of a branch names a wave64-only architecture or width, so a 64 under it is right.
/// Every alternative of a top-level `||` must: in `WARP_SIZE == 64 || (defined(USE_HIP) &&
/// HIP_VERSION > 60500000)` the second alternative lets every AMD target in, RDNA included.
pub fn wave64_condition(c: &str) -> bool {
    let mut depth = 0i32;
    let mut parts = Vec::new();
    let mut start = 0;
    let b = c.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'|' if depth == 0 && b.get(i + 1) == Some(&b'|') => {
                parts.push(&c[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&c[start..]);
    parts.iter().all(|p| wave64_alternative(p))
}

/// One alternative of [`wave64_condition`]: it names a wave64-only architecture or width.
fn wave64_alternative(c: &str) -> bool {
    let l = c.to_ascii_lowercase();
    // GCN and CDNA families (gfx6 to gfx9) run wave64 only
    ["gfx6", "gfx7", "gfx8", "gfx9"].iter().any(|f| l.contains(f))
        || l.contains("cdna")
        || l.contains("wave64")
        || l.contains("wavefront64")
        || l.contains("== 64")
        || l.contains("==64")
        // `__GCN__`-style names, not `__AMDGCN__` (every AMD target, RDNA included)
        || (l.contains("gcn") && !l.contains("amdgcn"))
        // a width test that does not pick 32 (`__AMDGCN_WAVEFRONT_SIZE == 32` is no wave64 test)
        || ((l.contains("wavefront_size") || l.contains("wave_size")) && !l.contains("32"))
}

/// The condition picks out wave32 parts (`__AMDGCN_WAVEFRONT_SIZE == 32`, RDNA architectures):
/// the branches after it in the same `#if` group are the wave64 ones.
fn wave32_condition(c: &str) -> bool {
    let l = c.to_ascii_lowercase();
    l.contains("== 32")
        || l.contains("==32")
        || l.contains("wave32")
        || l.contains("gfx10")
        || l.contains("gfx11")
        || l.contains("gfx12")
        || l.contains("rdna")
}

/// Where a width fixed at 64 under branch `b` is wrong: `None` when a wave64-only condition
/// encloses it; `Some(true)` inside an AMD branch (RDNA, wave32, is hurt); `Some(false)` with no
/// platform guard at all (every 32-lane target is hurt).
fn width64_scope(cx: &Cx, mut b: u32) -> Option<bool> {
    let src = cx.src;
    let mut amd = false;
    let mut guard = 0;
    while b != 0 && guard < 10_000 {
        let Some(br) = src.branches.get(b as usize) else {
            break;
        };
        if br.platform == crate::lex::Platform::Amd {
            amd = true;
        } else if br.platform == crate::lex::Platform::Nvidia && !amd {
            // an NVIDIA-only branch (a wrong but harmless 64 there is not this rule's business)
            let cond = src
                .text
                .get(br.cond.0 as usize..br.cond.1 as usize)
                .unwrap_or("");
            if !cond
                .trim_start_matches(['#', ' ', '\t'])
                .starts_with("else")
            {
                return None;
            }
        }
        let cond = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        let is_else = cond
            .trim_start_matches(['#', ' ', '\t'])
            .starts_with("else");
        if !is_else && wave64_condition(cond) {
            return None;
        }
        // an earlier branch of the same group took the wave32 parts
        if br.is_alternative
            && src.branches.iter().take(b as usize).any(|x| {
                x.group == br.group
                    && wave32_condition(
                        src.text
                            .get(x.cond.0 as usize..x.cond.1 as usize)
                            .unwrap_or(""),
                    )
            })
        {
            return None;
        }
        b = br.parent;
        guard += 1;
    }
    if amd {
        return Some(true);
    }
    Some(false)
}

/// The file is HIP-only source: a `.hip` file, or one that includes the HIP runtime header.
fn hip_only_file(cx: &Cx) -> bool {
    cx.path.extension().is_some_and(|e| e == "hip") || cx.has("hip/hip_runtime.h")
}

fn report_64(cx: &mut Cx, s: usize, e: usize, name: &str, in_amd_branch: bool) {
    let amd_only = in_amd_branch || hip_only_file(cx);
    let targets: Vec<String> = cx
        .ctx
        .targets
        .iter()
        // the 64 was written for AMD: it bites the wave32 AMD targets in scope (an NVIDIA-only
        // scope keeps every warp-size rule silent)
        .filter(|t| !t.is_wave64() && t.vendor() == kplan_kb::Vendor::Amd)
        .map(|t| t.id().to_string())
        .collect();
    if targets.is_empty() {
        return;
    }
    let msg = if amd_only {
        format!(
            "`{name}` is fixed at 64 for every AMD target; RDNA (wave32) runs 32-lane wavefronts"
        )
    } else {
        format!("`{name}` is fixed at 64 for every platform; only wave64 AMD targets have 64 lanes (RDNA and NVIDIA have 32)")
    };
    cx.report_span(&META, Severity::Error, targets, s, e, msg, "test for the wave64 architectures (`__GFX9__`, or `__AMDGCN_WAVEFRONT_SIZE__ == 64` in device code) or use `warpSize`; size host launches from the device property");
}

/// A 64 for a name that is an upper bound (`MAX_WARP_SIZE`) is right everywhere.
fn bound_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("max") || l.contains("upper") || l.contains("limit")
}

/// A name that spells its own value (`LIB_WARP_SIZE_32` = 32, `..._64` = 64): one of a set of
/// named widths, not the choice of one; the code that picks among them is what matters.
fn named_literal(name: &str, v: u64) -> bool {
    name.rsplit('_').next() == Some(v.to_string().as_str())
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("arp") || cx.has("ARP")) {
        return;
    }
    let src = cx.src;
    // #define NAME 32
    for d in &src.defines {
        if d.function_like || d.body.1 != d.body.0 + 1 {
            continue;
        }
        let name = src
            .text
            .get(d.name_start as usize..d.name_end as usize)
            .unwrap_or("");
        if !warp_width_name(name) {
            continue;
        }
        if src.int(d.body.0 as usize) == Some(64) {
            if let Some(amd) = width64_scope(cx, d.branch)
                .filter(|_| !bound_name(name) && !named_literal(name, 64))
            {
                report_64(cx, d.name_start as usize, d.name_end as usize, name, amd);
            }
            continue;
        }
        if src.int(d.body.0 as usize) != Some(32) {
            continue;
        }
        if src.branch_platform(d.branch) != crate::lex::Platform::Any
            || used_as_width(cx, name)
            || named_literal(name, 32)
        {
            continue;
        }
        if let Some((sev, targets)) = cx.ctx.scope_severity(&META) {
            let msg = format!("`{name}` is defined as 32 for every platform");
            cx.report_span(&META, sev, targets, d.name_start as usize, d.name_end as usize, msg, "define it per platform (64 under `__HIP_PLATFORM_AMD__` for wave64 builds) or use `warpSize`");
        }
    }
    // NAME = 32 in a declaration (constexpr/const/static/enum)
    let n = src.toks.len();
    for k in 1..n.saturating_sub(2) {
        if !src.is(k, "=") || src.toks[k].flags & IN_DEFINE != 0 {
            continue;
        }
        let v = src.int(k + 1);
        // `; , }` end a declaration or enumerator, `)` a defaulted parameter
        if v == Some(64)
            && matches!(src.s(k + 2), ";" | "," | "}" | ")")
            && src.kind(k - 1) == Some(Tk::Ident)
            && warp_width_name(src.s(k - 1))
            && k >= 2
            && src.kind(k - 2) == Some(Tk::Ident)
            && !bound_name(src.s(k - 1))
        {
            if let Some(amd) = width64_scope(cx, src.toks[k].branch) {
                let (s0, e0) = src.span(k - 1);
                let name = src.s(k - 1);
                report_64(cx, s0, e0, name, amd);
            }
            continue;
        }
        if v != Some(32) {
            continue;
        }
        if !matches!(src.s(k + 2), ";" | "," | "}" | ">") {
            continue;
        }
        if src.kind(k - 1) != Some(Tk::Ident) || !warp_width_name(src.s(k - 1)) {
            continue;
        }
        // a declaration: a type or qualifier before the name, or an enumerator
        let decl =
            k >= 2 && (src.kind(k - 2) == Some(Tk::Ident) || matches!(src.s(k - 2), "{" | ","));
        if !decl || cx.guarded(k) || used_as_width(cx, src.s(k - 1)) {
            continue;
        }
        let msg = format!("`{}` is fixed at 32 for every platform", src.s(k - 1));
        cx.report(
            &META,
            k - 1,
            k + 1,
            msg,
            "derive it from `warpSize` or define it per platform",
        );
    }
}
