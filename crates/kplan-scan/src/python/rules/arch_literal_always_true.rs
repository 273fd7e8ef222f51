//! `python-arch-literal-always-true`: an architecture name standing alone as an operand of `or`
//! in a condition (`if "gfx1200" or "gfx1201" in arch:`), which is always true.

use crate::diag::Severity;
use crate::python::lex::{Kind, PySrc};
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub const META: RuleMeta = RuleMeta {
    id: "python-arch-literal-always-true",
    summary: "architecture name alone as an operand of `or` in a condition: the test is always true",
    what: "Finds a string literal naming a GPU architecture (`\"gfx1201\"`, `\"sm_90\"`, `\"MI300\"`) that \
stands alone as an operand of `or` in the condition of an `if`, `elif`, `while`, `assert` or conditional \
expression: `if \"gfx1200\" or \"gfx1201\" in arch:`, `if arch == \"gfx942\" or \"gfx950\":`.",
    why: "`or` does not distribute over `in` or `==`: `\"gfx1200\" or \"gfx1201\" in arch` is \
`\"gfx1200\" or (\"gfx1201\" in arch)`, and a non-empty string is true, so the branch is taken on every \
device. An architecture check that is always true sends every GPU, of either vendor and every generation, \
down the path written for one architecture: wrong instructions, number formats or tile sizes on all the \
others.",
    example: "if \"gfx1200\" or \"gfx1201\" in arch_name:\n    return True",
    use_instead: "if any(a in arch_name for a in (\"gfx1200\", \"gfx1201\")):\n    return True",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &[],
};

/// The vendor whose architecture the literal at `i` names: `gfx90a`, `gfx1201` (AMD), `sm_90`,
/// `sm90a` (NVIDIA), `MI300X` (AMD).
fn arch_literal(src: &PySrc, i: usize) -> Option<Vendor> {
    if src.kind(i) != Some(Kind::Str) {
        return None;
    }
    let s = src.s(i);
    let body = s
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'')
        .to_ascii_lowercase();
    let digits_after = |p: &str| {
        body.strip_prefix(p).is_some_and(|r| {
            let r = r.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            !r.is_empty() && r.bytes().all(|b| b.is_ascii_hexdigit())
        })
    };
    if digits_after("gfx") || digits_after("mi") {
        Some(Vendor::Amd)
    } else if digits_after("sm_") || digits_after("sm") {
        Some(Vendor::Nvidia)
    } else {
        None
    }
}

/// Whether token `i` sits in the condition of an `if`/`elif`/`while`/`assert` statement or of a
/// conditional expression (`a if COND else b`) on its logical line.
pub(crate) fn in_condition(src: &PySrc, i: usize) -> bool {
    let Some(line) = src.line_of(i) else {
        return false;
    };
    let d = src.toks[i].depth;
    if matches!(src.s(line.first), "if" | "elif" | "while" | "assert") {
        // up to the statement's `:` at depth 0
        let colon = (line.first..line.end)
            .find(|&k| src.toks[k].depth == 0 && src.s(k) == ":")
            .unwrap_or(line.end);
        if i < colon {
            return true;
        }
    }
    // `x if COND else y` at the literal's own depth
    let mut k = i;
    while k > line.first {
        k -= 1;
        if src.toks[k].depth < d {
            break;
        }
        if src.toks[k].depth == d && src.is_name(k, "if") {
            return (i + 1..line.end).any(|e| src.toks[e].depth == d && src.is_name(e, "else"));
        }
        if src.toks[k].depth == d && src.is_name(k, "else") {
            return false;
        }
    }
    false
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let mut sites = Vec::new();
    for i in 0..n {
        let Some(vendor) = arch_literal(src, i) else {
            continue;
        };
        let prev = if i > 0 { src.s(i - 1) } else { "" };
        let next = src.s(i + 1);
        let prev_is_start = matches!(
            prev,
            "if" | "elif" | "while" | "assert" | "not" | "and" | "("
        ) && src.kind(i.wrapping_sub(1)) != Some(Kind::Str);
        // the literal is a whole operand of `or`: `"a" or ...` after the start of a condition,
        // or `... or "a"` closing it
        let alone = (prev_is_start && next == "or")
            || (prev == "or" && matches!(next, ":" | ")" | "or" | "and" | "else" | ""))
            || (prev == "or" && src.line_of(i).is_some_and(|l| l.end == i + 1));
        if !alone || !in_condition(src, i) {
            continue;
        }
        // `(arch or "gfx942").startswith(...)`: a default inside brackets whose value is used;
        // `in ("gfx1200" or "gfx1201")`: a substring test on the first name, not always true
        if let Some(open) = (0..i)
            .rev()
            .find(|&k| src.closing(k).is_some_and(|c| c > i))
        {
            let after = src.closing(open).map(|c| src.s(c + 1)).unwrap_or("");
            if src.s(open) == "("
                && (matches!(after, "." | "[") || (open > 0 && src.is_name(open - 1, "in")))
            {
                continue;
            }
        }
        sites.push((i, vendor));
    }
    for (i, vendor) in sites {
        let targets = cx.ctx.vendor_targets(vendor);
        if targets.is_empty() {
            continue;
        }
        let msg = format!(
            "{} alone as an operand of `or` is always true: this architecture test passes on every device",
            src.s(i)
        );
        cx.report_with(
            &META,
            META.severity,
            targets,
            i,
            i,
            msg,
            "test each name: `any(a in arch for a in (\"gfx1200\", \"gfx1201\"))` or `arch in (...)`",
        );
    }
}
