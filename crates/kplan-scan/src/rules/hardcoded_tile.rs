//! `hardcoded-tile`: block and tile shapes fixed as literals in launches.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::launch::{launch_args, literal_block};

pub static META: RuleMeta = RuleMeta {
    id: "hardcoded-tile",
    summary: "block shape fixed as a literal in a kernel launch",
    what: "Finds kernel launches whose block shape is an integer literal or `dim3` of literals \
(`k<<<grid, 256>>>`, `k<<<grid, dim3(16, 16)>>>`), and launches of templates whose tile sizes are literal \
template arguments (`gemm<128, 128, 32><<<...>>>`), instead of named configuration values.",
    why: "The best block and tile shapes differ between NVIDIA SMs, AMD CUs and CPU fallbacks (warp width, \
registers, LDS). A literal at the launch site hides the choice from per-target tuning and from the plan.",
    example: "scale<<<(n + 255) / 256, 256>>>(x, n);",
    use_instead: "constexpr int kBlock = KPLAN_BLOCK_SIZE;  // from the plan / header, per target\nscale<<<(n + kBlock - 1) / kBlock, kBlock>>>(x, n);",
    severity: Severity::Note,
    scope: Scope::MultiVendor,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !cx.has("<<<") {
        return;
    }
    let src = cx.src;
    for i in 0..src.toks.len() {
        if !src.is(i, "<<<") || cx.guarded(i) {
            continue;
        }
        let Some((args, _)) = launch_args(src, i) else {
            continue;
        };
        let Some(&(a, b)) = args.get(1) else { continue };
        if let Some(v) = literal_block(src, a, b) {
            let msg = format!(
                "block shape `{}` ({v} threads) is fixed in the launch",
                cx.snippet(a, b)
            );
            cx.report(&META, a, b, msg, "name the block shape in one per-target configuration (the kplan plan or header) and launch with it");
        }
        // `kernel<128, 64, 32><<<...>>>`: tile sizes as literal template arguments
        if i >= 2 && src.is(i - 1, ">") {
            let mut depth = 0i32;
            let mut k = i - 1;
            let mut open = None;
            while k > 0 && i - k < 64 {
                match src.s(k) {
                    ">" => depth += 1,
                    ">>" => depth += 2,
                    "<" => {
                        depth -= 1;
                        if depth == 0 {
                            open = Some(k);
                            break;
                        }
                    }
                    ";" | "{" | "}" => break,
                    _ => {}
                }
                k -= 1;
            }
            if let Some(o) = open {
                let tiles: Vec<u64> = (o + 1..i - 1)
                    .filter_map(|t| {
                        src.int(t).filter(|_| {
                            matches!(src.s(t - 1), "<" | ",") && matches!(src.s(t + 1), ">" | ",")
                        })
                    })
                    .filter(|v| *v >= 16 && v.is_power_of_two())
                    .collect();
                if tiles.len() >= 2 {
                    let msg = format!(
                        "tile shape `{}` is fixed as literal template arguments in the launch",
                        cx.snippet(o, i - 1)
                    );
                    cx.report(&META, o, i - 1, msg, "take tile sizes from one per-target configuration (the kplan plan or header) instead of literals at the launch site");
                }
            }
        }
    }
}
