//! `python-torch-version-cuda`: `torch.version.cuda` read as a version string where ROCm builds of
//! PyTorch hold `None` in it.

use crate::diag::Severity;
use crate::python::lex::{Kind, PySrc};
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "python-torch-version-cuda",
    summary: "`torch.version.cuda` parsed as a version string (it is `None` on ROCm builds)",
    what: "Finds `torch.version.cuda` used as a string: a method called on it \
(`torch.version.cuda.startswith(\"12.9\")`, `.split(\".\")`), a subscript, an ordering comparison \
(`torch.version.cuda >= \"12.4\"`) or a version parse (`float(...)`, `int(...)`, `version.parse(...)`, \
`Version(...)`, `LooseVersion(...)`), when nothing before it in the same logical line, the enclosing \
`if`s or the same function tests `torch.version.cuda` itself (`if torch.version.cuda:`, `is not None`) or \
the backend (`torch.version.hip`, `is_hip()`). `torch.cuda.is_available()` is no such test: it is true \
on ROCm.",
    why: "PyTorch's ROCm wheels answer `torch.cuda.is_available()` with `True` and keep the HIP version in \
`torch.version.hip`; `torch.version.cuda` is `None` there. Reading it as a string raises `AttributeError` \
or `TypeError` on every AMD GPU, usually in a version gate meant only to pick a CUDA workaround, so the \
feature it gates crashes on ROCm instead of being skipped.",
    example: "if torch.cuda.is_available() and torch.version.cuda.startswith(\"12.9\"):\n    warn_about_cublas()",
    use_instead: "if torch.version.cuda is not None and torch.version.cuda.startswith(\"12.9\"):\n    warn_about_cublas()",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

/// Calls that parse their argument as a version number.
const PARSERS: &[&str] = &[
    "float",
    "int",
    "parse",
    "Version",
    "LooseVersion",
    "StrictVersion",
    "parse_version",
    "version_parse",
];

/// The `cuda` token of `torch.version.cuda` starting at `i`, if it is there.
fn version_cuda(src: &PySrc, i: usize) -> Option<usize> {
    src.dotted(i, "torch.version.cuda")
}

/// Whether tokens `a..b` (leaving out `skip`) test `torch.version.cuda` itself (read as a
/// truth value or compared with `None`) or the backend (`torch.version.hip`, `is_hip`).
fn tests_cuda_version(cx: &Cx, a: usize, b: usize, skip: (usize, usize)) -> bool {
    let src = cx.src;
    (a..b.min(src.toks.len())).any(|k| {
        if skip.0 <= k && k <= skip.1 {
            return false;
        }
        if let Some(c) = version_cuda(src, k) {
            return !read_as_string(src, c);
        }
        if src.dotted(k, "torch.version.hip").is_some() {
            return true;
        }
        src.kind(k) == Some(Kind::Name) && {
            let l = src.s(k).to_ascii_lowercase();
            l.split('_')
                .any(|p| p == "hip" || p == "rocm" || p == "iship")
                || l == "is_cuda"
                || l == "is_nvidia"
        }
    })
}

/// Whether the `cuda` of `torch.version.cuda` at token `c` is read as a version string (a method
/// call, a subscript, an ordering comparison, the argument of a version parser) rather than
/// tested (`if torch.version.cuda:`, `is None`, `==`).
pub fn read_as_string(src: &PySrc, c: usize) -> bool {
    let a = src.dotted_start(c);
    match src.s(c + 1) {
        "." | "(" | "[" | "<" | "<=" | ">" | ">=" => true,
        ")" => a >= 2 && src.s(a - 1) == "(" && PARSERS.contains(&src.s(a - 2)),
        _ => false,
    }
}

/// Whether the use at tokens `a..=c` is read as a string; the tokens of the whole reading.
fn string_use(src: &PySrc, a: usize, c: usize) -> Option<(usize, usize)> {
    match src.s(c + 1) {
        // `.startswith(...)`, `.split(".")`
        "." if src.kind(c + 2) == Some(Kind::Name) => {
            let end = if src.s(c + 3) == "(" {
                src.closing(c + 3).unwrap_or(c + 2)
            } else {
                c + 2
            };
            Some((a, end))
        }
        "[" => Some((a, src.closing(c + 1).unwrap_or(c + 1))),
        "<" | "<=" | ">" | ">=" => Some((a, c + 2)),
        ")" if a >= 2 && src.s(a - 1) == "(" && PARSERS.contains(&src.s(a - 2)) => {
            Some((src.dotted_start(a - 2), c + 1))
        }
        _ => None,
    }
}

/// Whether token `i` sits in the body of a `try:` (within its function): the handler decides.
fn in_try(src: &PySrc, i: usize) -> bool {
    let Some(line) = src.line_of(i) else {
        return false;
    };
    let mut indent = line.indent;
    let k = src.lines.partition_point(|l| l.end <= i);
    for l in src.lines[..k].iter().rev() {
        if l.indent < indent {
            match src.s(l.first) {
                "try" => return true,
                "def" | "class" => return false,
                _ => indent = l.indent,
            }
        }
        if l.indent == 0 && indent == 0 {
            break;
        }
    }
    false
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    if !src.text.contains("version.cuda") {
        return;
    }
    let mut sites = Vec::new();
    for i in 0..src.toks.len() {
        let Some(c) = version_cuda(src, i) else {
            continue;
        };
        let Some((a, b)) = string_use(src, i, c) else {
            continue;
        };
        let Some(line) = src.line_of(i) else {
            continue;
        };
        // `torch.version.cuda and torch.version.cuda.startswith(...)`, `x if torch.version.hip
        // else float(torch.version.cuda)`: a test on the same logical line
        if tests_cuda_version(cx, line.first, line.end, (i, c)) {
            continue;
        }
        // an enclosing `if` on the backend, or a test earlier in the same function
        // (`if torch.version.hip: return`, `if torch.version.cuda is None: ...`)
        if cx.guarded(i) {
            continue;
        }
        // an earlier test in the same function (at module level: at the top level only) that
        // leaves it: `if torch.version.hip: return ...`, `assert torch.version.cuda`
        let def = src.def_at(i);
        let from = def.map_or(0, |d| d.body.0);
        let level = def.map_or(0, |_| line.indent);
        let lines = &src.lines;
        let earlier_test = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.first >= from && l.end <= line.first && l.indent <= level)
            .any(|(n, l)| {
                let head = src.s(l.first);
                let tests = tests_cuda_version(cx, l.first, l.end, (usize::MAX, 0));
                if !tests {
                    return false;
                }
                if head == "assert" {
                    return true;
                }
                if !matches!(head, "if" | "elif") {
                    return false;
                }
                // the guard's body leaves: `return`, `raise`, `continue`, `break` on the same
                // line or as its first statement
                let colon = (l.first..l.end)
                    .find(|&k| src.toks[k].depth == 0 && src.s(k) == ":")
                    .unwrap_or(l.end);
                let exits =
                    |k: usize| matches!(src.s(k), "return" | "raise" | "continue" | "break");
                (colon + 1 < l.end && exits(colon + 1))
                    || lines
                        .get(n + 1)
                        .is_some_and(|b| b.indent > l.indent && exits(b.first))
            });
        if earlier_test {
            continue;
        }
        // inside a `try:` whose handler catches the failure
        if in_try(src, i) {
            continue;
        }
        sites.push((a, b));
    }
    cx.report_each(
        &META,
        sites,
        |code| {
            format!(
                "`{code}` reads `torch.version.cuda` as a string; on ROCm builds of PyTorch it is `None` (the version is in `torch.version.hip`), so this raises on every AMD GPU",
            )
        },
        "test it first (`torch.version.cuda is not None and ...`) or branch on `torch.version.hip`",
    );
}
