//! `triton-num-warps-wave64`: `num_warps` above 16, which is more than 1024 threads on wave64.

use crate::diag::Severity;
use crate::python::lex::{Kind, PySrc};
use crate::python::{is_num_warps_name, Cx};
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-num-warps-wave64",
    summary: "`num_warps` above 16: more than 1024 threads per block on a wave64 AMD GPU",
    what: "Finds `num_warps` values above 16 in `triton.Config(...)`, kernel launches (`kernel[grid](..., num_warps=32)`), \
assignments and dicts (`num_warps = 32`, `{\"num_warps\": 32}`), and the lists a config generator iterates \
(`for w in [4, 8, 16, 32]`).",
    why: "Triton's `num_warps` counts hardware warps. On AMD CDNA (gfx90a, gfx942, gfx950) a warp is a 64-lane \
wavefront, so `num_warps=32` asks for 2048 threads per block; the hardware limit is 1024. The kernel compiles, but the \
launch fails (or the autotuner silently drops the config) on AMD, while the same config is a legal 1024-thread block \
on NVIDIA.",
    example: "triton.Config({\"BLOCK\": 4096}, num_warps=32)",
    use_instead: "def max_warps():\n    return 1024 // triton.runtime.driver.active.get_current_target().warp_size\n\ntriton.Config({\"BLOCK\": 4096}, num_warps=min(32, max_warps()))",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Python,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let mut values: Vec<(usize, usize)> = Vec::new();
    for i in 0..src.toks.len() {
        let t = src.s(i);
        if src.kind(i) == Some(Kind::Op) && t == "(" {
            for (name, vs, ve) in src.kwargs(i) {
                if is_num_warps_name(src.s(name)) {
                    values.push((vs, ve));
                    // `num_warps=w ... for w in [4, 8, 16, 32]`
                    if vs == ve && src.kind(vs) == Some(Kind::Name) {
                        if let Some(r) = comprehension_source(src, vs) {
                            values.push(r);
                        }
                    }
                }
            }
        } else if src.kind(i) == Some(Kind::Name)
            && is_num_warps_name(t)
            && src.s(i + 1) == "="
            && src.s(i.wrapping_sub(1)) != "."
        {
            if let Some(line) = src.line_of(i) {
                if line.first == i {
                    values.push((i + 2, line.end.saturating_sub(1)));
                }
            }
        } else if src.kind(i) == Some(Kind::Str)
            && is_num_warps_name(t.trim_matches(['"', '\'']))
            && src.s(i + 1) == ":"
        {
            let d = src.toks[i].depth;
            let mut e = i + 2;
            // the value ends at the entry's `,` or at the dict's closing bracket (one level out)
            while e + 1 < src.toks.len()
                && src.toks[e + 1].depth >= d
                && !(src.toks[e + 1].depth == d && matches!(src.s(e + 1), "," | "}"))
            {
                e += 1;
            }
            values.push((i + 2, e));
        }
    }
    let pruners = pruners(src);
    for (a, b) in values {
        if b < a || cx.guarded(a) || capped(src, a, b) || pruned(src, &pruners, a) {
            continue;
        }
        for k in a..=b {
            let Some(v) = src.int(k) else { continue };
            if v <= 16 || !is_value_position(src, k) {
                continue;
            }
            let lanes = cx.ctx.max_warp_size().max(64);
            let msg = format!("`num_warps={v}` is {v} x {lanes} = {} threads per block on wave64 targets, above the 1024-thread limit", v * lanes as i64);
            cx.report(&META, k, k, msg, "use at most 16 warps on AMD: choose num_warps per backend (1024 / warp_size), or drop the config there");
        }
    }
}

/// `min(..., limit)` caps the value: the code already bounds it. A literal bound above 16
/// (`min(next_power_of_2(n // 256), 32)`) does not, unless another argument is itself a bound
/// (`min(32, max_warps())`).
fn capped(src: &PySrc, a: usize, b: usize) -> bool {
    (a..=b).any(|k| {
        if !(src.is_name(k, "min") && src.s(k + 1) == "(") {
            return false;
        }
        let args = src.args(k + 1);
        if args.len() < 2 {
            return false;
        }
        let high_literal = args
            .iter()
            .any(|&(s, e)| s == e && src.int(s).is_some_and(|v| v > 16));
        let names_bound = args.iter().any(|&(s, e)| {
            (s..=e).any(|i| {
                src.kind(i) == Some(Kind::Name) && {
                    let l = src.s(i).to_ascii_lowercase();
                    l.contains("warp") || l.contains("max") || l.contains("limit")
                }
            })
        });
        !high_literal || names_bound
    })
}

/// A literal that is the value itself, not a threshold in a comparison or an operand.
fn is_value_position(src: &PySrc, k: usize) -> bool {
    let prev = src.s(k.wrapping_sub(1));
    let next = src.s(k + 1);
    let ok_prev = matches!(
        prev,
        "=" | "," | "[" | "(" | "{" | ":" | "else" | "return" | "or" | "and"
    );
    let ok_next = matches!(next, "," | "]" | ")" | "}" | "if" | "else" | "")
        || src.toks.get(k + 1).is_none()
        || src.line_of(k).is_some_and(|l| l.end == k + 1);
    ok_prev && ok_next
}

/// Functions that filter configs by their warp count: a body comparing `.num_warps` (or
/// `["num_warps"]`) with a bound, as in `[c for c in configs if c.num_warps <= max_warps]`.
fn pruners<'a>(src: &PySrc<'a>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for d in &src.defs {
        let reads_warps = (d.body.0..d.body.1.min(src.toks.len())).any(|k| {
            let warps = (src.s(k.wrapping_sub(1)) == "." && is_num_warps_name(src.s(k)))
                || (src.kind(k) == Some(Kind::Str)
                    && is_num_warps_name(src.s(k).trim_matches(['"', '\''])));
            warps
                && src.line_of(k).is_some_and(|l| {
                    (l.first..l.end).any(|i| matches!(src.s(i), "<" | "<=" | ">" | ">="))
                })
        });
        if reads_warps {
            out.push(src.s(d.name));
        }
    }
    out
}

/// The value lies in a config list that goes through a warp-count filter: `configs = [...]`
/// later passed to a pruner (`prune(configs)`), or an autotune whose `prune_configs_by` names one.
fn pruned(src: &PySrc, pruners: &[&str], a: usize) -> bool {
    if pruners.is_empty() {
        return false;
    }
    let Some(line) = src.line_of(a) else {
        return false;
    };
    // `@triton.autotune(configs=[...], prune_configs_by={"early_config_prune": prune})`
    let in_decorator = src.s(line.first) == "@";
    if in_decorator {
        return (line.first..line.end).any(|k| src.is_name(k, "prune_configs_by"))
            && (line.first..line.end)
                .any(|k| src.kind(k) == Some(Kind::Name) && pruners.contains(&src.s(k)));
    }
    // `NAME = [...]` (or `NAME: list = [...]`), then `pruner(NAME)` anywhere in the file
    if src.kind(line.first) != Some(Kind::Name) || !matches!(src.s(line.first + 1), "=" | ":") {
        return false;
    }
    let name = src.s(line.first);
    (0..src.toks.len()).any(|k| {
        src.kind(k) == Some(Kind::Name)
            && pruners.contains(&src.s(k))
            && src.s(k + 1) == "("
            && src
                .args(k + 1)
                .iter()
                .any(|&(s, e)| s == e && src.s(s) == name)
    })
}

/// For a comprehension variable at `v`, the bracket range of `for v in [...]` on the same line.
fn comprehension_source(src: &PySrc, v: usize) -> Option<(usize, usize)> {
    let line = src.line_of(v)?;
    let name = src.s(v);
    for k in line.first..line.end {
        if src.is_name(k, "for")
            && src.s(k + 1) == name
            && src.is_name(k + 2, "in")
            && matches!(src.s(k + 3), "[" | "(")
        {
            let close = src.closing(k + 3)?;
            // `for w in [1, 2, 4, 8, 16, 32] if w * warp_size <= 1024`: the filter bounds it
            if src.is_name(close + 1, "if") {
                return None;
            }
            return Some((k + 4, close.saturating_sub(1)));
        }
    }
    None
}
