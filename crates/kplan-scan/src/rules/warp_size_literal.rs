//! `warp-size-literal`: 32 / 31 / `>> 5` used as the warp width in lane and warp arithmetic.

use crate::cuda::{
    is_block_threads_ident, is_lane_ident, is_thread_ident, is_warp_count_ident, is_warp_id_ident,
    Cx,
};
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "warp-size-literal",
    summary: "literal 32, 31 or `>> 5` used as the warp width in lane or warp arithmetic",
    what: "Finds lane and warp arithmetic that hard-codes a 32-lane warp: `threadIdx.x % 32`, `tid & 31`, \
`tid / 32`, `tid >> 5`, `warp_id * 32`, `blockDim.x / 32`, and `threadIdx.x < 32` used to pick the first warp; \
in host code too, a thread count made from a number of warps (`num_warps * 32`, `32 * warps_per_block`; a warning \
in host code, since the block itself is valid on both widths).",
    why: "AMD CDNA GPUs (gfx90a, gfx942, gfx950) run 64-lane wavefronts. On them `threadIdx.x % 32` is not the \
lane, `tid / 32` is not the wavefront, and `blockDim.x / 32` counts twice as many warps as exist: reductions \
silently combine the wrong lanes and results are wrong without any error. A block of `num_warps * 32` threads \
holds half as many wavefronts as the kernel's warp count expects.",
    example: "int lane = threadIdx.x % 32;\nint warp = threadIdx.x / 32;\nint nwarps = blockDim.x / 32;",
    use_instead: "int lane = threadIdx.x % warpSize;\nint warp = threadIdx.x / warpSize;\nint nwarps = blockDim.x / warpSize;",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !(cx.has("32")
        || cx.has("31")
        || cx.has(">> 5")
        || cx.has(">>5")
        || cx.has("0x1f")
        || cx.has("0x1F"))
    {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut logical: Vec<Option<bool>> = Vec::new();
    for k in 1..n.saturating_sub(1) {
        let op = src.s(k);
        if op == "+=" {
            block_size_sweep(cx, k);
            continue;
        }
        let lit = match op {
            "%" | "/" | "*" | "&" | ">>" | "<" | ">=" | "%=" | "/=" | ">>=" => match src.int(k + 1)
            {
                Some(v) => v,
                None => {
                    if op == "*" {
                        // `32 * warp_id`
                        if let (Some(32), Some(r)) = (src.int(k - 1), cx.right_operand(k)) {
                            // `32 * warp_id` in device code, `32 * num_warps` anywhere
                            let count = cx.any_ident(k + 1, r, is_warp_count_ident)
                                && !cx.any_ident(k + 1, r, is_warp_id_ident)
                                && !matches!(src.s(k.saturating_sub(2)), "*" | "/" | "." | ")");
                            if (count
                                || cx.any_ident(k + 1, r, is_warp_id_ident) && src.in_device(k))
                                && !cx.guarded(k)
                            {
                                let msg =
                                    format!("`{}` assumes a 32-lane warp", cx.snippet(k - 1, r));
                                if count {
                                    report_thread_count(cx, k - 1, r, msg);
                                } else {
                                    cx.report(&META, k - 1, r, msg, "use `warpSize` (or the kplan header's `KPLAN_WARP_SIZE`): wave64 targets have 64 lanes");
                                }
                            }
                        }
                    }
                    continue;
                }
            },
            _ => continue,
        };
        // the literal must stand alone: not `32 * x`, not `32.0`
        if matches!(src.s(k + 2), "*" | "." | "(" | "[") {
            continue;
        }
        let ok_lit = match op {
            "%" | "/" | "%=" | "/=" | "<" | ">=" => lit == 32,
            "*" => lit == 32,
            "&" => lit == 31,
            ">>" | ">>=" => lit == 5,
            _ => false,
        };
        if !ok_lit || cx.guarded(k) || cx.mfma_branch(k) {
            continue;
        }
        let Some(a) = cx.left_operand(k) else {
            continue;
        };
        // `threadIdx` exists only in device code, wherever the structure pass puts the token
        // (a constructor's member-initialiser list sits before the body's brace)
        let device = src.in_device(k) || cx.any_ident(a, k - 1, |s| s == "threadIdx");
        let lane_like = cx.any_ident(a, k - 1, |s| is_thread_ident(s) || is_lane_ident(s));
        let warp_like = cx.any_ident(a, k - 1, is_warp_id_ident);
        let count_like = cx.any_ident(a, k - 1, is_block_threads_ident);
        // `num_warps * 32`: threads from a count of warps, in device or host code
        let warps_count = op == "*"
            && cx.any_ident(a, k - 1, is_warp_count_ident)
            && !warp_like
            && !cx.any_ident(a, k - 1, |s| is_thread_ident(s) || is_lane_ident(s));
        let fire = match op {
            "%" | "&" | "%=" => device && lane_like,
            "/" | ">>" | "/=" | ">>=" => (device && lane_like) || count_like,
            "*" => device && warp_like || warps_count,
            "<" | ">=" => {
                device && cx.any_ident(a, k - 1, is_thread_ident) && !lane_like_only(cx, a, k - 1)
            }
            _ => false,
        };
        if !fire {
            continue;
        }
        if matches!(op, "%" | "&" | "%=" | "/" | ">>" | "/=" | ">>=")
            && !count_like
            && logical_warp32(cx, k, &mut logical)
        {
            continue;
        }
        let what = match op {
            "%" | "&" | "%=" => "computes the lane",
            "/" | ">>" | "/=" | ">>=" if count_like && !lane_like => "counts warps",
            "/" | ">>" | "/=" | ">>=" => "computes the warp index",
            "*" if warps_count => "counts threads from a number of warps",
            "*" => "computes the warp's first lane",
            _ => "selects the first warp",
        };
        let msg = format!("`{}` {what} assuming a 32-lane warp", cx.snippet(a, k + 1));
        if op == "*" && warps_count {
            report_thread_count(cx, a, k + 1, msg);
        } else {
            cx.report(&META, a, k + 1, msg, "use `warpSize` (or the kplan header's `KPLAN_WARP_SIZE`): wave64 targets have 64 lanes");
        }
    }
}

/// A thread count made from a number of warps (`num_warps * 32`) in host code: a warning, not an error. The
/// block is valid on both widths and a width-agnostic kernel runs it correctly; only a kernel
/// that expects `num_warps` warps in it gets half as many wavefronts on wave64 (as Triton's
/// `num_warps` rule grades the same idiom).
fn report_thread_count(cx: &mut Cx, a: usize, b: usize, msg: String) {
    // in device code the product is a stride or an index (`i += num_warps * 32`): on wave64 it
    // visits elements twice, a wrong result, so the error stands
    if cx.src.in_device(a) {
        cx.report(&META, a, b, msg, "use `warpSize` (or the kplan header's `KPLAN_WARP_SIZE`): wave64 targets have 64 lanes");
        return;
    }
    let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
        return;
    };
    let sev = if sev == Severity::Error {
        Severity::Warning
    } else {
        sev
    };
    let msg =
        format!("{msg}: on wave64 the block holds half as many wavefronts as warps were counted");
    cx.report_with(&META, sev, targets, a, b, msg, "count the block in wavefronts of the device's width (`warpSize`, `hipDeviceProp_t::warpSize` on the host), or check that the kernel does not rely on `num_warps` warps per block");
}

/// A block size named in a loop's step (`block_size`, `threads`, `block_dim`).
fn block_size_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    (l.contains("block") && (l.contains("size") || l.contains("dim") || l.contains("thread")))
        || is_block_threads_ident(s)
}

/// `for (bs = 32; bs <= 1024; bs += 32)`: candidate block sizes (a tuner's list, a search)
/// stepped by one 32-lane warp, so every other candidate is half a 64-lane wavefront short.
fn block_size_sweep(cx: &mut Cx, k: usize) {
    let src = cx.src;
    if src.int(k + 1) != Some(32) || !src.is(k + 2, ")") || !src.is_ident(k - 1) {
        return;
    }
    let name = src.s(k - 1);
    if !block_size_name(name) || cx.guarded(k) {
        return;
    }
    // the step of a `for` header
    let Some(open) = src.mate(k + 2).filter(|&o| o > 0 && o < k) else {
        return;
    };
    if !src.is(open - 1, "for") {
        return;
    }
    let Some(targets) = cx.ctx.scope_severity(&META).map(|(_, t)| t) else {
        return;
    };
    let msg = format!("`{}` steps block sizes by 32 threads: every other candidate is not a whole number of 64-lane wavefronts, so its last wavefront runs half empty and code that assumes whole warps per block breaks", cx.snippet(k - 1, k + 1));
    cx.report_with(&META, Severity::Warning, targets, k - 1, k + 1, msg, "step by the device's warp size (`hipDeviceProp_t::warpSize` on the host), or by 64, which is a whole number of warps on every target");
}

fn lane_like_only(cx: &Cx, a: usize, b: usize) -> bool {
    cx.any_ident(a, b, is_lane_ident) && !cx.any_ident(a, b, |s| s == "threadIdx")
}

/// The device function around token `k` shuffles only with an explicit width of 32: its lane
/// arithmetic works on a logical 32-lane warp, which is the same on every target. Computed once
/// per function (`memo`, indexed by function), not once per finding.
fn logical_warp32(cx: &Cx, k: usize, memo: &mut Vec<Option<bool>>) -> bool {
    let src = cx.src;
    let fi = src.toks.get(k).map_or(0, |t| t.func as usize);
    if fi == 0 {
        return false;
    }
    if memo.len() < src.funcs.len() + 1 {
        memo.resize(src.funcs.len() + 1, None);
    }
    if let Some(v) = memo[fi] {
        return v;
    }
    let v = logical_warp32_uncached(cx, k);
    memo[fi] = Some(v);
    v
}

fn logical_warp32_uncached(cx: &Cx, k: usize) -> bool {
    let src = cx.src;
    let Some(f) = src.func_of(k) else {
        return false;
    };
    let (open, close) = (f.open as usize, (f.close as usize).min(src.toks.len()));
    let mut seen = false;
    let mut i = open;
    while i < close {
        let w = src.s(i);
        let l = w.to_ascii_lowercase();
        if src.kind(i) == Some(crate::lex::Tk::Ident)
            && (l.contains("shfl") || l.contains("shuffle"))
            && src.is(i + 1, "(")
        {
            let args = cx.call_args(i + 1);
            match args.last() {
                Some(&(a, b)) if a == b && src.int(a) == Some(32) && args.len() >= 3 => seen = true,
                _ => return false,
            }
            i = src.mate(i + 1).unwrap_or(i + 1);
        }
        i += 1;
    }
    seen
}
