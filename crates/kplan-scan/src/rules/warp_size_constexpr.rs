//! `warp-size-constexpr`: `warpSize` used where a constant expression is required.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "warp-size-constexpr",
    summary: "`warpSize` used as a compile-time constant",
    what: "Finds `warpSize` in array bounds, `constexpr` initializers, `static_assert`s, template arguments and \
`case` labels, and the same uses of a macro the file defines as `warpSize` (`#define WARPSIZE warpSize`). \
The definition itself is reported when the same name is an integer constant elsewhere (`#define WARPSIZE 32` \
for CUDA), since code written against that constant uses it at compile time, unless this file uses it only at \
run time. A `warpSize` constant the file declares only for NVIDIA (`#if defined(__HIP_PLATFORM_NVCC__)` / \
`constexpr unsigned warpSize = 32;`) does not stand in for the built-in on AMD.",
    why: "`warpSize` is a run-time value on NVIDIA, and ROCm 7 made HIP's `warpSize` a non-`constexpr` variable \
too (RDNA runs both wave32 and wave64): these uses stop compiling. Code that needs a compile-time width must \
pick it per target.",
    example: "__shared__ float partial[warpSize];\nconstexpr int kLanes = warpSize;",
    use_instead: "__shared__ float partial[KPLAN_MAX_WARP_SIZE];  // compile-time upper bound\nconst int lanes = warpSize;  // run time",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Object-like macros this file defines as exactly `warpSize` (`#define WARPSIZE warpSize`),
/// with the byte span of the definition's name.
fn warp_size_aliases<'a>(cx: &Cx<'_, 'a, '_>) -> Vec<(&'a str, usize, usize)> {
    let src = cx.src;
    src.defines
        .iter()
        .filter(|d| !d.function_like)
        .filter(|d| d.body.1 == d.body.0 + 1 && src.is(d.body.0 as usize, "warpSize"))
        .filter_map(|d| {
            let name = src.text.get(d.name_start as usize..d.name_end as usize)?;
            Some((name, d.name_start as usize, d.name_end as usize))
        })
        .collect()
}

pub fn check(cx: &mut Cx) {
    if !cx.has("warpSize") {
        return;
    }
    // a project constant named `warpSize` shadows the built-in
    if crate::rules::device_warp_size_in_host::declares_warp_size(cx) {
        return;
    }
    let aliases = warp_size_aliases(cx);
    let src = cx.src;
    let n = src.toks.len();
    let mut alias_ct: Vec<&str> = Vec::new();
    let mut alias_rt: Vec<&str> = Vec::new();
    for i in 0..n {
        if !(src.is(i, "warpSize") || aliases.iter().any(|a| src.is(i, a.0))) || cx.nv_only(i) {
            continue;
        }
        if !src.is(i, "warpSize")
            && src
                .toks
                .get(i)
                .is_some_and(|t| t.flags & crate::lex::IN_DEFINE != 0)
        {
            continue;
        }
        let alias = !src.is(i, "warpSize");
        let mut why: Option<&str> = None;
        let mut angles = 0u32;
        // enclosing [ ] of a declaration: `T name[ ... warpSize ... ]`
        let mut k = i;
        let mut steps = 0;
        while k > 0 && steps < 32 {
            k -= 1;
            steps += 1;
            let t = src.s(k);
            // a closed template argument list before the use: `c_width<T> == warpSize`
            if t == ">" {
                angles += 1;
                continue;
            }
            if t == "<" && angles > 0 {
                angles -= 1;
                continue;
            }
            if t == "[" {
                if src.mate(k).is_some_and(|m| m > i)
                    && k >= 2
                    && src.kind(k - 1) == Some(Tk::Ident)
                    && (src.kind(k - 2) == Some(Tk::Ident) || src.is(k - 2, "*"))
                    && !matches!(src.s(k - 2), "return" | "case")
                {
                    why = Some("an array bound");
                }
                break;
            }
            if t == "<"
                && k >= 1
                && src.kind(k - 1) == Some(Tk::Ident)
                && src.s(k - 1) != "warpSize"
            {
                // template argument list: `name<..., warpSize, ...>` closed by `>` before any `;`
                let closes = (i + 1..n.min(i + 8))
                    .find(|&j| matches!(src.s(j), ">" | ";" | "{" | ")" | "<"));
                if closes.is_some_and(|j| src.is(j, ">")) && !matches!(src.s(i + 1), "-" | "+")
                    || closes.is_some_and(|j| src.is(j, ">") && j == i + 1)
                {
                    why = Some("a template argument");
                }
                break;
            }
            if t == ")" {
                // a closed group before the use: `(a + b) * warpSize`
                if let Some(m) = src.mate(k).filter(|&m| m < k) {
                    k = m;
                    continue;
                }
                break;
            }
            if t == "("
                && src.mate(k).is_some_and(|m| m > i)
                && (k == 0
                    || !(src.kind(k - 1) == Some(Tk::Ident)
                        || matches!(src.s(k - 1), ")" | "]" | ">")))
            {
                // a grouping paren around the use: `[N * (T / warpSize)]`
                continue;
            }
            // a braced initializer of a constexpr declaration: `constexpr bool b{n <= warpSize};`
            if t == "{"
                && k >= 1
                && src.is_ident(k - 1)
                && src.mate(k).is_some_and(|m| m > i)
                && (k.saturating_sub(8)..k)
                    .rev()
                    .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
                    .any(|j| src.is(j, "constexpr"))
            {
                why = Some("a constexpr initializer");
                break;
            }
            if matches!(t, ";" | "{" | "}" | ")" | "(" | "]") {
                if t == "(" && k >= 1 && src.is(k - 1, "static_assert") {
                    why = Some("a static assertion");
                }
                if t == "(" && k >= 2 && src.is(k - 1, "constexpr") && src.is(k - 2, "if") {
                    why = Some("an `if constexpr` condition");
                }
                break;
            }
            if t == "case" {
                why = Some("a case label");
                break;
            }
            if t == "=" {
                let decl_start = (k.saturating_sub(8)..k)
                    .rev()
                    .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
                    .any(|j| src.is(j, "constexpr"));
                if decl_start {
                    why = Some("a constexpr initializer");
                }
                break;
            }
        }
        if alias {
            if why.is_some() {
                alias_ct.push(src.s(i));
            } else {
                alias_rt.push(src.s(i));
            }
        }
        if let Some(w) = why {
            let msg = format!(
                "`{}` used in {w}, but `warpSize` is not a constant expression (ROCm 7 and later)",
                src.s(i)
            );
            cx.report(&META, i, i, msg, "use a per-target compile-time constant (the kplan header's `KPLAN_MAX_WARP_SIZE`) and keep `warpSize` for run-time arithmetic");
        }
    }
    // an alias that is an integer constant on the other platform (`#define WARPSIZE 32` for
    // CUDA): code written against it uses it as a compile-time constant
    for &(name, s, e) in &aliases {
        // used here only at run time: fine; used here as a constant, or not used here at all
        // (the header serves code written against the integer): reported
        let used_ct = alias_ct.contains(&name);
        let used_rt = alias_rt.contains(&name);
        if used_rt && !used_ct {
            continue;
        }
        let int_elsewhere = cx.index.consts.get(name).is_some_and(|v| !v.is_empty())
            || cx.src.defines.iter().any(|d| {
                !d.function_like
                    && cx.src.text.get(d.name_start as usize..d.name_end as usize) == Some(name)
                    && d.body.1 == d.body.0 + 1
                    && cx.src.int(d.body.0 as usize).is_some()
            });
        if !(int_elsewhere || used_ct) {
            continue;
        }
        if let Some((sev, targets)) = cx.ctx.scope_severity(&META) {
            let msg = if int_elsewhere {
                format!("`{name}` is an integer constant on the other platform but `warpSize` here, which is not a constant expression on ROCm 7: its uses as array bounds, template arguments or `constexpr` initializers stop compiling")
            } else {
                format!("`{name}` is defined as `warpSize`, which is not a constant expression on ROCm 7, and this file uses it as one")
            };
            cx.report_span(&META, sev, targets, s, e, msg, "define a compile-time upper bound (64) for sizes and keep `warpSize` for run-time arithmetic, or pick 32/64 per target from `__AMDGCN_WAVEFRONT_SIZE` in device code");
        }
    }
}
