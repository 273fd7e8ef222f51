//! `mask-as-shuffle-value`: a lane mask passed as the value of a non-sync shuffle (a `*_sync`
//! call turned into `__shfl_*` by hand or by a macro without dropping the mask).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "mask-as-shuffle-value",
    summary: "lane mask passed as the value of a non-sync shuffle (`__shfl_down(0xffffffff, v, d)`)",
    what: "Finds `__shfl`, `__shfl_up`, `__shfl_down` and `__shfl_xor` (the forms without a mask) whose first \
argument is a full lane mask literal (`0xffffffff`, `0xffffffffffffffff`, `~0`) and which get three or more \
arguments: the signature of the `*_sync` form with `_sync` dropped.",
    why: "The non-sync shuffles take `(value, lane_or_delta, width)`. With the mask left in front, the mask \
is what gets shuffled, the value becomes the lane offset and the offset becomes the width: every lane \
receives the constant mask and the reduction computes garbage, on HIP and on CUDA alike.",
    example: "err += __shfl_down(0xffffffff, err, offset);",
    use_instead: "err += __shfl_down(err, offset);  // or __shfl_down_sync(mask, err, offset)",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &[],
};

fn full_mask(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    let l = l.trim_end_matches(['u', 'l']);
    matches!(l, "0xffffffff" | "0xffffffffffffffff")
}

pub fn check(cx: &mut Cx) {
    if !cx.has("__shfl") {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for i in 0..n.saturating_sub(2) {
        if src.kind(i) != Some(Tk::Ident)
            || !matches!(
                src.s(i),
                "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor"
            )
            || !src.is(i + 1, "(")
        {
            continue;
        }
        let args = cx.call_args(i + 1);
        if args.len() < 3 {
            continue;
        }
        let (a, b) = args[0];
        let lit = if a == b {
            // a literal, or a project constant that holds the full mask (`FULL_MASK`)
            full_mask(src.s(a))
                || (src.kind(a) == Some(Tk::Ident)
                    && matches!(
                        cx.index.const_value(src.s(a)),
                        Some(0xffff_ffff | 0xffff_ffff_ffff_ffff)
                    ))
        } else {
            b == a + 1 && src.is(a, "~") && src.is(b, "0")
        };
        if !lit {
            continue;
        }
        let msg = format!(
            "`{}` gets the lane mask `{}` as the value to shuffle (the non-sync form has no mask)",
            src.s(i),
            cx.snippet(a, b)
        );
        cx.report(
            &META,
            a,
            b,
            msg,
            "drop the mask (`__shfl_down(v, delta)`) or call the `_sync` form",
        );
    }
}
