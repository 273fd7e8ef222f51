//! `warp-width-constant-use`: a project constant fixed at 32 on every platform, often defined in
//! another file, used as the warp width where the file is compiled: lane and warp ids taken
//! with it, blocks sized as a number of its warps.

use crate::cuda::{is_thread_ident, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use std::collections::HashMap;

pub static META: RuleMeta = RuleMeta {
    id: "warp-width-constant-use",
    summary: "a project constant fixed at 32, often from another file, used as the warp width (lane and warp ids, blocks sized in warps)",
    what: "Resolves names through the project index: a constant or macro that is the integer 32 on every platform \
(no AMD-only or device-only alternative), defined in another file of the scan, and used here as the warp width. \
It reports `threadIdx.x % N` / `threadIdx.x / N` lane and warp ids and launch block sizes written as a number of \
such warps (`<<<grid, 4 * N>>>`, `__launch_bounds__(8 * N)`). The name counts as the warp width when it is named \
so (`WARP_SIZE`, `kWarpThreads`) or when this file computes both a lane id (`lane = threadIdx.x % N`) and a warp \
id (`warp = threadIdx.x / N`) with it; a constant of another name defined in this file counts too. A project that \
passes the name as the explicit `width` of its shuffles (`width = N`, a shuffle's last argument) uses it as a \
logical 32-lane warp on purpose and is left alone. The ids alone make 32-thread groups, which stay correct on 64 \
lanes as long as nothing takes a group for the hardware warp (index arithmetic, xor or down shuffles with offsets \
up to 16): a warning. It is an error when the same function also uses an operation whose meaning changes at 64 \
lanes: a ballot or a count of a lane mask, `__syncwarp` as the only barrier between the groups, a shuffle at \
offset 32, or shared partials sized by `warpSize`. The definition itself is `warp-size-constant`'s finding when \
it is named like the warp width.",
    why: "On wave64 AMD targets (CDNA: gfx90a, gfx942, gfx950) a wavefront has 64 lanes. A lane id modulo 32 names \
half a wavefront, a warp id divided by 32 counts two ids per wavefront, and a block of `k * 32` threads holds \
k/2 wavefronts. Where the code treats each 32-thread group as a warp of the hardware, a ballot covers both groups, \
`__syncwarp` orders the wavefront rather than the group, and per-warp partials sized by the real width overflow, \
so results come out wrong. The definition in a shared header looks harmless in every file that only uses it.",
    example: "#define WS 32  // usually in a shared header of the project\n__global__ void k(int* out, const int* flags) {\n    int lane = threadIdx.x % WS;\n    int warp = threadIdx.x / WS;\n    unsigned long long votes = __ballot(flags[threadIdx.x]);\n    if (lane == 0) out[warp] = __popcll(votes);\n}\nvoid launch(int* out, const int* flags, int blocks) { k<<<blocks, 4 * WS>>>(out, flags); }",
    use_instead: "__global__ void k(int* out, const int* flags) {\n    int lane = threadIdx.x % warpSize;\n    int warp = threadIdx.x / warpSize;\n    unsigned long long votes = __ballot(flags[threadIdx.x]);\n    if (lane == 0) out[warp] = __popcll(votes);\n}\n// size the block from the device's warp size (hipDeviceProp_t::warpSize) on the host",
    severity: Severity::Warning,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// Why a use of `name` is a 32-lane warp width.
#[derive(Clone, Copy)]
enum Use {
    Lane,
    WarpId,
    Block,
}

pub fn check(cx: &mut Cx) {
    if cx.index.consts.is_empty() {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // candidate names: 32 everywhere; one named like the warp width and defined here is
    // `warp-size-constant`'s finding at the definition
    let mut cand: HashMap<String, bool> = HashMap::new();
    let mut is_cand = |cx: &Cx, s: &str| -> bool {
        if let Some(v) = cand.get(s) {
            return *v;
        }
        *cand.entry(s.to_string()).or_insert_with(|| {
            cx.index.fixed_32(s)
                && cx.index.consts.get(s).is_some_and(|d| {
                    !crate::rules::warp_size_constant::warp_width_name(s)
                        || d.iter().all(|d| d.file.as_path() != cx.path)
                })
        })
    };
    let mut sites: Vec<(usize, usize, &str, Use)> = Vec::new();
    // names this file takes both lane and warp ids with (`% N` and `/ N` on thread ids)
    let mut role: HashMap<&str, (bool, bool)> = HashMap::new();
    for k in 1..n.saturating_sub(1) {
        let op = src.s(k);
        match op {
            "%" | "/" if src.kind(k + 1) == Some(Tk::Ident) => {
                let name = src.s(k + 1);
                if matches!(src.s(k + 2), "(" | "." | "::" | "[" | "*") || !is_cand(cx, name) {
                    continue;
                }
                let Some(a) = cx.left_operand(k) else {
                    continue;
                };
                if !cx.any_ident(a, k - 1, is_thread_ident) || cx.guarded(k) {
                    continue;
                }
                // `lane = threadIdx.x % N`, `warp = threadIdx.x / N`: the name's role
                let target = (a >= 2 && src.is(a - 1, "=")).then(|| src.s(a - 2));
                let r = role.entry(name).or_default();
                if op == "%" {
                    r.0 |= target.is_some_and(crate::cuda::is_lane_ident);
                } else {
                    r.1 |= target.is_some_and(crate::cuda::is_warp_id_ident);
                }
                let u = if op == "%" { Use::Lane } else { Use::WarpId };
                sites.push((a, k + 1, name, u));
            }
            "<<<" => {
                let Some((args, _)) = crate::rules::launch::launch_args(src, k) else {
                    continue;
                };
                let Some(&(a, b)) = args.get(1) else { continue };
                if let Some(name) = warps_product(cx, a, b, &mut is_cand) {
                    if !cx.guarded(k) {
                        sites.push((a, b, name, Use::Block));
                    }
                }
            }
            "(" if src.is(k - 1, "__launch_bounds__") => {
                let args = cx.call_args(k);
                if let Some(&(a, b)) = args.first() {
                    if let Some(name) = warps_product(cx, a, b, &mut is_cand) {
                        if !cx.guarded(k) {
                            sites.push((a, b, name, Use::Block));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if sites.is_empty() {
        return;
    }
    let mut logical: HashMap<&str, bool> = HashMap::new();
    let mut hazards: HashMap<u32, Option<&'static str>> = HashMap::new();
    let Some((_, targets)) = cx.ctx.scope_severity(&META) else {
        return;
    };
    for (a, b, name, u) in sites {
        let named = crate::rules::warp_size_constant::warp_width_name(name);
        if !named && role.get(name).copied() != Some((true, true)) {
            continue;
        }
        let on_purpose = *logical.entry(name).or_insert_with(|| {
            cx.index.logical_widths.contains(name)
                || crate::rules::warp_size_constant::used_as_width(cx, name)
        });
        if on_purpose {
            continue;
        }
        let what = match u {
            Use::Lane => "takes the lane in a 32-lane warp",
            Use::WarpId => "takes the warp index in 32-lane warps",
            Use::Block => "sizes the block in 32-lane warps",
        };
        let file = cx
            .index
            .consts
            .get(name)
            .and_then(|d| d.first())
            .map(|d| crate::diag::display_path(&d.file))
            .unwrap_or_default();
        // the ids alone make 32-thread groups, which work on 64 lanes as long as nothing treats
        // a group as the hardware warp; an operation in the same function whose meaning changes
        // at 64 lanes makes it a wrong result
        let f = src.toks[a].func;
        let hazard = if matches!(u, Use::Block) || f == 0 {
            None
        } else {
            *hazards.entry(f).or_insert_with(|| hardware_warp_use(cx, f))
        };
        let (sev, why) = match hazard {
            Some(h) => (
                Severity::Error,
                format!("; the function also uses {h}, which spans the whole 64-lane wavefront"),
            ),
            None => (Severity::Warning, String::new()),
        };
        let msg = format!(
            "`{}` {what}: `{name}` is 32 on every platform (defined in {file}); wave64 AMD targets have 64 lanes{why}",
            cx.snippet(a, b)
        );
        cx.report_with(&META, sev, targets.clone(), a, b, msg, "use `warpSize` in device code and the device's warp size (`hipDeviceProp_t::warpSize`) on the host, or define the constant per platform");
    }
}

/// An operation in function `f` (index + 1 into `src.funcs`) whose meaning changes at 64 lanes,
/// so that a 32-thread group taken with a fixed 32 is not the warp it works on: a ballot or a
/// population count of a lane mask, `__syncwarp` as the only barrier, a shuffle at offset 32
/// (or a shuffle loop starting there), or shared partials sized by the hardware width.
fn hardware_warp_use(cx: &Cx, f: u32) -> Option<&'static str> {
    let src = cx.src;
    let fu = src.funcs.get((f as usize).checked_sub(1)?)?;
    let (open, close) = (fu.open as usize, (fu.close as usize).min(src.toks.len()));
    let mut syncwarp = false;
    let mut barrier = false;
    let mut loop32 = false;
    let mut found = None;
    for k in open + 1..close {
        if src.kind(k) != Some(Tk::Ident) {
            // `for (int o = 32; ...` in a function that shuffles
            if src.is(k, "=") && src.int(k + 1) == Some(32) && src.is(k + 2, ";") {
                loop32 = true;
            }
            continue;
        }
        let w = cx.intrinsic_at(k);
        if src.is(k + 1, "(") {
            if crate::rules::full_mask_literal::is_ballot_call(w)
                || matches!(
                    w,
                    "__popc" | "__popcll" | "__ffs" | "__ffsll" | "__any" | "__all"
                )
                || w.starts_with("__any_sync")
                || w.starts_with("__all_sync")
            {
                found.get_or_insert("a ballot or a lane-mask count");
            }
            if w == "__syncwarp" {
                syncwarp = true;
            }
            if let Some(ar) = crate::rules::shuffle_offset_literal::shuffle_arity(w) {
                let args = cx.call_args(k + 1);
                if loop32
                    || args
                        .get(ar - 1)
                        .is_some_and(|&(x, y)| x == y && src.int(x) == Some(32))
                {
                    found.get_or_insert("a shuffle at offset 32");
                }
            }
        }
        let l = w.to_ascii_lowercase();
        if w.starts_with("__syncthreads")
            || l.contains("barrier")
            || w == "sync" && k > 0 && matches!(src.s(k - 1), "." | "->")
        {
            barrier = true;
        }
        // `__shared__ float partial[N / warpSize]`
        if w == "__shared__" {
            let end = (k..close.min(k + 40))
                .find(|&j| src.is(j, ";"))
                .unwrap_or(k);
            if (k..end).any(|j| {
                src.is(j, "[")
                    && src.mate(j).is_some_and(|m| {
                        (j..m).any(|t| src.is(t, "warpSize") || cx.index.is_device_warp(src.s(t)))
                    })
            }) {
                found.get_or_insert("shared partials sized by the hardware warp width");
            }
        }
    }
    if found.is_none() && syncwarp && !barrier {
        found = Some("`__syncwarp` as the only barrier between its groups");
    }
    found
}

/// `k * N` / `N * k` (the whole range `a..=b`): the candidate name N.
fn warps_product<'a>(
    cx: &Cx<'_, 'a, '_>,
    a: usize,
    b: usize,
    is_cand: &mut impl FnMut(&Cx, &str) -> bool,
) -> Option<&'a str> {
    let src = cx.src;
    if b != a + 2 || !src.is(a + 1, "*") {
        return None;
    }
    for (x, y) in [(a, b), (b, a)] {
        if src.kind(x) == Some(Tk::Ident)
            && matches!(src.kind(y), Some(Tk::Ident) | Some(Tk::Number))
            && is_cand(cx, src.s(x))
        {
            return Some(src.s(x));
        }
    }
    None
}
