//! `full-mask-literal`: 32-bit full masks (`0xffffffff`) given to `*_sync` warp intrinsics or
//! compared with ballots.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "full-mask-literal",
    summary: "32-bit full lane mask passed to a `*_sync` warp intrinsic or compared with a ballot",
    what: "Finds `0xffffffff` (and macros defined as it) passed as the mask of `__shfl_*_sync`, `__ballot_sync`, \
`__any_sync`, `__all_sync`, `__match_*_sync`, `__reduce_*_sync` and `__syncwarp`, the other 32-bit spellings of a \
mask there (`uint32_t(-1)`, `(unsigned)-1`, `static_cast<unsigned>(...)`, `~0u`, `-1`, `4294967295`), and ballot or `__activemask()` \
results compared with `0xffffffff` to mean \"all lanes\".",
    why: "HIP's `*_sync` intrinsics take a 64-bit mask and reject a 32-bit one at compile time; where a 64-bit \
`0xffffffff` gets through, it names only lanes 0-31 of a 64-lane wavefront. A ballot compared with `0xffffffff` \
is never \"all lanes\" on wave64.",
    example: "v += __shfl_xor_sync(0xffffffff, v, offset);\nif (__activemask() == 0xffffffff) { /* ... */ }",
    use_instead: "v += __shfl_xor_sync(__activemask(), v, offset);  // or a 64-bit all-ones mask from the kplan header\nif (__activemask() == KPLAN_FULL_MASK) { /* ... */ }",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

pub fn is_sync_intrinsic(s: &str) -> bool {
    matches!(
        s,
        "__shfl_sync"
            | "__shfl_up_sync"
            | "__shfl_down_sync"
            | "__shfl_xor_sync"
            | "__ballot_sync"
            | "__any_sync"
            | "__all_sync"
            | "__uni_sync"
            | "__syncwarp"
            | "__match_any_sync"
            | "__match_all_sync"
    ) || (s.starts_with("__reduce_") && s.ends_with("_sync"))
}

pub fn is_ballot_call(s: &str) -> bool {
    matches!(
        s,
        "__ballot_sync"
            | "__ballot"
            | "__activemask"
            | "__lanemask_lt"
            | "__lanemask_le"
            | "__lanemask_gt"
    )
}

fn is_mask32(src: &crate::lex::Src, i: usize) -> bool {
    if src.kind(i) != Some(Tk::Number) {
        return false;
    }
    let t = src.s(i).to_ascii_lowercase();
    t.starts_with("0x") && src.int(i) == Some(0xffff_ffff)
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("0xffffffff")
        || cx.has("0xFFFFFFFF")
        || cx.has("0XFFFFFFFF")
        || cx.has("0xFFFFffff")
        || cx.has("0xffffFFFF")
        || cx.has("_sync"))
    {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // macros defined as 0xffffffff, unguarded
    let mut mask_macros: Vec<&str> = Vec::new();
    for d in &src.defines {
        if !d.function_like && d.body.1 == d.body.0 + 1 && is_mask32(src, d.body.0 as usize) {
            let name = src
                .text
                .get(d.name_start as usize..d.name_end as usize)
                .unwrap_or("");
            if src.branch_platform(d.branch) == Platform::Any {
                mask_macros.push(name);
            }
        }
    }
    let help = "on AMD the mask is 64-bit: pass `__activemask()` or a 64-bit all-ones mask (the kplan header's `KPLAN_FULL_MASK`)";
    let mut reported_macros: Vec<&str> = Vec::new();
    // ballot results stored in variables (for comparisons); variables holding 0xffffffff
    let mut ballot_vars: Vec<&str> = Vec::new();
    let mut mask_vars: Vec<&str> = Vec::new();
    for k in 1..n.saturating_sub(1) {
        if src.is(k, "=")
            && src.kind(k - 1) == Some(Tk::Ident)
            && is_mask32(src, k + 1)
            && matches!(src.s(k + 2), ";" | ",")
            && !cx.nv_only(k)
        {
            mask_vars.push(src.s(k - 1));
        }
        if src.is(k, "=")
            && src.kind(k - 1) == Some(Tk::Ident)
            && src.kind(k + 1) == Some(Tk::Ident)
            && is_ballot_call(src.s(k + 1))
        {
            ballot_vars.push(src.s(k - 1));
        }
    }
    let shadowed: Vec<&str> = src
        .defines
        .iter()
        .filter(|d| d.function_like)
        .filter_map(|d| src.text.get(d.name_start as usize..d.name_end as usize))
        .filter(|n| is_sync_intrinsic(n))
        .collect();
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(i);
        if is_sync_intrinsic(w)
            && src.is(i + 1, "(")
            && !shadowed.contains(&w)
            && src.toks[i].flags & crate::lex::IN_DEFINE == 0
        {
            let args = cx.call_args(i + 1);
            let Some(&(a, b)) = args.first() else {
                continue;
            };
            if cx.nv_only(i) {
                continue;
            }
            if a == b && is_mask32(src, a) {
                let msg = format!("`{w}` gets the 32-bit full mask `{}`", src.s(a));
                cx.report(&META, a, a, msg, help);
            } else if a == b && src.int(a) == Some(0xffff_ffff) && !s_is_u32(src.s(a)) {
                let msg = format!("`{w}` gets `{}`, a 64-bit value whose set bits name only lanes 0-31 of a 64-lane wavefront", src.s(a));
                cx.report(&META, a, a, msg, help);
            } else if let Some(how) = narrow_mask_expr(src, a, b) {
                let text = src
                    .text
                    .get(src.toks[a].start as usize..src.toks[b].end as usize)
                    .unwrap_or("");
                let msg = format!("`{w}` gets `{text}`, {how}: HIP's sync intrinsics take a 64-bit mask and reject a 32-bit one at compile time");
                cx.report(&META, a, b, msg, help);
            } else if a == b && mask_vars.contains(&src.s(a)) {
                let msg = format!(
                    "`{w}` gets `{}`, which holds the 32-bit full mask 0xffffffff",
                    src.s(a)
                );
                cx.report(&META, a, a, msg, help);
            } else if a == b
                && mask_macros.contains(&src.s(a))
                && !reported_macros.contains(&src.s(a))
            {
                reported_macros.push(src.s(a));
                // the definition that is the 32-bit mask (a name may also have a 64-bit one)
                let d = src.defines.iter().find(|d| {
                    src.text.get(d.name_start as usize..d.name_end as usize) == Some(src.s(a))
                        && !d.function_like
                        && d.body.1 == d.body.0 + 1
                        && is_mask32(src, d.body.0 as usize)
                        && src.branch_platform(d.branch) == Platform::Any
                });
                let msg = format!(
                    "`{}` is the 32-bit full mask 0xffffffff and is passed to `{w}`",
                    src.s(a)
                );
                match d {
                    Some(d) => {
                        if let Some((sev, t)) = cx.ctx.scope_severity(&META) {
                            cx.report_span(
                                &META,
                                sev,
                                t,
                                d.name_start as usize,
                                d.name_end as usize,
                                msg,
                                help,
                            );
                        }
                    }
                    None => cx.report(&META, a, a, msg, help),
                }
            }
        } else if (src.is(i + 1, "==") || src.is(i + 1, "!=")) && is_mask32(src, i + 2) {
            let ballot = ballot_vars.contains(&w);
            if ballot && !cx.nv_only(i) {
                let msg = format!("ballot result `{w}` compared with the 32-bit full mask");
                cx.report(&META, i, i + 2, msg, "compare with the mask of active lanes (`__activemask()`) or a 64-bit all-ones mask");
            }
        } else if src.is(i + 1, "(") && is_ballot_call(w) {
            if let Some(c) = src.mate(i + 1) {
                if (src.is(c + 1, "==") || src.is(c + 1, "!="))
                    && is_mask32(src, c + 2)
                    && !cx.nv_only(i)
                {
                    let msg = format!("`{w}` result compared with the 32-bit full mask");
                    cx.report(&META, i, c + 2, msg, "compare with a 64-bit all-ones mask; a wave64 ballot of all lanes is 0xffffffffffffffff");
                }
            }
        }
    }
}

/// 32-bit integer type words: a mask of one of these types is 32 bits wide.
fn type32(w: &str) -> bool {
    matches!(
        w,
        "unsigned" | "int" | "uint32_t" | "int32_t" | "uint" | "u32" | "i32" | "uint32"
    )
}

/// A mask argument spelled as a 32-bit value other than the plain `0xffffffff`: a cast to a
/// 32-bit type (`uint32_t(-1)`, `(unsigned)-1`, `static_cast<unsigned>(~0)`), `~0u`, `~0`,
/// `-1` (an `int`), or `4294967295`. Returns how it is 32 bits.
fn narrow_mask_expr(src: &crate::lex::Src, a: usize, b: usize) -> Option<&'static str> {
    let s = |i: usize| src.s(i);
    // `4294967295u` is an `unsigned int`; a plain or `l`-suffixed `4294967295` is a `long`,
    // which HIP accepts but which names only lanes 0-31 (left to the message below)
    if a == b && src.int(a) == Some(0xffff_ffff) {
        let t = s(a).to_ascii_lowercase();
        if t.contains('u') && !t.contains('l') {
            return Some("the 32-bit full mask");
        }
        return None;
    }
    // `~0`, `~0u`, `~0U`: an `int` or `unsigned int` all-ones
    if b == a + 1 && s(a) == "~" && src.int(b) == Some(0) {
        let t = s(b).to_ascii_lowercase();
        if !t.contains('l') {
            return Some("a 32-bit all-ones value");
        }
    }
    // `-1`: an `int` (`-1u` an `unsigned int`; `-1l`, `-1ll`, `-1ull` are 64-bit and fine)
    if b == a + 1 && s(a) == "-" && src.int(b) == Some(1) {
        let t = s(b).to_ascii_lowercase();
        if !t.contains('l') {
            return Some(if t.contains('u') {
                "a 32-bit all-ones value"
            } else {
                "an `int`"
            });
        }
    }
    // `uint32_t(...)`, `unsigned(...)`, `std::uint32_t(...)`
    let mut k = a;
    if s(k) == "std" && s(k + 1) == "::" {
        k += 2;
    }
    if type32(s(k)) && s(k + 1) == "(" && src.mate(k + 1) == Some(b) && !long_before(src, k) {
        return Some("a 32-bit cast");
    }
    // `(unsigned)x`, `(unsigned int)x`, `(uint32_t)x`
    if s(a) == "(" {
        if let Some(c) = src.mate(a) {
            if c < b
                && c > a + 1
                && (a + 1..c).all(|i| type32(s(i)) || s(i) == "std" || s(i) == "::")
            {
                return Some("a 32-bit cast");
            }
        }
    }
    // `static_cast<unsigned>(...)`
    if s(a) == "static_cast" && s(a + 1) == "<" {
        let mut i = a + 2;
        let mut all32 = true;
        while i < b && s(i) != ">" {
            all32 &= type32(s(i)) || s(i) == "std" || s(i) == "::" || s(i) == "const";
            i += 1;
        }
        if all32 && i > a + 2 && s(i) == ">" {
            return Some("a 32-bit cast");
        }
    }
    None
}

/// `unsigned` / `int` preceded by `long` is a 64-bit type.
fn long_before(src: &crate::lex::Src, k: usize) -> bool {
    k > 0 && src.s(k - 1) == "long"
}

/// `4294967295u` (an `unsigned int`), not a plain or `l`-suffixed decimal (a `long`).
fn s_is_u32(t: &str) -> bool {
    let t = t.to_ascii_lowercase();
    t.contains('u') && !t.contains('l')
}
