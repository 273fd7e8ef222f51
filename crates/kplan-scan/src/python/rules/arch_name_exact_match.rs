//! `python-arch-name-exact-match`: `gcnArchName` compared whole with a bare architecture name,
//! although on CDNA it carries target-id features (`gfx942:sramecc+:xnack-`).

use crate::diag::Severity;
use crate::python::lex::{Kind, PySrc};
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "python-arch-name-exact-match",
    summary: "`gcnArchName` compared whole with a bare `gfx` name (it carries `:sramecc+:xnack-` on CDNA)",
    what: "Finds `==`, `!=` and `in (...)` tests between a bare gfx9 architecture name (`\"gfx90a\"`, a tuple or \
set holding one) and `gcnArchName` (`torch.cuda.get_device_properties(d).gcnArchName`), directly or through a \
name it was assigned to, when that value was not cut at the first `:` (`.split(\":\")[0]`, \
`.partition(\":\")`). Substring tests (`\"gfx942\" in arch`), `startswith` and RDNA names (`\"gfx1100\"`, whose ids usually \
carry no features) are left alone.",
    why: "ROCm reports the architecture as a target id: the name followed by the target features it was \
booted with, `gfx90a:sramecc+:xnack-` on MI200 and `gfx942:sramecc+:xnack-` on MI300. A whole-string \
comparison with `\"gfx942\"` is false on exactly the CDNA GPUs it was written for (it can still pass on \
RDNA, whose ids usually carry no features), so they fall to the generic path or are reported unsupported.",
    example: "arch = torch.cuda.get_device_properties(0).gcnArchName\nif arch == \"gfx942\":\n    use_mfma_path()",
    use_instead: "arch = torch.cuda.get_device_properties(0).gcnArchName.split(\":\")[0]\nif arch == \"gfx942\":\n    use_mfma_path()",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

/// A bare AMD architecture name in a string literal (`"gfx942"`, not `"gfx942:sramecc+"`).
pub fn bare_gfx(s: &str) -> bool {
    let body = s
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'');
    body.strip_prefix("gfx").is_some_and(|r| {
        r.len() >= 3
            && r.bytes().all(|b| b.is_ascii_hexdigit())
            && r.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// A gfx9 name (GCN5, CDNA): its target id carries `:sramecc±:xnack±`. RDNA ids usually carry
/// no features, so a whole comparison with `"gfx1100"` works.
fn gfx9(s: &str) -> bool {
    s.trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'')
        .starts_with("gfx9")
}

/// Whether tokens `a..b` cut the name at the first `:` (`.split(":")`, `.partition(":")`,
/// `.rsplit(":")`, `re.match(...)`).
fn cut(src: &PySrc, a: usize, b: usize) -> bool {
    (a..b).any(|k| {
        (matches!(src.s(k), "split" | "partition" | "rsplit") && src.s(k + 1) == "(")
            || (src.kind(k) == Some(Kind::Str)
                && src.s(k).trim_matches(|c| c == '"' || c == '\'') == ":")
    })
}

/// The right-hand side of a comparison at operator `op`: every bare name it holds (one literal,
/// or a tuple/list/set of them).
fn bare_names(src: &PySrc, first: usize) -> Option<usize> {
    if src.kind(first) == Some(Kind::Str) {
        return (bare_gfx(src.s(first)) && gfx9(src.s(first))).then_some(first);
    }
    if matches!(src.s(first), "(" | "[" | "{") {
        let close = src.closing(first)?;
        let all_bare = (first + 1..close)
            .filter(|&k| src.kind(k) == Some(Kind::Str))
            .all(|k| bare_gfx(src.s(k)));
        let any = (first + 1..close).any(|k| src.kind(k) == Some(Kind::Str));
        let any_gfx9 = (first + 1..close).any(|k| src.kind(k) == Some(Kind::Str) && gfx9(src.s(k)));
        return (all_bare && any && any_gfx9).then_some(close);
    }
    None
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    if !src.text.contains("gcnArchName") {
        return;
    }
    // names assigned the uncut `gcnArchName` (per def; module level is visible everywhere)
    let mut names: Vec<(&str, usize)> = Vec::new();
    let scope = |i: usize| src.def_at(i).map(|d| d.name).unwrap_or(usize::MAX);
    for line in &src.lines {
        let Some(eq) = (line.first..line.end)
            .find(|&k| src.s(k) == "=" && src.toks[k].depth == src.toks[line.first].depth)
        else {
            continue;
        };
        let reads = (eq + 1..line.end).any(|k| src.is_name(k, "gcnArchName"));
        if reads && !cut(src, eq + 1, line.end) && eq == line.first + 1 {
            names.push((src.s(line.first), scope(line.first)));
        }
    }
    let holds_name = |k: usize| -> bool {
        if src.is_name(k, "gcnArchName") {
            return !cut(src, k + 1, k + 3);
        }
        let sc = scope(k);
        src.kind(k) == Some(Kind::Name)
            && src.s(k.wrapping_sub(1)) != "."
            && src.s(k + 1) != "."
            && names
                .iter()
                .any(|&(n, s)| n == src.s(k) && (s == usize::MAX || s == sc))
    };
    let mut sites = Vec::new();
    for k in 0..src.toks.len() {
        if !holds_name(k) {
            continue;
        }
        // `arch == "gfx942"`, `arch in ("gfx940", "gfx942")`, `arch not in {...}`
        let (op, rhs) = match src.s(k + 1) {
            "==" | "!=" => (k + 1, k + 2),
            "in" => (k + 1, k + 2),
            "not" if src.is_name(k + 2, "in") => (k + 1, k + 3),
            _ => {
                // `"gfx942" == arch`
                if k >= 2
                    && matches!(src.s(k - 1), "==" | "!=")
                    && bare_gfx(src.s(k - 2))
                    && gfx9(src.s(k - 2))
                {
                    sites.push((k - 2, k));
                }
                continue;
            }
        };
        if src.s(op) == "in" && src.kind(rhs) == Some(Kind::Str) {
            continue; // `arch in "gfx942"` is a substring test
        }
        if let Some(end) = bare_names(src, rhs) {
            sites.push((k, end));
        }
    }
    cx.report_each(
        &META,
        sites,
        |code| {
            format!(
                "`{code}` compares the whole `gcnArchName`, which on CDNA is a target id such as `gfx942:sramecc+:xnack-`: the test is false on the GPUs it names",
            )
        },
        "compare the name before the first `:` (`gcnArchName.split(\":\")[0]`) or test with `startswith`",
    );
}
