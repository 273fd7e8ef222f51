//! `lane-geometry-32`: lane geometry fixed to a 32-lane warp outside index arithmetic: the
//! last lane written as 31, a warp width checked against 32, a static assertion that only
//! admits 32.

use crate::cuda::{is_lane_ident, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "lane-geometry-32",
    summary: "last lane written as 31, or a warp width required to be 32",
    what: "Finds a lane index compared with 31 (`lane == 31`, `lane_id > 31`: the last lane of a 32-lane \
warp), the warp width compared with 32 at run time (`warpSize == 32`, `prop.warpSize != 32`) and static \
assertions that admit only a 32-lane warp (`static_assert(kWarpSize == 32)`). A run-time test that chooses a \
path for each width (`if (warpSize == 32) { ... } else { ... }`, an early `return` followed by the 64-lane \
path, `warpSize == 32 ? a : b`) is the portable form and is left alone, and so is the code on its 32-lane path; \
a test whose other path only rejects the width (`return false;`, `throw`, an assertion) is reported.",
    why: "On a 64-lane wavefront lane 31 is the middle of the wavefront, not its end: a scan or reduction \
that reads its total from lane 31, or lets only lane 31 write, drops lanes 32-63. A check that the width is \
32 rejects every CDNA GPU (or silently takes a slow path there), and a static assertion on 32 stops a wave64 \
build, usually after a port removed the real assumption.",
    example: "if (lane == 31) out[warp] = sum;\nif (prop.warpSize != 32) return false;\nstatic_assert(kWarpSize == 32, \"\");",
    use_instead: "if (lane == warpSize - 1) out[warp] = sum;\nif (prop.warpSize != 32 && prop.warpSize != 64) return false;\nstatic_assert(kWarpSize == 32 || kWarpSize == 64, \"\");",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

fn warp_width_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    s == "warpSize"
        || l == "warp_size"
        || l == "kwarpsize"
        || l == "warpsize"
        || l == "wave_size"
        || l == "kwavesize"
        || l == "wavefront_size"
        || l == "warp_threads"
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("31") || cx.has("32")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for k in 1..n.saturating_sub(1) {
        let op = src.s(k);
        if !matches!(op, "==" | "!=" | ">" | ">=") || cx.guarded(k) || cx.mfma_branch(k) {
            continue;
        }
        let Some(v) = src.int(k + 1) else { continue };
        if matches!(
            src.s(k + 2),
            "*" | "+" | "-" | "." | "(" | "[" | "<<" | ">>"
        ) {
            continue;
        }
        let lhs = k - 1;
        if src.kind(lhs) != Some(Tk::Ident) {
            continue;
        }
        let name = src.s(lhs);
        // `a.b == 32`: the member name decides
        if v == 31 && is_lane_ident(name) && src.in_device(k) && matches!(op, "==" | ">" | ">=") {
            let msg = format!(
                "`{}` takes lane 31 as the last lane of the warp; a wave64 wavefront ends at lane 63",
                cx.snippet(lhs, k + 1)
            );
            cx.report(&META, lhs, k + 1, msg, "compare with `warpSize - 1`");
            continue;
        }
        if v != 32 || !matches!(op, "==" | "!=") || !warp_width_ident(name) {
            continue;
        }
        // a test that chooses a path for each width (`if (warpSize == 32) { ... } else
        // { ... }`, `warpSize == 32 ? a : b`) is the portable form, unless the other path
        // only rejects the width
        if cx
            .wave_guards()
            .guard_at(k)
            .is_some_and(|g| g.other.is_some() && !g.wide_rejects)
        {
            continue;
        }
        let in_assert = (k.saturating_sub(12)..lhs)
            .rev()
            .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
            .any(|j| src.is(j, "static_assert"));
        // a disjunction admits other widths: `== 32 || == 64`
        let stmt_end = (k + 2..n.min(k + 40))
            .find(|&j| matches!(src.s(j), ";" | "{" | "}"))
            .unwrap_or(k + 2);
        if (k + 2..stmt_end).any(|j| src.int(j) == Some(64)) {
            continue;
        }
        let what = if in_assert {
            "a static assertion that admits only a 32-lane warp"
        } else {
            "the warp width required to be 32"
        };
        let msg = format!(
            "`{}`: {what}; wave64 targets have 64 lanes",
            cx.snippet(lhs, k + 1)
        );
        let help = "admit 64-lane wavefronts too (or branch on the width)";
        if in_assert {
            // it stops the build instead of computing wrong results: a warning
            if let Some((_, targets)) = cx.ctx.scope_severity(&META) {
                cx.report_with(&META, Severity::Warning, targets, lhs, k + 1, msg, help);
            }
        } else {
            cx.report(&META, lhs, k + 1, msg, help);
        }
    }
}
