//! `shuffle-logical-warp-width`: a shuffle whose source lane is computed for a logical warp
//! (a template parameter `WarpSize`) but that passes no width, so it spans the hardware warp.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "shuffle-logical-warp-width",
    summary: "shuffle over a logical warp (`% WarpSize` in the lane) issued without a width",
    what: "Finds shuffles (`__shfl`, `__shfl_up`/`_down`/`_xor`, their `_sync` forms, and project wrappers named \
`*shuffle*` or `*shfl*`) whose lane or offset argument uses a warp-width template parameter of the file \
(`template <unsigned int WarpSize>`) and that pass no width argument. Methods of tiled groups \
(`tile.shfl(v, lane)`) shuffle within the tile and are left alone. An indexed shuffle is reported when its \
lane is numbered inside the logical warp (`x % WarpSize`, `x & (WarpSize - 1)`, `WarpSize - 1`) with no \
segment base added (`(lane & ~(WarpSize - 1)) + k` addresses the hardware warp and needs no width); an xor \
shuffle whose mask is made smaller than the width (`WarpSize / 2`, `WarpSize >> k`) stays in its segment and \
is left alone. Also finds a device function's width parameter that defaults to 32 (`int width = 32`) and is \
passed on as a shuffle's width: a warning for wave64 targets.",
    why: "Without a width a shuffle addresses the hardware warp: 64 lanes on CDNA, 32 on RDNA and NVIDIA. A \
primitive written for a logical warp of `WarpSize` lanes (16 or 32 inside a 64-lane wavefront) computes lane \
numbers from 0 to `WarpSize - 1`, so every logical warp but the first reads its values from the first one: \
wrong results, or a hang when the values steer a loop. A wrapper whose width defaults to 32 does the same to \
every caller that leaves the width out: on a 64-lane wavefront each half shuffles on its own.",
    example: "template <unsigned int WarpSize, class T>\n__device__ T rotate(T v, unsigned int lane) {\n    return __shfl(v, (lane + 1) % WarpSize);\n}",
    use_instead: "template <unsigned int WarpSize, class T>\n__device__ T rotate(T v, unsigned int lane) {\n    return __shfl(v, (lane + 1) % WarpSize, WarpSize);\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The lane `a..=b` is numbered inside a logical warp of `p` lanes (`x % p`, `x & (p - 1)`,
/// `p - k`) with no segment base (`lane & ~(p - 1)`, `lane / p * p`) added to it.
fn segment_relative(cx: &Cx, a: usize, b: usize, p: &str) -> bool {
    let src = cx.src;
    let is_p = |j: usize| src.is(j, p);
    let base = (a..=b).any(|j| {
        src.is(j, "~") || (is_p(j) && (src.is(j + 1, "*") || (j > a && src.is(j - 1, "*"))))
    });
    if base {
        return false;
    }
    let mut k = a;
    while k < b && src.is(k, "(") && src.mate(k) == Some(b) {
        k += 1;
    }
    if is_p(k) && src.is(k + 1, "-") {
        return true;
    }
    (a..b).any(|j| {
        let next = if src.is(j + 1, "(") { j + 2 } else { j + 1 };
        (src.is(j, "%") && is_p(next)) || (src.is(j, "&") && is_p(next) && src.is(next + 1, "-"))
    })
}

fn warp_width_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase().replace("wave", "warp");
    l.contains("warp") && (l.contains("size") || l.contains("width") || l.contains("lanes"))
}

/// Shuffle-like callee: the number of arguments it takes without a width.
fn shuffle_arity(s: &str) -> Option<usize> {
    let sync = s.ends_with("_sync");
    if matches!(
        s,
        "__shfl"
            | "__shfl_up"
            | "__shfl_down"
            | "__shfl_xor"
            | "__shfl_sync"
            | "__shfl_up_sync"
            | "__shfl_down_sync"
            | "__shfl_xor_sync"
    ) {
        return Some(if sync { 3 } else { 2 });
    }
    let l = s.to_ascii_lowercase();
    ((l.contains("shuffle") || l.contains("shfl")) && !l.contains("dpp")).then_some(2)
}

/// Warp-width names that are non-type template parameters in this file.
fn template_widths<'a>(cx: &Cx<'_, 'a, '_>) -> Vec<&'a str> {
    let src = cx.src;
    let mut out: Vec<&'a str> = Vec::new();
    for i in 1..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident)
            || src.kind(i - 1) != Some(Tk::Ident)
            || !matches!(src.s(i + 1), "," | ">" | "=")
            || !warp_width_name(src.s(i))
            || out.contains(&src.s(i))
        {
            continue;
        }
        let mut j = i;
        let mut steps = 0;
        while j > 1 && steps < 24 {
            j -= 1;
            steps += 1;
            if matches!(src.s(j), "(" | ")" | ";" | "{" | "}") {
                break;
            }
            if src.is(j, "<") && src.is(j - 1, "template") {
                out.push(src.s(i));
                break;
            }
        }
    }
    out
}

/// Whether the identifier at `k` is an argument of a shuffle call (`__shfl(v, l, width)`).
fn in_shuffle_call(cx: &Cx, k: usize) -> bool {
    let src = cx.src;
    let mut j = k;
    let mut steps = 0;
    while j > 1 && steps < 24 {
        j -= 1;
        steps += 1;
        match src.s(j) {
            ";" | "{" | "}" => return false,
            "(" if src.mate(j).is_some_and(|m| m > k) && shuffle_arity(src.s(j - 1)).is_some() => {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// A device function's parameter that is passed on as a shuffle's width defaults to 32
/// (`int width = 32`): every caller that leaves it out shuffles over half a 64-lane wavefront.
fn check_default_width(cx: &mut Cx) {
    let targets = cx.ctx.wave64_targets();
    if targets.is_empty() || !cx.has("32") {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut hits: Vec<(usize, usize, String, Option<usize>, usize)> = Vec::new();
    for f in &src.funcs {
        let open = f.open as usize;
        let close = (f.close as usize).min(n);
        let mut p = open;
        while p > 0 && matches!(src.s(p - 1), "const" | "noexcept" | "override" | "final") {
            p -= 1;
        }
        if p == 0 || !src.is(p - 1, ")") {
            continue;
        }
        let Some(po) = src.mate(p - 1).filter(|&m| m < p - 1) else {
            continue;
        };
        for j in po + 1..p - 1 {
            if !(src.is(j, "=")
                && src.int(j + 1) == Some(32)
                && matches!(src.s(j + 2), "," | ")")
                && src.is_ident(j - 1))
            {
                continue;
            }
            let name = src.s(j - 1);
            let l = name.to_ascii_lowercase();
            if !(l.contains("width") || warp_width_name(name)) {
                continue;
            }
            if cx.nv_only(j) || cx.amd_wave(j) == 32 {
                continue;
            }
            if (open..close).any(|k| src.is(k, name) && in_shuffle_call(cx, k)) {
                // the parameter's position: top-level commas before it
                let mut depth = 0i32;
                let mut pos = 0usize;
                for q in po + 1..j {
                    match src.s(q) {
                        "(" | "<" | "[" | "{" => depth += 1,
                        ")" | ">" | "]" | "}" => depth -= 1,
                        "," if depth == 0 => pos += 1,
                        _ => {}
                    }
                }
                let func = f.name.map(|t| t as usize);
                hits.push((j - 1, j + 1, name.to_string(), func, pos));
            }
        }
    }
    if hits.is_empty() {
        return;
    }
    // calls of the wrappers in this file: whether every one passes the width
    let wrappers: Vec<&str> = hits.iter().filter_map(|h| h.3.map(|t| src.s(t))).collect();
    let mut calls: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for k in 0..n {
        if src.is_ident(k)
            && src.is(k + 1, "(")
            && wrappers.contains(&src.s(k))
            && !hits.iter().any(|h| h.3 == Some(k))
        {
            calls
                .entry(src.s(k))
                .or_default()
                .push(cx.call_args(k + 1).len());
        }
    }
    for (a, b, name, func, pos) in hits {
        let all_pass = func
            .and_then(|t| calls.get(src.s(t)))
            .is_some_and(|c| !c.is_empty() && c.iter().all(|&args| args > pos));
        if all_pass {
            let msg = format!("`{name}` defaults to 32 and is passed on as the shuffle width; every call in this file passes the width, but a new caller that leaves it out shuffles within half of a 64-lane wavefront");
            cx.report_with(&META, Severity::Note, targets.clone(), a, b, msg, "default the width to the warp size (`warpSize`, or a per-target compile-time width such as the kplan header's `KPLAN_WARP_SIZE`)");
        } else {
            let msg = format!("`{name}` defaults to 32 and is passed on as the shuffle width: a caller that leaves it out shuffles within 32 lanes, half of a 64-lane wavefront on wave64 AMD targets");
            cx.report_with(&META, Severity::Warning, targets.clone(), a, b, msg, "default the width to the warp size (`warpSize`, or a per-target compile-time width such as the kplan header's `KPLAN_WARP_SIZE`)");
        }
    }
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("shfl") || cx.has("shuffle")) {
        return;
    }
    check_default_width(cx);
    let params = template_widths(cx);
    if params.is_empty() {
        return;
    }
    let src = cx.src;
    for i in 1..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) || !src.is(i + 1, "(") {
            continue;
        }
        let Some(base) = shuffle_arity(src.s(i)) else {
            continue;
        };
        // a declaration or definition (`T warp_shuffle(T v, int lane)`), not a call; a method of
        // a tiled group (`tile.shfl(v, lane)`) shuffles within the tile's own size
        if (src.kind(i - 1) == Some(Tk::Ident) && !matches!(src.s(i - 1), "return" | "case"))
            || matches!(src.s(i - 1), "." | "->")
        {
            continue;
        }
        if src
            .toks
            .get(i)
            .is_some_and(|t| t.flags & crate::lex::IN_DEFINE != 0)
            || cx.nv_only(i)
        {
            continue;
        }
        let args = cx.call_args(i + 1);
        if args.len() != base {
            continue;
        }
        let (a, b) = args[base - 1];
        let Some(p) = (a..=b)
            .find(|&j| src.kind(j) == Some(Tk::Ident) && params.contains(&src.s(j)))
            .map(|j| src.s(j))
        else {
            continue;
        };
        let name = src.s(i).to_ascii_lowercase();
        if name.contains("xor") {
            // `lane ^ m` stays in the aligned segment of `p` lanes whenever `m < p`: a mask
            // made from the width by `/`, `>>`, `%`, `&` or `-` is smaller than it
            if (a..=b).any(|j| matches!(src.s(j), "/" | ">>" | "%" | "&" | "-")) {
                continue;
            }
        } else if !name.contains("up") && !name.contains("down") && !segment_relative(cx, a, b, p) {
            // an indexed shuffle whose lane is absolute in the hardware warp (a segment base
            // such as `lane & ~(p - 1)` added) needs no width
            continue;
        }
        let close = src.mate(i + 1).unwrap_or(b);
        let msg = format!(
            "`{}` computes its lane for a logical warp of `{p}` lanes but passes no width: it shuffles across the whole hardware warp (64 lanes on wave64 AMD targets)",
            src.s(i)
        );
        cx.report(
            &META,
            i,
            close,
            msg,
            &format!("pass the logical width as the last argument (`..., {p})`)"),
        );
    }
}
