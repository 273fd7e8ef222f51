//! `arch-name-exact-match`: a bare architecture name (`"gfx90a"`) compared whole with a name read
//! from `gcnArchName`, which on CDNA carries target-id features (`gfx90a:sramecc+:xnack-`).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "arch-name-exact-match",
    summary: "bare `gfx` name compared whole with a `gcnArchName` (it carries `:sramecc+:xnack-` on CDNA)",
    what: "Finds whole-string comparisons of a bare gfx9 architecture name with a value that holds \
`gcnArchName`: `name == \"gfx90a\"`, `\"gfx942\" != arch`, `strcmp(prop.gcnArchName, \"gfx942\") == 0`, \
`arch.compare(\"gfx90a\") == 0`, where the value is `gcnArchName` itself, a variable initialised or assigned \
from it, or the parameter of a function of the file it is passed to. A value cut at its first `:` \
(`find(':')`, `substr`, `strtok`, `strchr`) is left alone, and so are prefix tests (`strncmp`, \
`compare(0, 6, \"gfx942\")`), substring searches and RDNA names (`gfx1030`, `gfx1100`), whose ids usually carry \
no features.",
    why: "HIP reports `hipDeviceProp_t::gcnArchName` as a target id: the architecture followed by the features \
the GPU runs with, `gfx90a:sramecc+:xnack-` on MI200 and `gfx942:sramecc+:xnack-` on MI300. A whole-string \
comparison with `\"gfx942\"` is false on exactly the CDNA GPUs it names (RDNA ids usually carry no \
features, so it can look right there), and the code falls to its unknown-architecture path: a slow \
fallback, a wrong kernel choice or \"unsupported device\".",
    example: "hipDeviceProp_t p;\nhipGetDeviceProperties(&p, dev);\nstd::string arch = p.gcnArchName;\nif (arch == \"gfx90a\") { use_mfma(); }",
    use_instead: "hipDeviceProp_t p;\nhipGetDeviceProperties(&p, dev);\nstd::string arch = p.gcnArchName;\narch = arch.substr(0, arch.find(':'));   // \"gfx90a\"\nif (arch == \"gfx90a\") { use_mfma(); }",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// A bare gfx9 architecture name literal (`"gfx90a"`, `"gfx942"`, not `"gfx90a:xnack+"`):
/// gfx9 targets (GCN5 and CDNA) report their target id with `:sramecc±:xnack±`; RDNA ids
/// (`gfx1030`, `gfx1100`) usually carry no features, so a whole comparison works there.
fn bare_gfx9(body: &str) -> bool {
    body.strip_prefix("gfx9")
        .is_some_and(|r| r.len() >= 2 && r.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether tokens `a..=b` cut a target id at its `:` (`find(':')`, `substr`, `strtok`,
/// `strchr`, a `":"` literal).
fn cuts(cx: &Cx, a: usize, b: usize) -> bool {
    let src = cx.src;
    (a..=b).any(|k| match src.kind(k) {
        Some(Tk::Char) => src.s(k) == "':'",
        Some(Tk::Str) => src.str_body(k) == ":",
        Some(Tk::Ident) => matches!(src.s(k), "substr" | "strtok" | "strchr" | "find_first_of"),
        _ => false,
    })
}

/// The statement holding token `k`: from after the previous `;`, `{` or `}` to the next `;`.
fn statement(cx: &Cx, k: usize) -> (usize, usize) {
    let src = cx.src;
    let a = (0..k)
        .rev()
        .take(64)
        .find(|&j| matches!(src.s(j), ";" | "{" | "}"))
        .map_or(k.saturating_sub(64), |j| j + 1);
    let b = (k..src.toks.len())
        .take(64)
        .find(|&j| src.s(j) == ";")
        .unwrap_or(k);
    (a, b)
}

/// Names that hold an uncut `gcnArchName`: variables initialised or assigned from it, and the
/// parameters of the file's functions that it is passed to. A name later assigned a cut value
/// (`arch = arch.substr(0, arch.find(':'))`) is dropped.
fn arch_names<'a>(cx: &Cx<'_, 'a, '_>) -> std::collections::HashSet<&'a str> {
    let src = cx.src;
    let n = src.toks.len();
    let mut names = std::collections::HashSet::new();
    let mut passed: Vec<(&str, usize)> = Vec::new();
    for k in 0..n {
        if !src.is(k, "gcnArchName") {
            continue;
        }
        let (a, b) = statement(cx, k);
        if cuts(cx, a, b) {
            continue;
        }
        // passed to a function of the file: `arch = getArch(prop.gcnArchName);`
        let call = (a..k).rev().find(|&j| {
            src.s(j) == "("
                && src.mate(j).is_some_and(|c| c > k)
                && j > 0
                && src.kind(j - 1) == Some(Tk::Ident)
                && !matches!(
                    src.s(j - 1),
                    "string" | "string_view" | "if" | "while" | "return"
                )
                && !(j >= 2 && src.kind(j - 2) == Some(Tk::Ident) && src.s(j - 2) != "return")
        });
        if let Some(open) = call {
            let idx = cx
                .call_args(open)
                .iter()
                .position(|&(s, e)| s <= k && k <= e);
            if let Some(i) = idx {
                passed.push((src.s(open - 1), i));
            }
            continue;
        }
        // `std::string arch = p.gcnArchName;`, `std::string arch(p.gcnArchName);`, `arch = ...`
        if let Some(eq) = (a..k).find(|&j| src.s(j) == "=") {
            if eq > a && src.kind(eq - 1) == Some(Tk::Ident) {
                names.insert(src.s(eq - 1));
            }
        } else if let Some(open) = (a..k).find(|&j| matches!(src.s(j), "(" | "{")) {
            if open > a && src.kind(open - 1) == Some(Tk::Ident) {
                // an initialiser (`T name(...)`) or a call (`f(...)`): the argument's index
                let callee = src.s(open - 1);
                let is_decl = open >= 2
                    && src.kind(open - 2) == Some(Tk::Ident)
                    && src.s(open - 2) != "return";
                if is_decl {
                    names.insert(callee);
                } else if src.mate(open).is_some_and(|c| c > k) {
                    let idx = cx
                        .call_args(open)
                        .iter()
                        .position(|&(s, e)| s <= k && k <= e);
                    if let Some(i) = idx {
                        passed.push((callee, i));
                    }
                }
            }
        }
    }
    // the parameters those functions receive it in: `Arch getArch(const std::string& archStr)`
    for (f, i) in passed {
        for k in 0..n.saturating_sub(1) {
            if src.s(k) != f || src.s(k + 1) != "(" {
                continue;
            }
            let Some(close) = src.mate(k + 1) else {
                continue;
            };
            if src.s(close + 1) != "{" && !matches!(src.s(close + 1), "const" | "noexcept") {
                continue;
            }
            if let Some(&(_, e)) = cx.call_args(k + 1).get(i) {
                if src.kind(e) == Some(Tk::Ident) {
                    names.insert(src.s(e));
                }
            }
        }
    }
    // reassigned a cut value
    for k in 1..n {
        if src.s(k) == "=" && names.contains(src.s(k - 1)) {
            let (_, b) = statement(cx, k);
            if cuts(cx, k, b) {
                names.remove(src.s(k - 1));
            }
        }
    }
    names
}

pub fn check(cx: &mut Cx) {
    if !cx.has("gcnArchName") || !cx.has("\"gfx9") {
        return;
    }
    let src = cx.src;
    let names = arch_names(cx);
    let holds = |a: usize, b: usize| -> bool {
        (a..=b).any(|j| {
            src.kind(j) == Some(Tk::Ident) && (src.is(j, "gcnArchName") || names.contains(src.s(j)))
        })
    };
    let mut sites: Vec<(usize, usize)> = Vec::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Str) || !bare_gfx9(src.str_body(k)) {
            continue;
        }
        let prev = if k > 0 { src.s(k - 1) } else { "" };
        let next = src.s(k + 1);
        // `x == "gfx90a"`, `"gfx90a" != x`
        if matches!(prev, "==" | "!=") {
            let a = cx.left_operand(k - 1).unwrap_or(k - 1);
            if holds(a, k - 1) {
                sites.push((a, k));
            }
            continue;
        }
        if matches!(next, "==" | "!=") {
            let b = cx.right_operand(k + 1).unwrap_or(k + 1);
            if holds(k + 1, b) {
                sites.push((k, b));
            }
            continue;
        }
        // `strcmp(name, "gfx90a")`, `name.compare("gfx90a")` (one argument: the whole string)
        let Some(open) = (0..k.min(8))
            .map(|d| k - 1 - d)
            .take_while(|&j| src.s(j) != ";" && src.s(j) != "{")
            .find(|&j| src.s(j) == "(" && src.mate(j).is_some_and(|c| c > k))
        else {
            continue;
        };
        if open == 0 {
            continue;
        }
        let callee = src.s(open - 1);
        let args = cx.call_args(open).len();
        let whole = match callee {
            "strcmp" | "wcscmp" | "strcasecmp" | "_stricmp" => args == 2,
            "compare" => args == 1,
            _ => false,
        };
        if whole {
            let a = cx.left_operand(open).unwrap_or(open - 1);
            let b = src.mate(open).unwrap_or(k);
            if holds(a, b) {
                sites.push((a, b));
            }
        }
    }
    sites.sort_unstable();
    sites.dedup();
    cx.report_each(
        &META,
        sites,
        |code| {
            format!(
                "`{code}` compares a whole architecture name, but `gcnArchName` is a target id such as `gfx90a:sramecc+:xnack-` on gfx9 (CDNA) GPUs: the test is false on the GPUs it names",
            )
        },
        "compare the part before the first `:` (`name.substr(0, name.find(':'))`) or test the prefix",
    );
}
