//! `warp-count-divisor`: the number of warps in a block, `block / warp_size`, used as a
//! divisor: zero for a block smaller than a 64-lane wavefront.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "warp-count-divisor",
    summary: "`block_size / warp_size` used as a divisor: zero for blocks smaller than a wavefront",
    what: "Finds an integer quotient of a block size (`block_size`, `blockDim.x`, `num_threads`, ...) by a warp \
width (`warpSize`, `WarpSize`, `WARP_SIZE`, `warp_size()`, ...) that is itself the divisor of another \
division or modulo, directly, as a factor of one (`regs / (per_wave * (block_size / WarpSize))`) or through one local variable \
(`int warps = blockDim.x / warpSize; ... n / warps`). A comparison of the same block size with the same warp \
width earlier in the function (`if (block_size < warp_size) return 0;`, `assert(block_size >= warp_size)`) is \
a guard and keeps the rule silent.",
    why: "The quotient rounds down. A block of 32 threads, a full warp on NVIDIA and RDNA, is 0 wavefronts on \
wave64 AMD hardware (CDNA, GCN), so the outer division divides by zero: a crash in host code, an undefined \
result in device code. Occupancy and work-split helpers meet such blocks whenever a caller picks a small one.",
    example: "int blocks_per_cu(int regs, int per_wave, int block_size, int warp_size) {\n    return regs / (per_wave * (block_size / warp_size));\n}",
    use_instead: "int blocks_per_cu(int regs, int per_wave, int block_size, int warp_size) {\n    int waves = (block_size + warp_size - 1) / warp_size;  // at least 1\n    return regs / (per_wave * waves);\n}",
    severity: Severity::Warning,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// A name that reads as the number of threads in a block.
fn block_size_name(s: &str) -> bool {
    if s == "blockDim" {
        return true;
    }
    let l = s.to_ascii_lowercase();
    (l.contains("block") && (l.contains("size") || l.contains("dim") || l.contains("threads")))
        || matches!(
            l.as_str(),
            "num_threads"
                | "nthreads"
                | "n_threads"
                | "threads"
                | "block_threads"
                | "threads_per_block"
        )
}

/// A name that reads as the warp width.
fn warp_width_name(s: &str) -> bool {
    let l = s
        .to_ascii_lowercase()
        .replace("wavefront", "warp")
        .replace("wave", "warp");
    l.contains("warp")
        && (l.contains("size") || l.contains("width") || l.contains("lanes"))
        && !l.contains("per")
        && !l.contains("max")
        && !l.contains("log")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("arp") || cx.has("ave") || cx.has("ARP") || cx.has("AVE")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for k in 1..n {
        if !src.is(k, "/") || src.kind(k) != Some(Tk::Punct) {
            continue;
        }
        let Some(l) = cx.left_operand(k) else {
            continue;
        };
        let Some(r) = cx.right_operand(k) else {
            continue;
        };
        // the divisor's last identifier: `HIPTraits::WarpSize`, `warp_size()`, `warpSize`
        let Some(w) = (k + 1..=r).rev().find(|&j| src.kind(j) == Some(Tk::Ident)) else {
            continue;
        };
        if !warp_width_name(src.s(w)) {
            continue;
        }
        let Some(b) = (l..k).rev().find(|&j| src.kind(j) == Some(Tk::Ident)) else {
            continue;
        };
        if !block_size_name(src.s(b)) && !src.is(l, "blockDim") {
            continue;
        }
        // a logical sub-warp (`subwarp_size`) is chosen to fit the block
        if src.s(w).to_ascii_lowercase().contains("sub") {
            continue;
        }
        // a compile-time block size: reported only when its value is known to be small
        if !src.is(l, "blockDim") && compile_time(cx, src.s(b)) {
            match cx.index.const_value(src.s(b)) {
                Some(v) if v < u64::from(cx.ctx.max_warp_size()) => {}
                _ => continue,
            }
        }
        // a block size that is a constant of the function (`constexpr int threads = 128;`)
        if !src.is(l, "blockDim") {
            match local_const(cx, src.s(b), l) {
                Some(Some(v)) if v < u64::from(cx.ctx.max_warp_size()) => {}
                Some(_) => continue,
                None => {}
            }
        }
        // a ceil-div `(block + w - 1) / w` never gives 0
        if src.is(l.saturating_sub(1), "+") || src.is(k - 1, ")") {
            continue;
        }
        // a dominating check that the block holds a whole wavefront (`if (block < w) return`,
        // `assert(block >= w)`) before the quotient
        let block = if src.is(l, "blockDim") {
            "blockDim"
        } else {
            src.s(b)
        };
        if checked_before(cx, l, block, src.s(w)) {
            continue;
        }
        // `nw = block / w;` then `x / nw`: the quotient reaches the divisor through a local
        if let Some(name) = assigned_local(cx, l, r) {
            if let Some(u) = divided_by_local(cx, r, name) {
                let msg = format!(
                    "`{name}` = `{}` is 0 for a block smaller than a wavefront (64 lanes on wave64 AMD targets) and is used as a divisor",
                    cx.snippet(l, r)
                );
                cx.report(&META, u, u, msg, "round up (`(block + w - 1) / w`) or check `block >= w` before dividing by the warp count");
            }
            continue;
        }
        // climb out through groups that are pure products, to a `/` or `%` before one
        let (mut a, mut e) = (l, r);
        let mut divisor = false;
        for _ in 0..6 {
            if a == 0 || !src.is(a - 1, "(") || src.mate(a - 1) != Some(e + 1) {
                // inside a product `x * (b / w)`: extend to the enclosing group
                let Some(open) = enclosing_open(cx, a, e) else {
                    break;
                };
                let close = src.mate(open).unwrap_or(open);
                if !pure_product(cx, open + 1, close - 1) {
                    break;
                }
                a = open + 1;
                e = close - 1;
                continue;
            }
            let open = a - 1;
            if open > 0
                && matches!(src.s(open - 1), "/" | "%")
                && src.kind(open - 1) == Some(Tk::Punct)
            {
                divisor = true;
                break;
            }
            // `f(b / w)` is a call argument, not a group
            if open > 0 && src.kind(open - 1) == Some(Tk::Ident) {
                break;
            }
            a = open;
            e += 1;
        }
        if !divisor {
            continue;
        }
        let msg = format!(
            "`{}` is 0 for a block smaller than a wavefront (64 lanes on wave64 AMD targets) and is used as a divisor",
            cx.snippet(l, r)
        );
        cx.report(&META, l, r, msg, "round up (`(block + w - 1) / w`) or check `block >= w` before dividing by the warp count");
    }
}

/// `name` is a compile-time constant: named like one (`kBlockSize`, `BLOCK_SIZE`), a
/// non-type template parameter of this file (`template <int block_size>`), or an integer
/// constant the project defines.
fn compile_time(cx: &Cx, name: &str) -> bool {
    let b = name.as_bytes();
    let k_camel = b.len() > 1 && b[0] == b'k' && b[1].is_ascii_uppercase();
    let all_caps = name.chars().any(|c| c.is_ascii_uppercase())
        && !name.chars().any(|c| c.is_ascii_lowercase());
    if k_camel || all_caps || cx.index.const_value(name).is_some() {
        return true;
    }
    let src = cx.src;
    (1..src.toks.len()).any(|i| {
        src.is(i, name)
            && matches!(src.s(i + 1), "," | ">" | "=")
            && src.kind(i - 1) == Some(Tk::Ident)
            && {
                // back to `template <` before any `(`, `;`, `{`
                let mut j = i;
                let mut steps = 0;
                let mut hit = false;
                while j > 1 && steps < 24 {
                    j -= 1;
                    steps += 1;
                    if matches!(src.s(j), "(" | ")" | ";" | "{" | "}") {
                        break;
                    }
                    if src.is(j, "<") && src.is(j - 1, "template") {
                        hit = true;
                        break;
                    }
                }
                hit
            }
    })
}

/// The `(` of the innermost parenthesis group strictly around `a..=e`.
fn enclosing_open(cx: &Cx, a: usize, e: usize) -> Option<usize> {
    let src = cx.src;
    let mut j = a;
    let mut steps = 0;
    while j > 0 && steps < 256 {
        j -= 1;
        steps += 1;
        match src.s(j) {
            "(" if src.mate(j).is_some_and(|m| m > e) => return Some(j),
            ")" | "]" => j = src.mate(j)?,
            ";" | "{" | "}" => return None,
            _ => {}
        }
    }
    None
}

/// Tokens `a..=e` are a product of operands (no top-level `+ - , ? : < >` or comparison).
fn pure_product(cx: &Cx, a: usize, e: usize) -> bool {
    let src = cx.src;
    let mut j = a;
    while j <= e {
        let t = src.s(j);
        if matches!(t, "(" | "[") {
            match src.mate(j) {
                Some(m) => {
                    j = m + 1;
                    continue;
                }
                None => return false,
            }
        }
        if src.kind(j) == Some(Tk::Punct) && !matches!(t, "*" | "/" | "." | "->" | "::" | ")" | "]")
        {
            return false;
        }
        j += 1;
    }
    true
}

/// How far back a guard or a local's definition is looked for (tokens).
const REACH: usize = 3000;

/// First token of the function-like region around `k`: the previous top-level `}` (or the
/// start of the file), at most [`REACH`] tokens back.
fn region_start(cx: &Cx, k: usize) -> usize {
    let src = cx.src;
    let lo = k.saturating_sub(REACH);
    (lo..k)
        .rev()
        .find(|&j| src.is(j, "}") && src.toks[j].depth <= 1)
        .map_or(lo, |j| j + 1)
}

/// Whether a comparison of `block` with `warp` (`block < warp`, `warp <= block`, `block % warp`)
/// precedes token `k` in its function: a guard or an assertion that the block holds a wavefront.
fn checked_before(cx: &Cx, k: usize, block: &str, warp: &str) -> bool {
    let src = cx.src;
    let start = region_start(cx, k);
    let cmp = |j: usize| matches!(src.s(j), "<" | "<=" | ">" | ">=" | "%");
    // the operand names around a comparison, skipping member and call tails
    // an operand's name: `blockDim` for `blockDim.x`, else its last identifier
    let name_of = |l: usize, r: usize| -> Option<&str> {
        if src.is(l, "blockDim") {
            return Some("blockDim");
        }
        (l..=r)
            .rev()
            .find(|&t| src.kind(t) == Some(Tk::Ident))
            .map(|t| src.s(t))
    };
    let name_before = |j: usize| -> Option<&str> { name_of(cx.left_operand(j)?, j - 1) };
    let name_after = |j: usize| -> Option<&str> { name_of(j + 1, cx.right_operand(j)?) };
    (start..k).any(|j| {
        if !cmp(j) || src.kind(j) != Some(Tk::Punct) {
            return false;
        }
        let (Some(x), Some(y)) = (name_before(j), name_after(j)) else {
            return false;
        };
        (x == block && y == warp) || (x == warp && y == block)
    })
}

/// `name = <l..=r>;` (a declaration or an assignment whose whole right side is the quotient).
fn assigned_local<'a>(cx: &Cx<'_, 'a, '_>, l: usize, r: usize) -> Option<&'a str> {
    let src = cx.src;
    if l < 2 || !src.is(l - 1, "=") || !src.is(r + 1, ";") || src.kind(l - 2) != Some(Tk::Ident) {
        return None;
    }
    Some(src.s(l - 2))
}

/// The first later `x / name` or `x % name` in the same function (a division by the local).
fn divided_by_local(cx: &Cx, from: usize, name: &str) -> Option<usize> {
    let src = cx.src;
    // the local lives until the end of the innermost block around its definition
    let lo = from.saturating_sub(REACH);
    let scope_end = (lo..from)
        .rev()
        .find(|&j| src.is(j, "{") && src.mate(j).is_some_and(|m| m > from))
        .and_then(|j| src.mate(j))
        .unwrap_or(src.toks.len());
    let end = scope_end.min(from + REACH);
    let mut j = from + 1;
    while j + 1 < end {
        // reassigned: its value is no longer the quotient
        if src.is(j, name) && src.is(j + 1, "=") {
            return None;
        }
        if matches!(src.s(j), "/" | "%" | "/=" | "%=")
            && src.kind(j) == Some(Tk::Punct)
            && src.is(j + 1, name)
            && !matches!(src.s(j + 2), "(" | "[" | "." | "->" | "::")
        {
            return Some(j + 1);
        }
        j += 1;
    }
    None
}

/// The nearest `const`/`constexpr` definition of `name` before token `at` in its function:
/// `Some(value)` (`None` inside when the value is not a literal), `None` when there is none.
fn local_const(cx: &Cx, name: &str, at: usize) -> Option<Option<u64>> {
    let src = cx.src;
    let start = region_start(cx, at);
    let j = (start..at).rev().find(|&j| {
        src.is(j, name)
            && src.is(j + 1, "=")
            && (j.saturating_sub(4)..j).any(|k| matches!(src.s(k), "constexpr" | "const"))
    })?;
    let e = (j + 2..at).find(|&k| src.is(k, ";"))?;
    Some(if e == j + 3 { src.int(j + 2) } else { None })
}
