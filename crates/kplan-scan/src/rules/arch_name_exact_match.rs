//! `arch-name-exact-match`: a bare architecture name (`"gfx90a"`) compared whole with a name read
//! from `gcnArchName`, which on CDNA carries target-id features (`gfx90a:sramecc+:xnack-`).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "arch-name-exact-match",
    summary: "bare `gfx` name compared whole with a `gcnArchName` (it carries `:sramecc+:xnack-` on CDNA)",
    what: "In a file that reads `gcnArchName`, finds whole-string comparisons with a bare architecture name: \
`name == \"gfx90a\"`, `\"gfx942\" != arch`, `strcmp(prop.gcnArchName, \"gfx942\") == 0`, \
`arch.compare(\"gfx90a\") == 0`. A file that cuts the name at its first `:` (`find(':')`, `strchr(name, ':')`, \
`strtok(name, \":\")`) is left alone, and so are prefix tests (`strncmp`, `rfind(\"gfx94\", 0)`) and substring \
searches.",
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

/// A bare AMD architecture name literal: `"gfx90a"`, not `"gfx90a:xnack+"` or `"gfx9"`.
fn bare_gfx(body: &str) -> bool {
    body.strip_prefix("gfx").is_some_and(|r| {
        r.len() >= 3
            && r.bytes().all(|b| b.is_ascii_hexdigit())
            && r.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether the file cuts a target id at its `:` somewhere (`':'` or `":"` as a whole literal).
fn cuts_features(cx: &Cx) -> bool {
    let src = cx.src;
    (0..src.toks.len()).any(|k| match src.kind(k) {
        Some(Tk::Char) => src.s(k) == "':'",
        Some(Tk::Str) => src.str_body(k) == ":",
        _ => false,
    })
}

pub fn check(cx: &mut Cx) {
    if !cx.has("gcnArchName") || !cx.has("\"gfx") {
        return;
    }
    if cuts_features(cx) {
        return;
    }
    let src = cx.src;
    let mut sites: Vec<(usize, usize)> = Vec::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Str) || !bare_gfx(src.str_body(k)) {
            continue;
        }
        let prev = if k > 0 { src.s(k - 1) } else { "" };
        let next = src.s(k + 1);
        // `x == "gfx90a"`, `"gfx90a" != x`
        if matches!(prev, "==" | "!=") {
            let a = cx.left_operand(k - 1).unwrap_or(k - 1);
            sites.push((a, k));
            continue;
        }
        if matches!(next, "==" | "!=") {
            let b = cx.right_operand(k + 1).unwrap_or(k + 1);
            sites.push((k, b));
            continue;
        }
        // `strcmp(name, "gfx90a")`, `name.compare("gfx90a")`: the literal is an argument of a
        // whole-string comparison
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
        if matches!(
            callee,
            "strcmp" | "wcscmp" | "compare" | "strcasecmp" | "_stricmp"
        ) {
            let a = cx.left_operand(open).unwrap_or(open - 1);
            let b = src.mate(open).unwrap_or(k);
            sites.push((a, b));
        }
    }
    sites.sort_unstable();
    sites.dedup();
    for (a, b) in sites {
        let msg = format!(
            "`{}` compares a whole architecture name, but `gcnArchName` is a target id such as `gfx90a:sramecc+:xnack-` on CDNA: the test is false on the GPUs it names",
            cx.snippet(a, b)
        );
        cx.report(
            &META,
            a,
            b,
            msg,
            "compare the part before the first `:` (`name.substr(0, name.find(':'))`) or test the prefix",
        );
    }
}
