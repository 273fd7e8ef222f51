//! Run-time tests of the warp width that choose a path, shared by the rules that ask "does this
//! line run on a 64-lane wavefront?": `if (warpSize == 32) { ... } else { ... }`,
//! `if constexpr (warpSize <= 32)`, `warpSize == 32 ? a : b`, and an early exit
//! (`if (warpSize == 32) return f32(); return f64();`). A preprocessor test is the structure
//! pass's business ([`crate::lex::Branch::wave`]); this is the same fact for C++ control flow.
//!
//! One pass over the file's tokens, run once per file and only when the file names the warp
//! width; every query afterwards is a lookup.

use crate::cuda::Cx;
use crate::lex::{Src, Tk};

/// A run-time width test and the paths it chooses.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    /// The comparison's operator token (`==`, `<=`, ...).
    pub op: usize,
    /// Width the first path runs with (32 or 64).
    pub wave: u8,
    /// Tokens of the path taken when the test holds (inclusive).
    pub then: (usize, usize),
    /// Tokens of the other path (`else`, the rest of the block after an early exit, the
    /// `:` operand), when there is one.
    pub other: Option<(usize, usize)>,
    /// The 64-lane path only rejects the width (`return false;`, `throw`, `abort()`, an
    /// assertion): the test is a requirement, not a choice.
    pub wide_rejects: bool,
}

/// Every width test of the file, and the width each token runs with under them.
#[derive(Debug, Default)]
pub struct WaveGuards {
    pub guards: Vec<Guard>,
    /// Per token: 32 or 64 under the innermost guard path around it, 0 elsewhere (empty when
    /// the file has no guard).
    wave: Vec<u8>,
}

impl WaveGuards {
    /// Width fixed for token `i` by the run-time tests around it (0: not fixed).
    pub fn wave_at(&self, i: usize) -> u8 {
        self.wave.get(i).copied().unwrap_or(0)
    }
    /// The guard whose comparison operator is token `op`.
    pub fn guard_at(&self, op: usize) -> Option<&Guard> {
        self.guards.iter().find(|g| g.op == op)
    }
}

/// Whether `s` (with the token before it) names the warp width at run time.
fn width_name(cx: &Cx, src: &Src, i: usize) -> bool {
    let s = src.s(i);
    s == "warpSize"
        || s == "__AMDGCN_WAVEFRONT_SIZE"
        || s == "__AMDGCN_WAVEFRONT_SIZE__"
        || cx.index.is_device_warp(s)
        || (s.eq_ignore_ascii_case("warpsize") || s == "warp_size")
            && i > 0
            && matches!(src.s(i - 1), "." | "->")
}

/// Width the test `lhs op rhs` picks when it holds, with `w` on the left (`flip`: on the right).
fn picks(op: &str, n: u64, flip: bool) -> Option<u8> {
    let op = if flip {
        match op {
            "<" => ">",
            ">" => "<",
            "<=" => ">=",
            ">=" => "<=",
            o => o,
        }
    } else {
        op
    };
    match (op, n) {
        ("==", 32) | ("!=", 64) | ("<=", 32) | ("<", 64) => Some(32),
        ("==", 64) | ("!=", 32) | (">", 32) | (">=", 64) => Some(64),
        _ => None,
    }
}

/// The comparison inside `(a..=b)` that names the width, when the whole condition is that
/// comparison (`whole`) or a conjunction containing it: (operator, width when it holds).
fn condition(cx: &Cx, a: usize, b: usize, aliases: &Aliases) -> Option<(usize, u8, bool)> {
    let src = cx.src;
    // a boolean that holds a width test (`const bool w64 = warpSize == 64; if (w64)`)
    if b == a {
        if let Some(&(op, w)) = aliases.get(src.s(a)) {
            return Some((op, w, true));
        }
    }
    if b == a + 1 && src.is(a, "!") {
        if let Some(&(op, w)) = aliases.get(src.s(b)) {
            return Some((op, if w == 32 { 64 } else { 32 }, true));
        }
    }
    if b < a + 2 || b > a + 64 {
        return None;
    }
    let mut depth = 0i32;
    let mut has_and = false;
    let mut has_or = false;
    let mut found: Option<(usize, u8)> = None;
    for k in a..=b {
        match src.s(k) {
            "(" => depth += 1,
            ")" => depth -= 1,
            "&&" => has_and = true,
            "||" | "?" | "!" => has_or = true,
            "==" | "!=" | "<" | ">" | "<=" | ">=" if found.is_none() && k > a && k < b => {
                let (l, r) = (k - 1, k + 1);
                // `static_cast<int>(warpSize) == 32`: the name sits inside the cast's parens
                let l_name = if src.is(l, ")") {
                    src.mate(l)
                        .is_some_and(|o| o + 2 == l && width_name(cx, src, l - 1))
                } else {
                    width_name(cx, src, l)
                };
                let pick = if l_name {
                    src.int(r).and_then(|n| picks(src.s(k), n, false))
                } else if width_name(cx, src, r) && !matches!(src.s(r + 1), "(" | "[") {
                    src.int(l).and_then(|n| picks(src.s(k), n, true))
                } else {
                    None
                };
                if let Some(w) = pick {
                    // an arithmetic neighbour (`warpSize == 32 * n`) is not a width test
                    if !matches!(src.s(r + 1), "*" | "+" | "-" | "/" | "<<" | ">>" | "%")
                        && !matches!(src.s(l.saturating_sub(1)), "*" | "+" | "-" | "/" | "%")
                    {
                        found = Some((k, w));
                    }
                }
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    if has_or {
        return None;
    }
    found.map(|(k, w)| (k, w, !has_and))
}

/// Booleans initialised with a whole width test: name -> (the test's operator, width when true).
type Aliases<'a> = std::collections::HashMap<&'a str, (usize, u8)>;

/// `bool w64 = warpSize == 64;` (`const`, `constexpr`, `auto` too): one pass.
fn aliases<'a>(cx: &Cx<'_, 'a, '_>) -> Aliases<'a> {
    let src = cx.src;
    let n = src.toks.len();
    let mut out = Aliases::new();
    let none = Aliases::new();
    for k in 2..n {
        if !src.is(k, "=") || src.kind(k - 1) != Some(Tk::Ident) {
            continue;
        }
        if !matches!(src.s(k - 2), "bool" | "auto") {
            continue;
        }
        let Some(semi) = (k + 1..n.min(k + 40)).find(|&j| src.is(j, ";")) else {
            continue;
        };
        if semi < k + 2 {
            continue;
        }
        if let Some((op, w, true)) = condition(cx, k + 1, semi - 1, &none) {
            out.insert(src.s(k - 1), (op, w));
        }
    }
    out
}

/// Last token of the statement starting at `i` (a block, an `if` with its `else`, a loop, or
/// an expression statement up to its `;`). `budget` bounds the work on broken input.
fn stmt_end(src: &Src, i: usize, budget: &mut u32) -> Option<usize> {
    let n = src.toks.len();
    if i >= n || *budget == 0 {
        return None;
    }
    *budget -= 1;
    match src.s(i) {
        "{" => src.mate(i),
        "if" => {
            let mut c = i + 1;
            if src.is(c, "constexpr") {
                c += 1;
            }
            let close = src.mate(c).filter(|_| src.is(c, "("))?;
            let end = stmt_end(src, close + 1, budget)?;
            if src.is(end + 1, "else") {
                stmt_end(src, end + 2, budget)
            } else {
                Some(end)
            }
        }
        "for" | "while" | "switch" if src.is(i + 1, "(") => {
            let close = src.mate(i + 1)?;
            if src.s(i) == "while" && src.is(close + 1, ";") {
                return Some(close + 1);
            }
            stmt_end(src, close + 1, budget)
        }
        "do" => {
            let body = stmt_end(src, i + 1, budget)?;
            // `while ( ... ) ;`
            let w = body + 1;
            let close = src.mate(w + 1).filter(|_| src.is(w, "while"))?;
            Some(if src.is(close + 1, ";") {
                close + 1
            } else {
                close
            })
        }
        _ => {
            let mut k = i;
            let mut steps = 0;
            while k < n && steps < 100_000 {
                steps += 1;
                match src.s(k) {
                    ";" => return Some(k),
                    "(" | "[" | "{" => k = src.mate(k)?,
                    "}" | ")" | "]" => return None,
                    _ => {}
                }
                k += 1;
            }
            None
        }
    }
}

/// Whether the statement range ends every path through it (`return`, `break`, `continue`,
/// `throw`, a trap).
fn exits(src: &Src, a: usize, b: usize) -> bool {
    let last_stmt = if src.is(b, "}") {
        // the last statement of the block: the token after the previous `;` / `}` / `{`
        let mut k = b;
        let mut start = a + 1;
        while k > a + 1 {
            k -= 1;
            if matches!(src.s(k - 1), ";" | "{" | "}") && k < b {
                start = k;
                break;
            }
        }
        start
    } else {
        a
    };
    matches!(
        src.s(last_stmt),
        "return" | "break" | "continue" | "throw" | "goto" | "__trap" | "abort" | "exit"
    )
}

/// Whether the path `a..=b` only rejects the width: it returns nothing or a failure value,
/// throws, traps, aborts, or asserts.
fn rejects(src: &Src, a: usize, b: usize) -> bool {
    let mut k = a;
    if src.is(k, "{") {
        k += 1;
    }
    let stmt_is_last = (k..=b.min(k + 40))
        .find(|&j| src.is(j, ";"))
        .is_some_and(|semi| semi + 1 >= b);
    let w = src.s(k);
    let l = w.to_ascii_lowercase();
    if matches!(w, "throw" | "__trap" | "abort" | "exit" | "assert")
        || l.contains("error")
        || l.contains("fail")
        || l.contains("unsupported")
        || l.contains("check")
        || l.contains("assert")
        || l.contains("throw")
    {
        return true;
    }
    if w == "return" && stmt_is_last {
        let v = src.s(k + 1);
        let lv = v.to_ascii_lowercase();
        return matches!(v, ";" | "false" | "nullptr" | "NULL" | "-" | "0" | "{")
            || lv.contains("error")
            || lv.contains("invalid")
            || lv.contains("unsupported")
            || lv.contains("fail");
    }
    false
}

/// Last token of the block that encloses token `i` (the `}` at `i`'s brace depth).
fn block_end(src: &Src, i: usize) -> Option<usize> {
    let d = src.toks.get(i)?.depth;
    if d == 0 {
        return None;
    }
    let mut k = i;
    let n = src.toks.len();
    while k < n {
        match src.s(k) {
            "{" | "(" | "[" => k = src.mate(k)?,
            "}" => return (src.toks[k].depth == d).then_some(k),
            _ => {}
        }
        k += 1;
    }
    None
}

/// End of the conditional expression operand starting at `i`: the token before the `,`, `;`,
/// `)` or `]` that ends it at its own nesting level.
fn operand_end(src: &Src, i: usize) -> Option<usize> {
    let n = src.toks.len();
    let mut k = i;
    let mut q = 0;
    while k < n {
        match src.s(k) {
            "(" | "[" | "{" => k = src.mate(k)?,
            "?" => q += 1,
            ":" if q > 0 => q -= 1,
            ":" | "," | ";" | ")" | "]" | "}" => return k.checked_sub(1).filter(|&e| e >= i),
            _ => {}
        }
        k += 1;
    }
    None
}

/// Finds every run-time width test of the file.
pub fn scan(cx: &Cx) -> WaveGuards {
    let src = cx.src;
    let n = src.toks.len();
    let mut out = WaveGuards::default();
    if !(cx.has("warpSize")
        || cx.has("WAVEFRONT_SIZE")
        || cx.has("arp_size")
        || !cx.index.device_warp.is_empty())
    {
        return out;
    }
    let mut budget = 200_000u32;
    let names = aliases(cx);
    for i in 0..n {
        // `if ( cond )` / `if constexpr ( cond )`
        if src.is(i, "if") && src.kind(i) == Some(Tk::Ident) {
            let c = if src.is(i + 1, "constexpr") {
                i + 2
            } else {
                i + 1
            };
            if !src.is(c, "(") {
                continue;
            }
            let Some(close) = src.mate(c) else { continue };
            let Some((op, wave, whole)) = condition(cx, c + 1, close - 1, &names) else {
                continue;
            };
            let Some(then_end) = stmt_end(src, close + 1, &mut budget) else {
                continue;
            };
            let then = (close + 1, then_end);
            let mut other = None;
            if whole {
                if src.is(then_end + 1, "else") {
                    if let Some(e) = stmt_end(src, then_end + 2, &mut budget) {
                        other = Some((then_end + 2, e));
                    }
                } else if exits(src, then.0, then.1) {
                    if let Some(e) = block_end(src, then_end + 1) {
                        if e > then_end + 1 {
                            other = Some((then_end + 1, e - 1));
                        }
                    }
                }
            }
            let wide = if wave == 64 { Some(then) } else { other };
            let wide_rejects = wide.is_some_and(|(a, b)| rejects(src, a, b));
            out.guards.push(Guard {
                op,
                wave,
                then,
                other,
                wide_rejects,
            });
        } else if src.is(i, "?") && i >= 3 {
            // `warpSize == 32 ? a : b`, `(warpSize == 32) ? a : b`
            let mut r = i - 1;
            if src.is(r, ")") {
                r -= 1;
            }
            let l = r.saturating_sub(2);
            if l + 2 != r {
                continue;
            }
            let Some((op, wave, _)) = condition(cx, l, r, &names) else {
                continue;
            };
            let Some(a_end) = operand_end(src, i + 1) else {
                continue;
            };
            if !src.is(a_end + 1, ":") {
                continue;
            }
            let other = operand_end(src, a_end + 2).map(|e| (a_end + 2, e));
            out.guards.push(Guard {
                op,
                wave,
                then: (i + 1, a_end),
                other,
                wide_rejects: false,
            });
        }
    }
    if out.guards.is_empty() {
        return out;
    }
    // per-token widths: a sweep over the (properly nested) path ranges
    let mut ranges: Vec<(usize, usize, u8)> = Vec::new();
    for g in &out.guards {
        ranges.push((g.then.0, g.then.1, g.wave));
        if let Some((a, b)) = g.other {
            ranges.push((a, b, if g.wave == 32 { 64 } else { 32 }));
        }
    }
    ranges.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
    let mut wave = vec![0u8; n];
    let mut stack: Vec<(usize, u8)> = Vec::new();
    let mut next = 0;
    for (i, w) in wave.iter_mut().enumerate() {
        while stack.last().is_some_and(|&(end, _)| end < i) {
            stack.pop();
        }
        while next < ranges.len() && ranges[next].0 == i {
            stack.push((ranges[next].1, ranges[next].2));
            next += 1;
        }
        while next < ranges.len() && ranges[next].0 < i {
            next += 1;
        }
        *w = stack.last().map_or(0, |&(_, v)| v);
    }
    out.wave = wave;
    out
}
