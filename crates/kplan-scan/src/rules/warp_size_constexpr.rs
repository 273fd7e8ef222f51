//! `warp-size-constexpr`: `warpSize` used where a constant expression is required.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "warp-size-constexpr",
    summary: "`warpSize` used as a compile-time constant",
    what: "Finds `warpSize` in array bounds, `constexpr` initializers, `static_assert`s, template arguments and \
`case` labels.",
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

pub fn check(cx: &mut Cx) {
    if !cx.has("warpSize") {
        return;
    }
    // a project constant named `warpSize` shadows the built-in
    if crate::rules::device_warp_size_in_host::declares_warp_size(cx) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for i in 0..n {
        if !src.is(i, "warpSize") || cx.nv_only(i) {
            continue;
        }
        let mut why: Option<&str> = None;
        // enclosing [ ] of a declaration: `T name[ ... warpSize ... ]`
        let mut k = i;
        let mut steps = 0;
        while k > 0 && steps < 32 {
            k -= 1;
            steps += 1;
            let t = src.s(k);
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
        if let Some(w) = why {
            let msg = format!(
                "`warpSize` used in {w}, but it is not a constant expression (ROCm 7 and later)"
            );
            cx.report(&META, i, i, msg, "use a per-target compile-time constant (the kplan header's `KPLAN_MAX_WARP_SIZE`) and keep `warpSize` for run-time arithmetic");
        }
    }
}
