//! `ballot-narrowing`: ballot / active-mask results kept in 32-bit types or fed to 32-bit bit
//! intrinsics.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::full_mask_literal::is_ballot_call;

pub static META: RuleMeta = RuleMeta {
    id: "ballot-narrowing",
    summary: "ballot or active-mask result narrowed to 32 bits",
    what: "Finds `__ballot_sync`/`__ballot`/`__activemask()` results stored in `unsigned`, `int`, `uint32_t` \
or cast to them, `__popc`/`__ffs`/`__clz`/`__brev` applied to a ballot, and lane bits built in 32 bits \
(`1u << lane`). A project's own wrappers named like the intrinsics (`activemask()`, `ballot(pred)`, \
`lanemask_lt()`) count as ballots: on HIP they return the wrapped intrinsic's 64-bit mask.",
    why: "On a 64-lane wavefront a ballot is a 64-bit lane mask. Keeping it in 32 bits drops lanes 32-63: \
counts come out too small and `__ffs` misses the first active lane in the upper half.",
    example: "unsigned mask = __ballot_sync(0xffffffff, pred);\nint n = __popc(mask);",
    use_instead: "unsigned long long mask = __ballot_sync(__activemask(), pred);  // or auto\nint n = __popcll(mask);",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// The declared type (identifier tokens before `name_tok`) is 32 bits wide.
fn narrow_type(cx: &Cx, name_tok: usize) -> Option<(usize, String)> {
    let src = cx.src;
    let mut i = name_tok;
    let mut words: Vec<&str> = Vec::new();
    let mut first = name_tok;
    while i > 0 {
        i -= 1;
        match src.kind(i) {
            Some(Tk::Ident) => {
                words.push(src.s(i));
                first = i;
            }
            Some(Tk::Punct) if src.is(i, "::") => continue,
            _ => break,
        }
        if words.len() > 6 {
            break;
        }
    }
    if words.is_empty() {
        return None;
    }
    let longs = words.iter().filter(|w| **w == "long").count();
    let wide = longs >= 2
        || words.iter().any(|w| {
            matches!(
                *w,
                "uint64_t"
                    | "int64_t"
                    | "auto"
                    | "size_t"
                    | "uint64"
                    | "u64"
                    | "lane_mask_t"
                    | "unsigned_long_long"
                    | "ull"
                    | "decltype"
            )
        })
        || (longs == 1 && !words.contains(&"int"));
    let narrow = words.iter().any(|w| {
        matches!(
            *w,
            "unsigned"
                | "int"
                | "uint32_t"
                | "int32_t"
                | "uint"
                | "u32"
                | "uint32"
                | "unsigned_int"
        )
    });
    if narrow && !wide {
        let mut ty: Vec<&str> = words.clone();
        ty.reverse();
        // drop qualifiers and the name-like leftovers
        let ty: Vec<&str> = ty
            .into_iter()
            .filter(|w| {
                !matches!(
                    *w,
                    "const"
                        | "static"
                        | "volatile"
                        | "register"
                        | "constexpr"
                        | "__shared__"
                        | "__device__"
                )
            })
            .collect();
        Some((first, ty.join(" ")))
    } else {
        None
    }
}

/// A project's portable wrapper of the vote intrinsics (`activemask()`, `ballot(pred)`,
/// `lanemask_lt()`): on HIP it returns the 64-bit mask of the intrinsic it wraps.
fn is_ballot_wrapper(s: &str) -> bool {
    let l = s.trim_start_matches('_').to_ascii_lowercase();
    matches!(
        l.as_str(),
        "activemask"
            | "active_mask"
            | "ballot"
            | "warp_ballot"
            | "warpballot"
            | "ballot_sync"
            | "lanemask_lt"
            | "lanemask_le"
            | "lanemask_gt"
            | "lanemask_ge"
    ) && !is_ballot_call(s)
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__ballot")
        || cx.has("__activemask")
        || cx.has("__lanemask")
        || cx.has("<<")
        || cx.has("allot")
        || cx.has("ctivemask")
        || cx.has("ctive_mask")
        || cx.has("lanemask"))
    {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let help = "keep lane masks in 64 bits (`unsigned long long` or `auto`) and use `__popcll`/`__ffsll`/`__clzll`";
    let mut ballot_vars: Vec<&str> = Vec::new();
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) || !src.is(i + 1, "(") || cx.guarded(i) {
            continue;
        }
        let wrapper = is_ballot_wrapper(src.s(i)) && !(i > 0 && matches!(src.s(i - 1), "." | "->"));
        if !is_ballot_call(src.s(i)) && !wrapper {
            continue;
        }
        let call = src.s(i);
        // `T name = __ballot(...)`
        if i >= 2 && src.is(i - 1, "=") && src.kind(i - 2) == Some(Tk::Ident) {
            let name = src.s(i - 2);
            ballot_vars.push(name);
            if let Some((first, ty)) = narrow_type(cx, i - 2) {
                let msg = format!("`{call}` result stored in 32-bit `{ty} {name}`");
                let end = src.mate(i + 1).unwrap_or(i);
                cx.report(&META, first, end, msg, help);
                continue;
            }
        }
        // `(unsigned)__ballot(...)`, `static_cast<uint32_t>(__ballot(...))`
        if i >= 2 && src.is(i - 1, ")") {
            if let Some(o) = src.mate(i - 1) {
                if (o + 1..i - 1).all(|k| src.kind(k) == Some(Tk::Ident)) && i - 1 > o + 1 {
                    if let Some((_, ty)) = narrow_type(cx, i - 1) {
                        let msg = format!("`{call}` result cast to 32-bit `{ty}`");
                        cx.report(&META, o, i, msg, help);
                        continue;
                    }
                }
            }
        }
        if i >= 3 && src.is(i - 1, "(") && src.is(i - 2, ">") {
            let cast_kw = (i.saturating_sub(8)..i - 2)
                .find(|&k| src.is(k, "static_cast") || src.is(k, "reinterpret_cast"));
            if let Some(kw) = cast_kw {
                if let Some((_, ty)) = narrow_type(cx, i - 2) {
                    let msg = format!("`{call}` result cast to 32-bit `{ty}`");
                    cx.report(&META, kw, i, msg, help);
                    continue;
                }
            }
        }
    }
    // `1u << lane`: a 32-bit lane bit, undefined for lanes 32-63
    for k in 1..n.saturating_sub(1) {
        if !src.is(k, "<<") || cx.guarded(k) || !src.in_device(k) {
            continue;
        }
        let lit = src.s(k - 1).to_ascii_lowercase();
        if !matches!(lit.as_str(), "1" | "1u")
            || (k >= 2 && matches!(src.s(k - 2), "." | "->" | ")" | "]"))
            || src.kind(k - 2) == Some(Tk::Ident) && !matches!(src.s(k - 2), "return" | "case")
        {
            continue;
        }
        let Some(r) = cx.right_operand(k) else {
            continue;
        };
        if cx.any_ident(k + 1, r, crate::cuda::is_lane_ident) {
            let msg = format!(
                "`{}` builds a 32-bit lane bit, which overflows for lanes 32-63",
                cx.snippet(k - 1, r)
            );
            cx.report(
                &META,
                k - 1,
                r,
                msg,
                "build lane bits in 64 bits: `1ull << lane`",
            );
        }
    }
    // __popc / __ffs / __clz / __brev of a ballot
    for i in 0..n {
        let w = src.s(i);
        if !matches!(w, "__popc" | "__ffs" | "__clz" | "__brev" | "__fns")
            || !src.is(i + 1, "(")
            || cx.guarded(i)
        {
            continue;
        }
        let Some(c) = src.mate(i + 1) else { continue };
        let hit = (i + 2..c).find(|&k| {
            src.kind(k) == Some(Tk::Ident)
                && (is_ballot_call(src.s(k)) || ballot_vars.contains(&src.s(k)))
        });
        if let Some(k) = hit {
            let msg = format!(
                "`{w}` applied to ballot `{}` counts only 32 lanes",
                src.s(k)
            );
            cx.report(&META, i, c, msg, help);
        }
    }
}
