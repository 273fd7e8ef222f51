//! `triton-warp-size-literal`: 32 used as the lanes of a warp in Triton launch code.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::{is_num_warps_name, Cx};
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-warp-size-literal",
    summary: "literal 32 used as the number of lanes in a warp around a Triton kernel",
    what: "Finds 32 used as the warp width in wrappers and kernels: `num_warps * 32` (threads per block), \
`threads // 32` or `BLOCK // 32` assigned to `num_warps` or passed as its keyword argument \
(`kernel[grid](..., num_warps=BLOCK // 32)`), and `WARP_SIZE = 32` / `threads_per_warp=32`.",
    why: "Triton's `num_warps` counts hardware warps, which are 64 lanes wide on AMD CDNA (gfx90a, gfx942, gfx950). \
Code that converts between threads and warps with 32 launches half (or twice) the intended threads there, sizes \
per-thread work wrongly, and can exceed the 1024-thread block limit.",
    example: "num_warps = BLOCK_SIZE // 32\nthreads = num_warps * 32",
    use_instead: "warp = triton.runtime.driver.active.get_current_target().warp_size\nnum_warps = max(1, BLOCK_SIZE // warp)\nthreads = num_warps * warp",
    severity: Severity::Warning,
    scope: Scope::Wave64,
    lang: Lang::Python,
    features: &[],
};

fn warp_width_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l == "warp_size"
        || l == "warpsize"
        || l == "threads_per_warp"
        || l == "lanes_per_warp"
        || l == "warp_width"
        || l == "_warp_size"
}

fn thread_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("thread") || l == "nthreads"
}

/// Whether the expression holding token `k` is the value of a `num_warps=` keyword argument
/// (`kernel[grid](..., num_warps=BLOCK // 32)`, `triton.Config({...}, num_warps=N // 32)`).
fn kwarg_is_warps(src: &crate::python::lex::PySrc, first: usize, k: usize) -> bool {
    let d = src.toks[k].depth;
    let mut p = k;
    while p > first {
        p -= 1;
        let t = &src.toks[p];
        if t.depth < d || (t.depth == d && matches!(src.s(p), "," | ":")) {
            return false;
        }
        if t.depth == d && src.s(p) == "=" {
            return p > first && is_num_warps_name(src.s(p - 1));
        }
    }
    false
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    for k in 0..n {
        if src.int(k) != Some(32) {
            continue;
        }
        let prev = src.s(k.wrapping_sub(1));
        let next = src.s(k + 1);
        let mut hit: Option<(usize, usize, &str)> = None;
        // WARP_SIZE = 32, threads_per_warp=32
        if (prev == "=" || prev == ":")
            && k >= 2
            && src.kind(k - 2) == Some(Kind::Name)
            && warp_width_name(src.s(k - 2))
        {
            hit = Some((k - 2, k, "sets the warp width to 32"));
        } else if prev == "="
            && k >= 4
            && src.s(k - 2) == "constexpr"
            && src.kind(k - 5) == Some(Kind::Name)
            && warp_width_name(src.s(k - 5))
        {
            hit = Some((k - 5, k, "sets the warp width to 32"));
        } else if prev == "*"
            && k >= 2
            && src.kind(k - 2) == Some(Kind::Name)
            && is_num_warps_name(src.s(k - 2))
        {
            hit = Some((k - 2, k, "converts warps to threads with 32 lanes per warp"));
        } else if next == "*"
            && src.kind(k + 2) == Some(Kind::Name)
            && is_num_warps_name(src.s(k + 2))
            && src.s(k + 3) != "."
        {
            hit = Some((k, k + 2, "converts warps to threads with 32 lanes per warp"));
        } else if matches!(prev, "//" | "/") && k >= 2 && src.kind(k - 2) == Some(Kind::Name) {
            let lhs = src.s(k - 2);
            let target_is_warps = src.line_of(k).is_some_and(|l| {
                (src.kind(l.first) == Some(Kind::Name)
                    && is_num_warps_name(src.s(l.first))
                    && src.s(l.first + 1) == "=")
                    || kwarg_is_warps(src, l.first, k)
            });
            if thread_name(lhs) || target_is_warps {
                hit = Some((k - 2, k, "converts threads to warps with 32 lanes per warp"));
            }
        }
        let Some((a, b, what)) = hit else { continue };
        if cx.guarded(k) {
            continue;
        }
        let msg = format!("`{}` {what}", cx.code(a, b));
        cx.report(&META, a, b, msg, "read the width from `triton.runtime.driver.active.get_current_target().warp_size` (64 on AMD CDNA)");
    }
}
