//! `divergent-block-barrier`: a block barrier (`__syncthreads()`, or a function of the file
//! that calls one) inside a loop or branch whose condition depends on the thread: threads of
//! one block reach the barrier a different number of times.

use crate::cuda::{is_lane_ident, is_thread_ident, is_warp_id_ident, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use std::collections::HashSet;

pub static META: RuleMeta = RuleMeta {
    id: "divergent-block-barrier",
    summary: "block barrier inside a loop or branch whose condition depends on the thread",
    what: "Finds `__syncthreads()` (and `__syncthreads_count/and/or`, `__builtin_amdgcn_s_barrier`, and functions \
of the same file whose body calls one) inside a `for`/`while` loop or an `if` whose condition reads the thread's \
position: `threadIdx`, a lane or warp index, or a variable computed from them (`for (j = warp_id; j < n; j += \
WARPS)`, `if (tid < n)`).",
    why: "A block barrier must be reached by every thread of the block the same number of times: the CUDA C++ \
Programming Guide allows `__syncthreads()` in conditional code only when the condition evaluates identically \
across the entire thread block, \"otherwise the code execution is likely to hang or produce unintended side \
effects\"; HIP's barrier has the same rule. The code is undefined on both vendors, and a wave or warp that leaves \
the loop early meets the next barrier of the kernel instead: the block hangs, or two phases of the kernel \
overlap and read each other's shared memory. On AMD the unit is the 64-lane wavefront on CDNA, so a condition \
that is uniform per 32-lane warp (`warp_id < k` with `warp_id = tid / 32`) is not uniform per wavefront.",
    example: "for (int j = warp_id; j < n; j += num_warps) {\n    partial[warp_id] = work(j);\n    __syncthreads();\n    combine(partial);\n}",
    use_instead: "int trips = (n + num_warps - 1) / num_warps;  // the same for every thread\nfor (int t = 0; t < trips; ++t) {\n    int j = warp_id + t * num_warps;\n    partial[warp_id] = j < n ? work(j) : 0.f;\n    __syncthreads();\n    combine(partial);\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

fn barrier(s: &str) -> bool {
    matches!(
        s,
        "__syncthreads"
            | "__syncthreads_count"
            | "__syncthreads_and"
            | "__syncthreads_or"
            | "__builtin_amdgcn_s_barrier"
    )
}

fn thread_word(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    // counts and sizes named after lanes or warps (`lanes_per_row`, `num_warps`) are uniform
    let count = l.contains("per")
        || l.starts_with("num")
        || l.starts_with("n_")
        || l.starts_with("lanes")
        || l.ends_with("count")
        || l.ends_with("size");
    !count && (is_thread_ident(s) || is_lane_ident(s) || is_warp_id_ident(s))
}

/// A barrier that reduces a per-thread value to one the whole block shares.
fn block_vote(s: &str) -> bool {
    matches!(
        s,
        "__syncthreads_or" | "__syncthreads_and" | "__syncthreads_count"
    )
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__syncthreads") || cx.has("s_barrier")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // functions of the file whose body calls a barrier (two levels of wrapping)
    let mut wrappers: HashSet<&str> = HashSet::new();
    for _ in 0..2 {
        let mut calls = vec![false; src.funcs.len() + 1];
        for k in 0..n {
            let f = src.toks[k].func as usize;
            if f != 0
                && src.kind(k) == Some(Tk::Ident)
                && (barrier(src.s(k)) || wrappers.contains(src.s(k)))
                && src.is(k + 1, "(")
            {
                calls[f] = true;
            }
        }
        for (i, f) in src.funcs.iter().enumerate() {
            if calls[i + 1] {
                if let Some(name) = f.name {
                    wrappers.insert(src.s(name as usize));
                }
            }
        }
    }
    // one forward pass: variables that depend on the thread (assigned from `threadIdx` or from
    // one another; a later assignment from block-uniform values clears them), and the loops and
    // branches whose condition depends on the thread: (body start, body end, head, the word)
    let mut variant: HashSet<(u32, &str)> = HashSet::new();
    let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new();
    let dep_in = |variant: &HashSet<(u32, &str)>, f: u32, a: usize, b: usize, skip: &str| {
        let mut j = a;
        while j < b {
            // `__syncthreads_or(active)` is the same for the whole block
            if block_vote(src.s(j)) && src.is(j + 1, "(") {
                j = src.mate(j + 1).map_or(j + 1, |c| c + 1);
                continue;
            }
            if src.kind(j) == Some(Tk::Ident)
                && !src.is(j - 1, ".")
                && src.s(j) != skip
                && (thread_word(src.s(j)) || variant.contains(&(f, src.s(j))))
            {
                return Some(j);
            }
            j += 1;
        }
        None
    };
    for k in 1..n {
        if !src.in_device(k) {
            continue;
        }
        let f = src.toks[k].func;
        if src.is(k, "=") && src.kind(k - 1) == Some(Tk::Ident) {
            let end = statement_end(src, k + 1);
            if dep_in(&variant, f, k + 1, end, "").is_some() {
                variant.insert((f, src.s(k - 1)));
            } else {
                variant.remove(&(f, src.s(k - 1)));
            }
            continue;
        }
        if !matches!(src.s(k), "for" | "while" | "if") || !src.is(k + 1, "(") {
            continue;
        }
        if src.s(k) == "while" && src.is(k - 1, "}") {
            continue;
        }
        let Some(close) = src.mate(k + 1) else {
            continue;
        };
        // `for (int i = 0; i < n; ...)`: a loop variable started from a uniform value is not
        // the thread's, whatever an earlier loop of the same name held
        let mut skip = "";
        let mut from = k + 2;
        if src.s(k) == "for" {
            if let Some(semi) = (k + 2..close).find(|&j| src.is(j, ";")) {
                if let Some(eq) = (k + 2..semi).find(|&j| src.is(j, "=")) {
                    if src.kind(eq - 1) == Some(Tk::Ident) {
                        match dep_in(&variant, f, eq + 1, semi, "") {
                            // `t = base + tid; t < end + tid`: the thread's offset is on both
                            // sides, so every thread runs the same number of trips
                            Some(w)
                                if (semi + 1..close)
                                    .take_while(|&j| !src.is(j, ";"))
                                    .any(|j| src.s(j) == src.s(w) && !src.is(j - 1, ".")) =>
                            {
                                continue
                            }
                            Some(w) => {
                                let body = body_of(src, close, n);
                                if let Some((s, e)) = body {
                                    ranges.push((s, e, k, w));
                                }
                                continue;
                            }
                            None => skip = src.s(eq - 1),
                        }
                    }
                }
                from = semi + 1;
            }
        }
        let Some(w) = dep_in(&variant, f, from, close, skip) else {
            continue;
        };
        if let Some((s, e)) = body_of(src, close, n) {
            ranges.push((s, e, k, w));
        }
    }
    if ranges.is_empty() {
        return;
    }
    // one sweep: ranges nest, so an open-range stack tells whether a barrier sits in one
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    let mut stack: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut next = 0;
    let mut reported_head: HashSet<usize> = HashSet::new();
    for k in 0..n {
        while stack.last().is_some_and(|r| r.1 < k) {
            stack.pop();
        }
        while next < ranges.len() && ranges[next].0 <= k {
            stack.push(ranges[next]);
            next += 1;
        }
        if stack.is_empty() || src.kind(k) != Some(Tk::Ident) || !src.is(k + 1, "(") {
            continue;
        }
        let w = src.s(k);
        // a member call (`reducer.final(...)`) is not the file's free function of that name
        let member = k > 0 && matches!(src.s(k - 1), "." | "->");
        if !(barrier(w) || wrappers.contains(w) && !member) {
            continue;
        }
        // the outermost thread-dependent condition around the barrier
        if let Some(r) = stack.iter().find(|r| r.1 >= k) {
            if reported_head.insert(r.2) {
                hits.push((k, r.2, r.3));
            }
        }
    }
    for (k, head, w) in hits {
        let line = src.toks[k].line + 1;
        let kind = src.s(head);
        let close = src.mate(head + 1).unwrap_or(head);
        let msg = format!(
            "this `{kind}` depends on the thread (`{}`) and holds a block barrier (`{}`, line {line}): threads may reach the barrier a different number of times, which is undefined, and the barrier then pairs unrelated phases or hangs",
            src.s(w),
            src.s(k)
        );
        cx.report(&META, head, close, msg, "make the trip count or the condition the same for the whole block (compute it from block-uniform values, guard the work instead of the barrier)");
    }
}

/// The token that ends the expression starting at `a`: `;`, a `,` at depth 0, or the closing
/// bracket of an enclosing group.
fn statement_end(src: &crate::lex::Src, a: usize) -> usize {
    let n = src.toks.len();
    let mut depth = 0i32;
    let mut j = a;
    while j < n {
        match src.s(j) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth < 0 {
                    return j;
                }
            }
            ";" => return j,
            "," if depth == 0 => return j,
            _ => {}
        }
        j += 1;
    }
    n
}

/// The body after a loop or branch header closing at `close`: a braced block or one statement.
fn body_of(src: &crate::lex::Src, close: usize, n: usize) -> Option<(usize, usize)> {
    if src.is(close + 1, "{") {
        src.mate(close + 1).map(|e| (close + 1, e))
    } else {
        (close + 1..n.min(close + 400))
            .find(|&j| src.is(j, ";"))
            .map(|e| (close + 1, e))
    }
}
