//! `warp-algorithm-small-block`: a cub/hipCUB block load or store with the warp-transpose
//! algorithm (`BLOCK_LOAD_WARP_TRANSPOSE`, ...) in a kernel template that the file instantiates
//! with fewer threads per block than a wavefront.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Tk, IN_DEFINE};
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::consts::Consts;
use std::collections::HashMap;

/// Token positions of every identifier of the file.
type Positions<'a> = HashMap<&'a str, Vec<usize>>;

pub static META: RuleMeta = RuleMeta {
    id: "warp-algorithm-small-block",
    summary: "warp-based block algorithm (`BLOCK_LOAD_WARP_TRANSPOSE`) instantiated with a block smaller than a wavefront",
    what: "Finds cub/hipCUB block loads and stores (`BlockLoad`, `BlockStore`) used with the warp-transpose \
algorithm (`BLOCK_LOAD_WARP_TRANSPOSE`, `BLOCK_STORE_WARP_TRANSPOSE` and their `_TIMESLICED` forms) inside \
a kernel template, and the file's instantiations of that template (`template __global__ void k<T, 64, 2>(...)`, \
`k<32, 4><<<...>>>`, a macro that instantiates it, or a function template that forwards its parameters) for \
which the primitive's thread count is below the widest warp in scope. It reports each such instantiation \
and, once, the primitive.",
    why: "The warp-transpose algorithms split the block into whole warps: hipCUB/rocPRIM's block load and \
store `static_assert` that the block's thread count is a multiple of the hardware warp size. A 32-thread \
block is one warp on NVIDIA and RDNA but half a 64-lane wavefront on CDNA, so the kernel does not compile for \
wave64 targets. (The warp-based scan and reduce algorithms, `BLOCK_SCAN_WARP_SCANS` and \
`BLOCK_REDUCE_WARP_REDUCTIONS`, take a logical warp of the block's size and accept any block.)",
    example: "template <typename T, int BLOCK_SIZE, int NUM_PER_TH>\n__global__ void quantize(const T* in, unsigned char* out) {\n    typedef cub::BlockLoad<T, BLOCK_SIZE / NUM_PER_TH, NUM_PER_TH, cub::BLOCK_LOAD_WARP_TRANSPOSE> LoadT;\n    // ...\n}\ntemplate __global__ void quantize<float, 64, 2>(const float*, unsigned char*);",
    use_instead: "template <typename T, int BLOCK_SIZE, int NUM_PER_TH>\n__global__ void quantize(const T* in, unsigned char* out) {\n    // a direct load works for any block size\n    typedef cub::BlockLoad<T, BLOCK_SIZE / NUM_PER_TH, NUM_PER_TH, cub::BLOCK_LOAD_DIRECT> LoadT;\n    // ...\n}\ntemplate __global__ void quantize<float, 64, 2>(const float*, unsigned char*);",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

fn warp_algorithm(s: &str) -> bool {
    matches!(
        s,
        "BLOCK_LOAD_WARP_TRANSPOSE"
            | "BLOCK_STORE_WARP_TRANSPOSE"
            | "BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED"
            | "BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED"
    )
}

fn block_primitive(s: &str) -> bool {
    matches!(s, "BlockLoad" | "BlockStore")
}

/// The template parameter names of the `template <...>` that opens at `open` (the `<`).
fn template_params<'a>(cx: &Cx<'_, 'a, '_>, open: usize) -> Vec<&'a str> {
    let src = cx.src;
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut j = open;
    let mut last: Option<&'a str> = None;
    while j < src.toks.len() && j < open + 200 {
        let t = src.s(j);
        match t {
            "<" => depth += 1,
            ">" | ">>" => {
                depth -= if t == ">>" { 2 } else { 1 };
                if depth <= 0 {
                    if let Some(l) = last.take() {
                        out.push(l);
                    }
                    return out;
                }
            }
            "," if depth == 1 => {
                if let Some(l) = last.take() {
                    out.push(l);
                }
            }
            "=" if depth == 1 => {
                // a default: the name is already the last identifier
                if let Some(l) = last.take() {
                    out.push(l);
                }
                // skip to the next top-level comma or the end
                let mut d = 0i32;
                while j + 1 < src.toks.len() {
                    let n = src.s(j + 1);
                    if matches!(n, "(" | "<") {
                        d += 1;
                    } else if matches!(n, ")" | ">") {
                        if d == 0 {
                            break;
                        }
                        d -= 1;
                    } else if n == "," && d == 0 {
                        break;
                    }
                    j += 1;
                }
            }
            _ if depth == 1 && src.kind(j) == Some(Tk::Ident) => last = Some(t),
            _ => {}
        }
        j += 1;
    }
    out
}

/// Template arguments `NAME<a, b, ...>` with `<` at `lt`: token ranges split on top-level commas.
fn template_args(cx: &Cx, lt: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let src = cx.src;
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut start = lt + 1;
    let mut j = lt;
    while j < src.toks.len() && j < lt + 200 {
        match src.s(j) {
            "<" => depth += 1,
            "(" | "[" | "{" => {
                j = src.mate(j)?;
            }
            ">" => {
                depth -= 1;
                if depth == 0 {
                    if j > start {
                        out.push((start, j - 1));
                    }
                    return Some((out, j));
                }
            }
            "," if depth == 1 => {
                out.push((start, j.saturating_sub(1)));
                start = j + 1;
            }
            ";" => return None,
            _ => {}
        }
        j += 1;
    }
    None
}

/// A function template: its name, parameters and body range (token indices).
struct Template<'a> {
    name: &'a str,
    params: Vec<&'a str>,
    body: (usize, usize),
}

/// The function template whose body contains token `k`.
fn enclosing_template<'a>(cx: &Cx<'_, 'a, '_>, k: usize) -> Option<Template<'a>> {
    let src = cx.src;
    // the outermost `{` around k at function level
    let mut open = None;
    let mut j = k;
    let mut steps = 0;
    while j > 0 && steps < 50_000 {
        j -= 1;
        steps += 1;
        if matches!(src.s(j), "}" | ")" | "]") {
            if let Some(m) = src.mate(j) {
                if m < j {
                    j = m;
                    continue;
                }
            }
        }
        if src.is(j, "{") && src.mate(j).is_some_and(|m| m > k) && src.is(j.saturating_sub(1), ")")
        {
            open = Some(j);
        }
    }
    let open = open?;
    let close = src.mate(open)?;
    let rp = open - 1;
    let lp = src.mate(rp)?;
    let name_at = lp.checked_sub(1)?;
    if src.kind(name_at) != Some(Tk::Ident) {
        return None;
    }
    // back to `template <` before the name, within a few dozen tokens and the same declaration
    let t = (name_at.saturating_sub(60)..name_at)
        .rev()
        .take_while(|&t| !matches!(src.s(t), ";" | "{" | "}"))
        .find(|&t| src.is(t, "template") && src.is(t + 1, "<"))?;
    Some(Template {
        name: src.s(name_at),
        params: template_params(cx, t + 1),
        body: (open, close),
    })
}

/// Every way the file instantiates template `name` with the values of its parameters known:
/// `(token of the instantiation, values by parameter position)`. Follows one macro level and one
/// forwarding function template.
fn instantiations(
    cx: &Cx,
    pos: &Positions,
    name: &str,
    nparams: usize,
    consts: &Consts,
    depth: u8,
) -> Vec<(usize, Vec<Option<u64>>)> {
    let src = cx.src;
    let mut out = Vec::new();
    if depth > 2 {
        return out;
    }
    for &i in pos.get(name).map_or(&[][..], Vec::as_slice) {
        if !src.is(i + 1, "<") {
            continue;
        }
        let Some((args, _)) = template_args(cx, i + 1) else {
            continue;
        };
        if args.len() != nparams {
            continue;
        }
        let vals: Vec<Option<u64>> = args.iter().map(|&(a, b)| consts.eval(src, a, b)).collect();
        let all_known = vals.iter().all(Option::is_some);
        out.push((i, vals));
        if all_known {
            continue;
        }
        let in_define = src.toks[i].flags & IN_DEFINE != 0;
        if in_define {
            // a function-like macro whose parameters are the arguments: its invocations
            let Some(d) = src
                .defines
                .iter()
                .filter(|d| d.function_like)
                .find(|d| (d.body.0 as usize) <= i && i < d.body.1 as usize)
            else {
                continue;
            };
            let mname = src
                .text
                .get(d.name_start as usize..d.name_end as usize)
                .unwrap_or("");
            // macro parameters: the tokens between the name and the body
            let Some(lp) = (0..i)
                .rev()
                .find(|&k| src.toks[k].start == d.name_end && src.is(k, "("))
                .or_else(|| {
                    (0..i).rev().find(|&k| {
                        src.toks[k].start >= d.name_end
                            && src.is(k, "(")
                            && src.toks[k].start <= d.name_end + 1
                    })
                })
            else {
                continue;
            };
            let mparams: Vec<&str> = cx.call_args(lp).iter().map(|&(a, _)| src.s(a)).collect();
            for &k in pos.get(mname).map_or(&[][..], Vec::as_slice) {
                if !src.is(k + 1, "(") || src.toks[k].flags & IN_DEFINE != 0 {
                    continue;
                }
                let margs = cx.call_args(k + 1);
                if margs.len() != mparams.len() {
                    continue;
                }
                let vals: Vec<Option<u64>> = args
                    .iter()
                    .map(|&(a, b)| {
                        consts.eval(src, a, b).or_else(|| {
                            (a == b)
                                .then(|| mparams.iter().position(|p| *p == src.s(a)))
                                .flatten()
                                .and_then(|p| margs.get(p))
                                .and_then(|&(x, y)| consts.eval(src, x, y))
                        })
                    })
                    .collect();
                out.push((k, vals));
            }
            continue;
        }
        // a function template that forwards its own parameters: its instantiations
        let Some(outer) = enclosing_template(cx, i) else {
            continue;
        };
        if outer.name == name {
            continue;
        }
        for (site, ovals) in
            instantiations(cx, pos, outer.name, outer.params.len(), consts, depth + 1)
        {
            let vals: Vec<Option<u64>> = args
                .iter()
                .map(|&(a, b)| {
                    consts.eval(src, a, b).or_else(|| {
                        (a == b)
                            .then(|| outer.params.iter().position(|p| *p == src.s(a)))
                            .flatten()
                            .and_then(|p| ovals.get(p).copied().flatten())
                    })
                })
                .collect();
            out.push((site, vals));
        }
    }
    out
}

/// Value of tokens `a..=b` with the template parameters bound to `vals`.
fn eval_bound(
    cx: &Cx,
    a: usize,
    b: usize,
    params: &[&str],
    vals: &[Option<u64>],
    consts: &Consts,
) -> Option<u64> {
    let src = cx.src;
    // a product or quotient of parameters and literals: `BLOCK_SIZE / NUM_PER_TH`, `THREADS`
    let mut acc: Option<u64> = None;
    let mut op = "*";
    let mut j = a;
    while j <= b {
        let v = if src.kind(j) == Some(Tk::Ident) {
            match params.iter().position(|p| *p == src.s(j)) {
                Some(p) => vals.get(p).copied().flatten()?,
                None => consts.get(src.s(j))?,
            }
        } else {
            src.int(j)?
        };
        acc = Some(match (acc, op) {
            (None, _) => v,
            (Some(x), "*") => x.checked_mul(v)?,
            (Some(x), "/") => x.checked_div(v)?,
            _ => return None,
        });
        j += 1;
        if j <= b {
            op = match src.s(j) {
                "*" => "*",
                "/" => "/",
                _ => return None,
            };
            j += 1;
        }
    }
    acc
}

pub fn check(cx: &mut Cx) {
    if !cx.has("_WARP_TRANSPOSE") {
        return;
    }
    let wide = u64::from(cx.ctx.max_warp_size());
    if wide <= 32 {
        return;
    }
    let src = cx.src;
    let consts = Consts::collect(src);
    // where each identifier occurs, built once: instantiations are looked up by name, so the
    // rule stays linear in the file however many templates it holds
    let mut pos: Positions = HashMap::new();
    for i in 0..src.toks.len() {
        if src.kind(i) == Some(Tk::Ident) {
            pos.entry(src.s(i)).or_default().push(i);
        }
    }
    let mut reported: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for k in 0..src.toks.len() {
        if !warp_algorithm(src.s(k)) || cx.guarded(k) {
            continue;
        }
        // the primitive `BlockLoad<T, THREADS, ...>` whose arguments hold the algorithm
        let Some(prim) = (k.saturating_sub(80)..k)
            .rev()
            .find(|&j| block_primitive(src.s(j)) && src.is(j + 1, "<"))
        else {
            continue;
        };
        let Some((args, gt)) = template_args(cx, prim + 1) else {
            continue;
        };
        if gt < k || args.len() < 2 {
            continue;
        }
        let (ta, tb) = args[1];
        let Some(tpl) = enclosing_template(cx, k) else {
            continue;
        };
        if !(tpl.body.0 < k && k < tpl.body.1) {
            continue;
        }
        let mut smallest: Option<(u64, usize)> = None;
        for (site, vals) in instantiations(cx, &pos, tpl.name, tpl.params.len(), &consts, 0) {
            let Some(threads) = eval_bound(cx, ta, tb, &tpl.params, &vals, &consts) else {
                continue;
            };
            if threads == 0 || threads >= wide {
                continue;
            }
            if !matches!(smallest, Some((t, _)) if t <= threads) {
                smallest = Some((threads, site));
            }
            if !reported.insert(site) {
                continue;
            }
            let msg = format!(
                "this instantiation of `{}` gives `{}` = {threads} threads per block to `{}` with `{}` (line {}), which hipCUB/rocPRIM's `static_assert` rejects on wave64 AMD targets: the block must be a multiple of the {wide}-lane wavefront",
                tpl.name,
                cx.snippet(ta, tb),
                src.s(prim),
                src.s(k),
                src.line(k) + 1
            );
            let line_end = (site..src.toks.len())
                .take_while(|&j| src.line(j) == src.line(site))
                .last()
                .unwrap_or(site);
            cx.report(&META, site, line_end, msg, "use a block of at least one wavefront (64 threads) here, or a direct algorithm (`BLOCK_LOAD_DIRECT`) for small blocks");
        }
        if let Some((threads, site)) = smallest {
            let msg = format!(
                "`{}` splits the block into whole warps, but `{}` instantiates it with {threads} threads (line {}): less than a {wide}-lane wavefront",
                src.s(k),
                tpl.name,
                src.line(site) + 1
            );
            cx.report(&META, k, k, msg, "use a direct algorithm (`BLOCK_LOAD_DIRECT`, `BLOCK_STORE_DIRECT`) when the block can be smaller than a wavefront");
        }
    }
}
