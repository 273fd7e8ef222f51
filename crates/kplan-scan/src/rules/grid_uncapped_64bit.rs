//! `grid-uncapped-64bit`: a launch grid computed by ceiling division from a 64-bit element
//! count with no cap. HIP rejects a launch whose grid times block exceeds 2^32 - 1 work-items in
//! any dimension; CUDA accepts 2^31 - 1 blocks in x.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::launch::launch_args;

pub static META: RuleMeta = RuleMeta {
    id: "grid-uncapped-64bit",
    summary: "launch grid grows with a 64-bit element count and has no cap (HIP's 2^32 work-item limit)",
    what: "Finds the grid of a kernel launch (`<<<grid, block>>>`, `hipLaunchKernelGGL`, `cudaLaunchKernel` and \
project launch macros or functions whose name contains `launch`, with the kernel, grid and block as their first \
three arguments) when one of its dimensions is a ceiling division (`(n + b - 1) / b`, `div_round_up(n, b)`, \
`ceil_div`, `cdiv`, `*_block_count(n, b)`, ...) of an element count: a `numel()`, `size()` or `sizes()` call, \
or a variable declared `int64_t`, `size_t`, `long` or `auto` and initialised from one (directly or through one \
more such variable). The grid may be written in \
the launch, in a `dim3` or in a variable defined earlier in the function. A grid with a `min` or a cap in its \
expression, or assigned again before the launch, is left alone.",
    why: "HIP validates each launch dimension as grid x block work-items and rejects it with \
`hipErrorInvalidConfiguration` when the product exceeds 2^32 - 1 (ROCm's `hipamd/src/hip_module.cpp`), \
because the AMD dispatch packet holds a 32-bit grid size per dimension. CUDA accepts up to 2^31 - 1 blocks in x, \
so one thread (or one row of threads) per element works there for 2^32 elements and more, and fails on \
every AMD target once the count passes 2^32 work-items: a tensor of 4 Gi elements, or far fewer when each \
element gets a row of threads.",
    example: "void scale(const at::Tensor& x, float a) {\n    const auto n = x.numel();\n    const int threads = 256;\n    dim3 blocks((n + threads - 1) / threads);\n    scale_kernel<<<blocks, threads>>>(x.data_ptr<float>(), a, n);\n}",
    use_instead: "void scale(const at::Tensor& x, float a) {\n    const auto n = x.numel();\n    const int threads = 256;\n    const int64_t max_blocks = 65536;  // the kernel loops with a grid stride\n    dim3 blocks(std::min<int64_t>((n + threads - 1) / threads, max_blocks));\n    scale_kernel<<<blocks, threads>>>(x.data_ptr<float>(), a, n);\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// How far back a grid's definition or a count's declaration is looked for (tokens).
const REACH: usize = 4000;

/// A function or macro that rounds a quotient up (`div_round_up`, `ceil_div`, `cdiv`, `DIVUP`,
/// `cuda_calc_block_count`).
fn ceil_div_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("ceil")
        || l.contains("cdiv")
        || l.contains("divup")
        || l.contains("div_up")
        || l.contains("div_round_up")
        || l.contains("round_up_div")
        || l.contains("div_ceil")
        || l.contains("block_count")
        || l.contains("blockcount")
}

/// An identifier that caps a value (`min`, `std::min`, `clamp`, `max_blocks`, `cap_grid`).
fn cap_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    matches!(l.as_str(), "min" | "fmin" | "imin" | "umin" | "clamp")
        || l.starts_with("min_")
        || (l.contains("cap") && !l.contains("capacity"))
        || l.contains("max_grid")
        || l.contains("maxgrid")
        || l.contains("max_block")
        || l.contains("maxblock")
        || l.contains("limit")
}

fn wide_type(s: &str) -> bool {
    matches!(
        s,
        "int64_t"
            | "uint64_t"
            | "size_t"
            | "ssize_t"
            | "ptrdiff_t"
            | "long"
            | "int64"
            | "uint64"
            | "Py_ssize_t"
            | "hipDeviceptr_t"
    )
}

/// A call that returns a 64-bit element count (`t.numel()`, `t.size(0)`, `v.size()`).
fn count_call(cx: &Cx, j: usize) -> bool {
    let src = cx.src;
    matches!(
        src.s(j),
        "numel" | "size" | "sizes" | "nbytes" | "size_to_dim_"
    ) && src.is(j + 1, "(")
        && j > 0
        && matches!(src.s(j - 1), "." | "->" | "::")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("<<<") || cx.has("aunch") || cx.has("AUNCH")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut reported: Vec<usize> = Vec::new();
    for i in 0..n {
        let (grid, site) = if src.is(i, "<<<") {
            let Some((args, _)) = launch_args(src, i) else {
                continue;
            };
            let Some(&g) = args.first() else { continue };
            (g, i)
        } else if src.kind(i) == Some(Tk::Ident)
            && src.is(i + 1, "(")
            && src.s(i).to_ascii_lowercase().contains("launch")
            && !(i > 0 && src.kind(i - 1) == Some(Tk::Ident) && !src.is(i - 1, "return"))
        {
            let args = cx.call_args(i + 1);
            if args.len() < 3 {
                continue;
            }
            (args[1], i)
        } else {
            continue;
        };
        if cx.nv_only(site) {
            continue;
        }
        // only the x dimension: CUDA caps y and z at 65535 blocks, so a y/z grid that launches
        // on CUDA stays under 2^32 work-items on HIP too
        for (a, b) in components(cx, grid.0, grid.1, site).into_iter().take(1) {
            if let Some((d, count)) = uncapped_ceil_div(cx, a, b, site) {
                if reported.contains(&d) {
                    continue;
                }
                reported.push(d);
                let end = if src.is(d + 1, "(") {
                    src.mate(d + 1).unwrap_or(d)
                } else {
                    b
                };
                let msg = format!(
                    "grid `{}` grows with the 64-bit count `{}` and is not capped: HIP rejects a launch over 2^32 - 1 work-items per dimension on every AMD target, where CUDA accepts 2^31 - 1 blocks",
                    cx.snippet(d, end),
                    cx.snippet(count.0, count.1)
                );
                cx.report(
                    &META,
                    d,
                    end,
                    msg,
                    "cap the grid (`std::min(blocks, max_blocks)`) and let the kernel loop with a grid stride",
                );
            }
        }
    }
}

/// The grid's dimensions as token ranges: a `dim3(...)` or `{...}`, or the definition of the
/// variable named (`dim3 grid(x, y)`, `auto grid = expr`), one level deep per dimension. A
/// variable assigned again between its definition and the launch yields nothing (it may be
/// capped there).
fn components(cx: &Cx, a: usize, b: usize, site: usize) -> Vec<(usize, usize)> {
    let src = cx.src;
    let mut out = Vec::new();
    let top = expand(cx, a, b, site);
    for (x, y) in top {
        if x == y && src.kind(x) == Some(Tk::Ident) {
            if let Some(def) = definition(cx, x, site) {
                out.extend(match def {
                    Def::Dim3(o) => cx.call_args(o),
                    Def::Expr(p, q) => vec![(p, q)],
                });
                continue;
            }
        }
        out.push((x, y));
    }
    out
}

/// One level of the grid expression: its dimensions.
fn expand(cx: &Cx, a: usize, b: usize, site: usize) -> Vec<(usize, usize)> {
    let src = cx.src;
    if (src.is(a, "dim3") || src.is(a, "dim3_t")) && matches!(src.s(a + 1), "(" | "{") {
        return cx.call_args(a + 1);
    }
    if src.is(a, "{") && src.mate(a) == Some(b) {
        return cx.call_args(a);
    }
    if a == b && src.kind(a) == Some(Tk::Ident) {
        return match definition(cx, a, site) {
            Some(Def::Dim3(o)) => cx.call_args(o),
            Some(Def::Expr(p, q)) => expand(cx, p, q, p),
            None => Vec::new(),
        };
    }
    vec![(a, b)]
}

enum Def {
    /// `dim3 name(...)` / `dim3 name{...}` / `name = dim3(...)`: the `(` or `{`.
    Dim3(usize),
    /// `name = <expr>;`
    Expr(usize, usize),
}

/// The definition of the variable at token `v` before `site` in the same function.
fn definition(cx: &Cx, v: usize, site: usize) -> Option<Def> {
    let src = cx.src;
    let name = src.s(v);
    let lo = site.saturating_sub(REACH);
    let mut j = site;
    let mut assigned_after = false;
    while j > lo {
        j -= 1;
        if src.is(j, "}") && src.toks[j].depth <= 1 && j < v {
            return None;
        }
        if !src.is(j, name) || j == v {
            continue;
        }
        let prev = if j > 0 { src.s(j - 1) } else { "" };
        let declared =
            j > 0 && (src.kind(j - 1) == Some(Tk::Ident) || prev == "&") && prev != "return";
        if src.is(j + 1, "=") || (declared && matches!(src.s(j + 1), "(" | "{")) {
            // an assignment after the definition and before the launch: maybe a cap
            if !declared && src.is(j + 1, "=") {
                assigned_after = true;
                continue;
            }
            if assigned_after {
                return None;
            }
            if matches!(src.s(j + 1), "(" | "{") {
                return (prev == "dim3").then_some(Def::Dim3(j + 1));
            }
            let e = (j + 2..site).find(|&k| {
                src.is(k, ";")
                    || (src.is(k, ",")
                        && src.toks[k].depth == src.toks[j].depth
                        && !inside_parens(cx, j + 2, k))
            })?;
            if e <= j + 2 {
                return None;
            }
            if src.is(j + 2, "dim3") && matches!(src.s(j + 3), "(" | "{") {
                return Some(Def::Dim3(j + 3));
            }
            if src.is(j + 2, "{") {
                return Some(Def::Dim3(j + 2));
            }
            return Some(Def::Expr(j + 2, e - 1));
        }
        if src.is(j + 1, ".") && src.is(j + 3, "=") {
            assigned_after = true;
        }
    }
    None
}

/// Whether token `k` sits inside a `(`/`[`/`{` group opened at or after `from`.
fn inside_parens(cx: &Cx, from: usize, k: usize) -> bool {
    let src = cx.src;
    (from..k).any(|j| matches!(src.s(j), "(" | "[" | "{") && src.mate(j).is_some_and(|m| m > k))
}

/// A ceiling division of a 64-bit count in tokens `a..=b` with no cap in them: the token that
/// starts the division (the call's name, or the `(` of `(n + d - 1) / d`) and the count.
fn uncapped_ceil_div(cx: &Cx, a: usize, b: usize, site: usize) -> Option<(usize, (usize, usize))> {
    let src = cx.src;
    if (a..=b).any(|j| src.kind(j) == Some(Tk::Ident) && cap_name(src.s(j))) {
        return None;
    }
    for j in a..=b {
        // `div_round_up(n, d)`
        if src.kind(j) == Some(Tk::Ident) && ceil_div_name(src.s(j)) && src.is(j + 1, "(") {
            let args = cx.call_args(j + 1);
            if args.len() == 2 && wide_count(cx, args[0].0, args[0].1, site, 0) {
                return Some((j, args[0]));
            }
        }
        // `(n + d - 1) / d`
        if src.is(j, "(") {
            let Some(c) = src.mate(j) else { continue };
            if c > b || !src.is(c + 1, "/") || c < j + 4 {
                continue;
            }
            let Some(plus) = (j + 1..c).find(|&k| src.is(k, "+") && !inside_parens(cx, j + 1, k))
            else {
                continue;
            };
            // `(n + d - 1) / d`, or `(n + 255) / 256` with literals
            let minus_one = src.is(c - 1, "1") && src.is(c - 2, "-");
            let literal = plus + 2 == c
                && src
                    .int(plus + 1)
                    .is_some_and(|k| src.int(c + 2) == Some(k + 1));
            if !(minus_one || literal) {
                continue;
            }
            if plus > j + 1 && wide_count(cx, j + 1, plus - 1, site, 0) {
                return Some((j, (j + 1, plus - 1)));
            }
        }
    }
    None
}

/// Tokens `a..=b` hold a 64-bit count: a count call, or a variable declared with a 64-bit type
/// (or `auto` from a count call) before `site`.
fn wide_count(cx: &Cx, a: usize, b: usize, site: usize, depth: u8) -> bool {
    let src = cx.src;
    if (a..=b).any(|j| count_call(cx, j)) {
        return true;
    }
    if depth > 1 {
        return false;
    }
    (a..=b).any(|j| {
        src.kind(j) == Some(Tk::Ident)
            && !src.is(j + 1, "(")
            && !(j > a && matches!(src.s(j - 1), "." | "->" | "::"))
            && declared_wide(cx, j, site, depth)
    })
}

/// The variable at token `v` is declared 64-bit before `site`.
fn declared_wide(cx: &Cx, v: usize, site: usize, depth: u8) -> bool {
    let src = cx.src;
    let name = src.s(v);
    let lo = site.saturating_sub(REACH);
    let mut j = v.min(site);
    while j > lo {
        j -= 1;
        if !src.is(j, name) || j == 0 {
            continue;
        }
        if !matches!(src.s(j + 1), "=" | ";" | "," | ")" | "{" | "(") {
            continue;
        }
        let mut t = j - 1;
        while t > 0 && matches!(src.s(t), "const" | "&" | "*" | "constexpr" | "static") {
            t -= 1;
        }
        let ty = src.s(t);
        if src.kind(t) != Some(Tk::Ident) || matches!(ty, "return" | "case") {
            continue;
        }
        // `size_t n = std::min(size, limit)`: the count is capped where it is made
        if src.is(j + 1, "=") {
            let e = (j + 2..src.toks.len().min(j + 200))
                .find(|&k| src.is(k, ";"))
                .unwrap_or(j + 2);
            if (j + 2..e).any(|k| src.kind(k) == Some(Tk::Ident) && cap_name(src.s(k))) {
                return false;
            }
        }
        // a 64-bit variable made from an element count (`auto n = x.numel()`,
        // `const int64_t rows = t.size(0)`): a 64-bit type alone (every dimension of some
        // projects) says nothing about how large the value gets
        if (wide_type(ty) || ty == "auto") && src.is(j + 1, "=") {
            let e = (j + 2..src.toks.len().min(j + 200)).find(|&k| src.is(k, ";"));
            return e.is_some_and(|e| e > j + 2 && wide_count(cx, j + 2, e - 1, site, depth + 1));
        }
        return false;
    }
    false
}
