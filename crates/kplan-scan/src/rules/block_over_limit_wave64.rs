//! `block-over-limit-wave64`: a block size that is a product of the warp width (a tile of
//! `kWarpSize x kWarpSize` threads): within the 1024-thread limit with 32-lane warps, four
//! times over it with 64-lane wavefronts.

use crate::cuda::{is_portable_warp_size, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::launch::launch_args;

pub static META: RuleMeta = RuleMeta {
    id: "block-over-limit-wave64",
    summary: "block size built from the warp width exceeds 1024 threads with 64-lane wavefronts",
    what: "Finds block sizes written as a product that includes the warp width (`warpSize`, `kWarpSize`, \
`WARP_SIZE`, a `WarpSize` parameter, ...): the first argument of `__launch_bounds__`, the block of a \
`<<<grid, block>>>` launch and `dim3` blocks built in it. With the warp width at 32 the product is at most 1024 \
threads; with the widest warp in scope (64 lanes on CDNA) it is more. The usual form is a square tile, one \
thread per element of a `kWarpSize x kWarpSize` tile.",
    why: "Every AMD and NVIDIA GPU accepts at most 1024 threads per block. A tile of `kWarpSize * kWarpSize` \
threads is 1024 with 32-lane warps and 4096 with 64-lane wavefronts: the launch fails on CDNA \
(`hipErrorInvalidConfiguration`), and a `__launch_bounds__` above 1024 is rejected by the compiler or gives \
a kernel that never launches. Shared tiles sized the same way grow fourfold too.",
    example: "__global__ void __launch_bounds__(kWarpSize * kWarpSize) transpose_tile(float* out, const float* in);",
    use_instead: "constexpr int kTile = 32;  // the tile is a layout choice, not the warp width\n__global__ void __launch_bounds__(kTile * kTile) transpose_tile(float* out, const float* in);",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// The most threads a block may have on every GPU in scope.
const MAX_BLOCK: u64 = 1024;

/// A name that reads as the warp width (not a count or a log of it).
fn warp_width(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    is_portable_warp_size(s)
        || ((l.contains("warp") || l.contains("wave"))
            && (l.contains("size") || l.contains("width") || l.contains("lanes")))
            && !l.contains("per")
            && !l.contains("log")
            && !l.contains("num")
            && !l.contains("sub")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__launch_bounds__") || cx.has("<<<")) {
        return;
    }
    let wide = cx.ctx.max_warp_size() as u64;
    if wide <= 32 {
        return;
    }
    let src = cx.src;
    for i in 0..src.toks.len() {
        let ranges: Vec<(usize, usize)> = if src.is(i, "__launch_bounds__") && src.is(i + 1, "(") {
            cx.call_args(i + 1).into_iter().take(1).collect()
        } else if src.is(i, "<<<") {
            match launch_args(src, i) {
                Some((args, _)) => match args.get(1) {
                    Some(&(a, b)) if src.is(a, "dim3") && matches!(src.s(a + 1), "(" | "{") => {
                        vec![(a + 2, src.mate(a + 1).unwrap_or(b).saturating_sub(1))]
                    }
                    Some(&r) => vec![r],
                    None => Vec::new(),
                },
                None => Vec::new(),
            }
        } else {
            continue;
        };
        if cx.guarded(i) {
            continue;
        }
        for (a, b) in ranges {
            let Some((v32, v64)) = threads(cx, a, b, wide) else {
                continue;
            };
            if v32 <= MAX_BLOCK && v64 > MAX_BLOCK {
                let msg = format!(
                    "block of `{}` threads is {v32} with 32-lane warps but {v64} with {wide}-lane wavefronts, over the {MAX_BLOCK}-thread limit on wave64 AMD targets",
                    cx.snippet(a, b)
                );
                cx.report(
                    &META,
                    a,
                    b,
                    msg,
                    "size the block from a tile constant of its own, or divide by the warp width so the thread count stays the same",
                );
            }
        }
    }
}

/// The thread count of `a..=b` (a product, or the comma-separated dimensions of a `dim3`) with
/// its warp-width factors at 32 and at `wide`; `None` when a factor is unknown or none is the
/// warp width.
fn threads(cx: &Cx, a: usize, b: usize, wide: u64) -> Option<(u64, u64)> {
    let (v32, v64, warp) = product(cx, a, b, wide, 0)?;
    warp.then_some((v32, v64))
}

fn product(cx: &Cx, a: usize, b: usize, wide: u64, depth: u8) -> Option<(u64, u64, bool)> {
    let src = cx.src;
    if depth > 8 {
        return None;
    }
    let mut v32 = 1u64;
    let mut v64 = 1u64;
    let mut warp = false;
    let mut j = a;
    let mut expect_factor = true;
    while j <= b {
        let t = src.s(j);
        if expect_factor {
            let (f32, f64, next) = if src.kind(j) == Some(Tk::Number) {
                let v = src.int(j)?;
                (v, v, j + 1)
            } else if src.kind(j) == Some(Tk::Ident) {
                // `Traits::kWarpSize`, `cfg.warp_size`: the last name of a qualified chain
                let mut e = j;
                while matches!(src.s(e + 1), "::" | "." | "->")
                    && src.kind(e + 2) == Some(Tk::Ident)
                {
                    e += 2;
                }
                let name = src.s(e);
                let call = src.is(e + 1, "(") && src.is(e + 2, ")");
                let after = if call { e + 3 } else { e + 1 };
                if warp_width(name) && !cx.index.fixed_32(name) {
                    warp = true;
                    (32, wide, after)
                } else if e == j && !call {
                    // one value in every branch of the project: a count chosen per platform
                    // (`num_warps = 16` for HIP, 32 otherwise) is not known here
                    let v = cx.index.const_value(name)?;
                    (v, v, after)
                } else {
                    return None;
                }
            } else if t == "(" {
                let m = src.mate(j)?;
                if m > b {
                    return None;
                }
                let (p32, p64, w) = product(cx, j + 1, m - 1, wide, depth + 1)?;
                warp |= w;
                (p32, p64, m + 1)
            } else {
                return None;
            };
            v32 = v32.checked_mul(f32)?;
            v64 = v64.checked_mul(f64)?;
            j = next;
            expect_factor = false;
        } else if matches!(t, "*" | ",") {
            j += 1;
            expect_factor = true;
        } else {
            return None;
        }
    }
    (!expect_factor).then_some((v32, v64, warp))
}
