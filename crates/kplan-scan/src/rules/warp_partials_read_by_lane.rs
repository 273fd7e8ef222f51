//! `warp-partials-read-by-lane`: a shared array of per-warp partials (written at the warp
//! index) read back at the lane index by every lane, with no `lane < num_warps` guard.

use crate::cuda::{is_lane_ident, is_warp_id_ident, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::consts::Consts;

pub static META: RuleMeta = RuleMeta {
    id: "warp-partials-read-by-lane",
    summary: "per-warp partials read back at the lane index with no `lane < num_warps` guard",
    what: "Finds a `__shared__` array that a kernel writes at a warp index (`partials[warp_id] = sum`) and reads \
back at a lane index (`sum = partials[lane]`, `partials[threadIdx.x]`) outside any condition or `?:` that \
tests the lane. Arrays of a constant size of 64 or more entries are left alone, and so are arrays sized by \
the literal 32 (`lane-partials-size` reports those).",
    why: "The array has one entry per warp of the block. A 1024-thread block has 32 warps of 32 lanes on \
NVIDIA, as many warps as lanes, so the unguarded read happens to be complete there. With 64-lane \
wavefronts (CDNA) the same block has 16 wavefronts: lanes 16-63 read entries that no warp wrote, or past \
the end of an array sized by the warp count, and the second-stage reduction adds garbage. Blocks with \
fewer threads have the same problem on every target.",
    example: "__shared__ float partials[NUM_WARPS];\nif (lane == 0) partials[warp_id] = sum;\n__syncthreads();\nsum = partials[lane];",
    use_instead: "__shared__ float partials[NUM_WARPS];\nif (lane == 0) partials[warp_id] = sum;\n__syncthreads();\nsum = lane < NUM_WARPS ? partials[lane] : 0.0f;",
    severity: Severity::Warning,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// A warp index name (`warp_id`, `warpId`, `wid`, `warp_idx`).
fn warp_index(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    is_warp_id_ident(s)
        || ((l.contains("warp") || l.contains("wave"))
            && (l.ends_with("id") || l.ends_with("idx") || l.ends_with("index")))
}

/// `a[` at token `k` (the name) indexes with exactly the identifier(s) `idx..=close-1`.
fn index_of(cx: &Cx, k: usize) -> Option<(usize, usize)> {
    let src = cx.src;
    if !src.is(k + 1, "[") {
        return None;
    }
    let close = src.mate(k + 1)?;
    (close > k + 2).then_some((k + 2, close - 1))
}

pub fn check(cx: &mut Cx) {
    if !cx.has("__shared__") {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut consts: Option<Consts> = None;
    // where each identifier occurs, built on the first candidate array: the reads of an array
    // are looked up by name, so the rule stays linear however many arrays a function declares
    let mut pos: Option<std::collections::HashMap<&str, Vec<usize>>> = None;
    for i in 0..n {
        if !src.is(i, "__shared__") || cx.guarded(i) {
            continue;
        }
        let Some(semi) = (i + 1..n.min(i + 64)).find(|&k| matches!(src.s(k), ";" | "{" | "="))
        else {
            continue;
        };
        let Some(name_at) =
            (i + 1..semi).find(|&k| src.kind(k) == Some(Tk::Ident) && src.is(k + 1, "["))
        else {
            continue;
        };
        let Some((sa, sb)) = index_of(cx, name_at) else {
            continue;
        };
        // a second dimension: not a flat per-warp array
        if src.mate(name_at + 1).is_some_and(|c| src.is(c + 1, "[")) {
            continue;
        }
        if sa == sb && src.int(sa) == Some(32) {
            continue;
        }
        let c = consts.get_or_insert_with(|| Consts::collect(src));
        if c.eval(src, sa, sb).is_some_and(|v| v >= 64) {
            continue;
        }
        let name = src.s(name_at);
        // the array's scope: the function (or block) it is declared in
        let end = (0..name_at)
            .rev()
            .take(20_000)
            .find(|&j| src.is(j, "{") && src.mate(j).is_some_and(|m| m > name_at))
            .and_then(|j| src.mate(j))
            .unwrap_or(n);
        let mut written = false;
        let mut reads: Vec<usize> = Vec::new();
        let pos = pos.get_or_insert_with(|| {
            let mut m: std::collections::HashMap<&str, Vec<usize>> =
                std::collections::HashMap::new();
            for t in 0..n {
                if src.kind(t) == Some(Tk::Ident) {
                    m.entry(src.s(t)).or_default().push(t);
                }
            }
            m
        });
        let occ = pos.get(name).map_or(&[][..], Vec::as_slice);
        let from = occ.partition_point(|&k| k < semi);
        let to = occ.partition_point(|&k| k < end);
        for &k in &occ[from..to] {
            if k > 0 && matches!(src.s(k - 1), "." | "->" | "::") {
                continue;
            }
            let Some((a, b)) = index_of(cx, k) else {
                continue;
            };
            let close = b + 1;
            let assigned = matches!(src.s(close + 1), "=" | "+=");
            if a == b && warp_index(src.s(a)) && assigned {
                written = true;
            }
            let lane = (a == b && is_lane_ident(src.s(a)))
                || (b == a + 2 && src.is(a, "threadIdx") && src.is(a + 1, ".") && src.is(b, "x"));
            if lane
                && !assigned
                && !src.is(close + 1, "[")
                && !cx.guarded(k)
                && !guarded(cx, k, src.s(a))
            {
                reads.push(k);
            }
        }
        if !written {
            continue;
        }
        for k in reads {
            let close = src.mate(k + 1).unwrap_or(k);
            let msg = format!(
                "`{}` is read by every lane, but `{name}` holds one entry per warp: with 64-lane wavefronts a block has half as many warps as with 32, and the lanes past the warp count read entries no warp wrote",
                cx.snippet(k, close)
            );
            cx.report(
                &META,
                k,
                close,
                msg,
                "read it under a guard on the warp count (`lane < num_warps ? partials[lane] : 0`)",
            );
        }
    }
}

/// The read at token `k` sits in a `?:`, or under an `if`/`while` whose condition names the
/// lane (`lane`) or `threadIdx`.
fn guarded(cx: &Cx, k: usize, lane: &str) -> bool {
    let src = cx.src;
    // the statement around the read
    let start = (k.saturating_sub(400)..k)
        .rev()
        .find(|&j| matches!(src.s(j), ";" | "{" | "}"))
        .map_or(0, |j| j + 1);
    let stop = (k..src.toks.len().min(k + 400))
        .find(|&j| src.is(j, ";"))
        .unwrap_or(k);
    if (start..stop).any(|j| src.is(j, "?")) {
        return true;
    }
    let names_lane = |open: usize| -> bool {
        let Some(close) = src.mate(open) else {
            return false;
        };
        (open..close).any(|j| src.is(j, lane) || src.is(j, "threadIdx") || is_lane_ident(src.s(j)))
    };
    let cond_before = |t: usize| -> bool {
        // `if (cond) stmt` / `if (cond) { ... }`: `t` is the `)` of the condition
        src.is(t, ")")
            && src
                .mate(t)
                .is_some_and(|o| o > 0 && matches!(src.s(o - 1), "if" | "while") && names_lane(o))
    };
    if start > 0 && cond_before(start - 1) {
        return true;
    }
    // `if (cond) x = a[lane];` as one statement
    if (start..k).any(|j| {
        matches!(src.s(j), "if" | "while")
            && src.is(j + 1, "(")
            && src.mate(j + 1).is_some_and(|c| c < k)
            && names_lane(j + 1)
    }) {
        return true;
    }
    // enclosing blocks opened by a condition on the lane
    let mut j = start;
    let mut steps = 0;
    while j > 0 && steps < 4_000 {
        j -= 1;
        steps += 1;
        if src.is(j, "}") || src.is(j, ")") || src.is(j, "]") {
            if let Some(m) = src.mate(j) {
                if m < j {
                    j = m;
                    continue;
                }
            }
        }
        if src.is(j, "{") {
            if j > 0 && cond_before(j - 1) {
                return true;
            }
            if src.toks[j].depth == 0 {
                break;
            }
        }
    }
    false
}
