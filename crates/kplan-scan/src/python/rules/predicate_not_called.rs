//! `python-predicate-not-called`: a capability or platform predicate function used in a
//! condition without being called (`elif check_shared_mem:`, `if is_hip:`): a function object is
//! always true.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::rules::arch_literal_always_true::in_condition;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "python-predicate-not-called",
    summary: "predicate function used in a condition without a call: always true",
    what: "Finds a name that the file defines as a function (or the scanned project as a module-level one) and that \
reads as a yes/no question (`is_hip`, `is_cuda`, `has_fp8`, `check_shared_mem`, `supports_tma`), used \
as a whole operand of `if`, `elif`, `while`, `assert`, `not`, `and`, `or` or a conditional expression \
without being called. A name the file assigns (`is_hip = torch.version.hip is not None`), a parameter \
of the enclosing function, or an attribute (`self.is_hip`, `args.is_hip`) is a value, not the function.",
    why: "A function object is truthy: `elif check_shared_mem:` takes the branch on every device, and \
`if not is_hip:` never does. Platform and capability predicates are exactly where this happens (`is_hip` \
is a variable in one file and a function in the next), and the branch they guard holds the \
vendor-specific tiles, formats or kernels, so every GPU gets the settings of one.",
    example: "import triton\n\ndef check_shared_mem(arch=\"none\"):\n    return get_max_shared_mem() >= 131072\n\nBK = 64 if check_shared_mem else 32",
    use_instead: "import triton\n\ndef check_shared_mem(arch=\"none\"):\n    return get_max_shared_mem() >= 131072\n\nBK = 64 if check_shared_mem() else 32",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let project = cx.ctx.index.as_ref().map(|x| &x.py_predicates);
    // the file's own predicate functions (the project's are module-level ones)
    let own: Vec<&str> = src
        .defs
        .iter()
        .map(|d| src.s(d.name))
        .filter(|n| crate::index::predicate_name(n))
        .collect();
    let n = src.toks.len();
    let mut sites = Vec::new();
    for i in 0..n {
        if src.kind(i) != Some(Kind::Name) {
            continue;
        }
        let w = src.s(i);
        if !crate::index::predicate_name(w)
            || !(own.contains(&w) || project.is_some_and(|p| p.contains(w)))
        {
            continue;
        }
        let prev = if i > 0 { src.s(i - 1) } else { "" };
        let next = src.s(i + 1);
        let starts = matches!(
            prev,
            "if" | "elif" | "while" | "assert" | "not" | "and" | "or"
        );
        let ends = matches!(next, ":" | "and" | "or" | "else" | "")
            || src.line_of(i).is_some_and(|l| l.end == i + 1);
        if !starts || !ends || prev == "." || !in_condition(src, i) {
            continue;
        }
        // assigned somewhere in the file, or a parameter of the enclosing function: a value
        let assigned =
            (0..n).any(|k| src.s(k) == w && src.s(k + 1) == "=" && (k == 0 || src.s(k - 1) != "."));
        let param = src.defs.iter().any(|d| {
            d.body.0 <= i && i < d.body.1 && (d.params.0..d.params.1).any(|k| src.s(k) == w)
        });
        if assigned || param {
            continue;
        }
        sites.push(i);
    }
    for i in sites {
        let targets = cx.ctx.target_ids();
        let msg = format!(
            "`{}` is a function and is not called here: a function object is always true, so this test passes on every device",
            src.s(i)
        );
        let help = format!("call it: `{}()`", src.s(i));
        cx.report_with(&META, META.severity, targets, i, i, msg, &help);
    }
}
