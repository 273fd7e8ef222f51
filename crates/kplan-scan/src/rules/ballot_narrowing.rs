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
`lanemask_lt()`) count as ballots: on HIP they return the wrapped intrinsic's 64-bit mask. A variable or \
parameter declared 32-bit earlier counts too: when a ballot is assigned to it later, and when it is passed as the \
lane mask of a `_sync` intrinsic. So does a 32-bit all-lanes literal shifted by the warp width (`0xffffffff >> \
(warpSize - n)`). Code on the 32-lane path of a width test is left alone, whether the test is a preprocessor \
condition or a run-time one (`if (warpSize == 32) return __popc((uint32_t)__ballot(p));`), and so is a lane bit \
of a lane id bounded below 32 where it is taken (`lane = threadIdx.x & 31`: the bound is `warp-size-literal`'s \
finding).",
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

/// Tokens `op value` bound a value below 32: `& 31`, `& 0x1f`, `% 32`.
fn below_32(src: &crate::lex::Src, op: usize, value: usize) -> bool {
    match src.s(op) {
        "&" => src.int(value) == Some(31),
        "%" => src.int(value) == Some(32),
        _ => false,
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
        // a member `ballot` is a cooperative-groups tile's vote (64-bit on HIP)
        let member = i > 0 && matches!(src.s(i - 1), "." | "->");
        let wrapper = is_ballot_wrapper(src.s(i)) && (!member || src.s(i) == "ballot");
        if !is_ballot_call(src.s(i)) && !wrapper {
            continue;
        }
        let call = src.s(i);
        // `T name = __ballot(...)`, `T name = tile.ballot(...)`
        let eq = if member && i >= 3 && src.kind(i - 2) == Some(Tk::Ident) {
            i - 2
        } else {
            i
        };
        if eq >= 2 && src.is(eq - 1, "=") && src.kind(eq - 2) == Some(Tk::Ident) {
            let name = src.s(eq - 2);
            ballot_vars.push(name);
            if let Some((first, ty)) = narrow_type(cx, eq - 2) {
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
    // masks declared 32-bit earlier (a local or a parameter of the enclosing function) that
    // receive a ballot later or are passed as the lane mask of a `_sync` intrinsic
    let mut narrow: std::collections::HashMap<(u32, &str), (usize, String)> = Default::default();
    let mut late: Vec<(usize, usize, String)> = Vec::new();
    for i in 1..n.saturating_sub(1) {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let f = src.toks[i].func;
        // a declaration `T name =`, `T name;`, `T name,` or `T name)` (a parameter)
        if matches!(src.s(i + 1), "=" | ";" | "," | ")") && src.kind(i - 1) == Some(Tk::Ident) {
            if let Some((_, ty)) = narrow_type(cx, i) {
                narrow.insert((f, src.s(i)), (i, ty));
                continue;
            }
            // a wider declaration of the same name (`unsigned long long mask`) shadows an
            // earlier 32-bit one
            if !matches!(
                src.s(i - 1),
                "return" | "else" | "case" | "throw" | "new" | "delete"
            ) {
                narrow.remove(&(f, src.s(i)));
            }
        }
        let lookup = |name: &str| -> Option<String> {
            if let Some(d) = narrow.get(&(f, name)) {
                return Some(d.1.clone());
            }
            // a parameter: declared just before the body of the function the use is in
            let open = src.funcs.get((f as usize).checked_sub(1)?)?.open as usize;
            narrow
                .get(&(0, name))
                .filter(|(k, _)| *k < open && *k + 300 > open)
                .map(|d| d.1.clone())
        };
        // `name = __ballot(...)` after `unsigned name;`
        if src.is(i + 1, "=") && i + 2 < n && !cx.guarded(i) {
            let c = i + 2;
            if src.kind(c) == Some(Tk::Ident) && src.is(c + 1, "(") && is_ballot_call(src.s(c)) {
                if let Some(ty) = lookup(src.s(i)) {
                    let end = src.mate(c + 1).unwrap_or(c);
                    late.push((
                        i,
                        end,
                        format!(
                            "`{}` result stored in `{}`, declared 32-bit `{ty}`",
                            src.s(c),
                            src.s(i)
                        ),
                    ));
                }
            }
            continue;
        }
        // `__shfl_xor_sync(m, ...)` with `uint32_t m`
        let w = src.s(i);
        if src.is(i + 1, "(")
            && w.starts_with("__")
            && w.ends_with("_sync")
            && !matches!(src.s(i - 1), "." | "->")
            && (src.kind(i - 1) != Some(Tk::Ident) || src.is(i - 1, "return"))
            && !cx.guarded(i)
            // inside a project's own sync shim the 32-bit parameter is sync-mask-param-32's
            && !src
                .func_of(i)
                .and_then(|fu| fu.name)
                .is_some_and(|t| src.s(t as usize).ends_with("_sync"))
        {
            let args = cx.call_args(i + 1);
            if let Some(&(a, b)) = args.first() {
                if a == b && src.kind(a) == Some(Tk::Ident) {
                    if let Some(ty) = lookup(src.s(a)) {
                        late.push((
                            a,
                            a,
                            format!(
                                "lane mask `{}` of `{w}` is declared 32-bit `{ty}`",
                                src.s(a)
                            ),
                        ));
                    }
                }
            }
        }
    }
    for (a, b, msg) in late {
        cx.report(&META, a, b, msg, help);
    }
    // `1u << lane`: a 32-bit lane bit, undefined for lanes 32-63. A lane id bounded below 32
    // where it is taken (`lane = threadIdx.x & 31`) never reaches bit 32: the hazard is the
    // bound, `warp-size-literal`'s finding, not the shift.
    let mut bounded: std::collections::HashSet<(u32, &str)> = Default::default();
    for k in 1..n.saturating_sub(1) {
        if src.is(k, "=") && src.kind(k - 1) == Some(Tk::Ident) && src.in_device(k) {
            let end = (k + 1..n.min(k + 40)).find(|&j| src.is(j, ";"));
            if let Some(e) = end {
                if (k + 2..e).any(|j| below_32(src, j - 1, j)) {
                    bounded.insert((src.toks[k].func, src.s(k - 1)));
                }
            }
            continue;
        }
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
        let f = src.toks[k].func;
        let lane_bounded = (k + 1..=r)
            .any(|j| src.kind(j) == Some(Tk::Ident) && bounded.contains(&(f, src.s(j))))
            || (k + 2..=r).any(|j| below_32(src, j - 1, j));
        if !lane_bounded && cx.any_ident(k + 1, r, crate::cuda::is_lane_ident) {
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
    // `0xffffffff >> (warpSize - n)`: a 32-bit all-lanes mask shifted by the warp width
    for k in 1..n.saturating_sub(1) {
        if !matches!(src.s(k), ">>" | "<<") || cx.guarded(k) {
            continue;
        }
        let lit = src.s(k - 1).to_ascii_lowercase();
        if !matches!(lit.as_str(), "0xffffffff" | "0xffffffffu") {
            continue;
        }
        let Some(r) = cx.right_operand(k) else {
            continue;
        };
        if cx.any_ident(k + 1, r, |s| {
            s == "warpSize" || cx.index.is_device_warp(s) || crate::cuda::is_portable_warp_size(s)
        }) {
            let msg = format!(
                "`{}` builds a lane mask in 32 bits from the warp width: with 64 lanes the shift passes 31 and lanes 32-63 are lost",
                cx.snippet(k - 1, r)
            );
            cx.report(
                &META,
                k - 1,
                r,
                msg,
                "build the mask in 64 bits (`~0ull >> (64 - n)`, with `n == 64` handled)",
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
