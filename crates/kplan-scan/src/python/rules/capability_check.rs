//! `triton-capability-check`: a CUDA compute-capability comparison that is also true on ROCm.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-capability-check",
    summary: "`get_device_capability()` compared as if only NVIDIA existed (it is also true on ROCm)",
    what: "Finds comparisons of `torch.cuda.get_device_capability()` or a helper named like it \
(`get_device_compute_capability(gpu)`, `get_compute_capability()`), directly or through the variables it is \
assigned to (`major, minor = ...`, `cap = ...`), with no backend check in the same function; a comparison \
inside another assignment (`needs_sm80 = pytest.mark.skipif(cap < (8, 0))`) counts.",
    why: "On ROCm, PyTorch's `torch.cuda.get_device_capability()` returns the GCN architecture as a version: \
gfx942 reports (9, 4), gfx950 (9, 5). `>= (9, 0)` meant to select Hopper (TMA, wgmma, `fp8e4nv`) is then true on \
MI300/MI350 too, and NVIDIA-only code paths run on AMD, where they fail to compile or run slowly.",
    example: "if torch.cuda.get_device_capability() >= (9, 0):\n    use_tma = True",
    use_instead: "target = triton.runtime.driver.active.get_current_target()\nif target.backend == \"cuda\" and torch.cuda.get_device_capability() >= (9, 0):\n    use_tma = True",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

/// A function that returns the compute capability: `get_device_capability`,
/// `get_device_compute_capability`, `get_compute_capability`, `device_capability`.
fn capability_call(name: &str) -> bool {
    let l = name.trim_end_matches('_').to_ascii_lowercase();
    l == "get_device_capability"
        || (l.starts_with("get_") && l.ends_with("_compute_capability"))
        || l == "compute_capability"
        || l == "device_capability"
}

/// Comparisons that can turn an NVIDIA-only path on. `<` and `<=` are the negation of `>=`/`>`:
/// `if cap < (9, 0): return fallback()` is false on ROCm (gfx942 reports (9, 4)), so AMD runs the
/// code after it. `!=` on ROCm sends the code to its fallback, which is the safe direction.
const CMP: &[&str] = &[">=", ">", "==", "<", "<="];

/// `== 9`, `== (9, 0)`, `== (11, 0)`: equality matters only with a major that AMD GPUs report
/// (gfx9 -> 9, gfx10 -> 10, gfx11 -> 11, gfx12 -> 12).
fn risky(src: &crate::python::lex::PySrc, op: usize) -> bool {
    if src.s(op) != "==" {
        return true;
    }
    let v = if src.s(op + 1) == "(" {
        src.int(op + 2)
    } else {
        src.int(op + 1)
    };
    v.is_some_and(|m| (9..=12).contains(&m))
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    // Names holding a capability (`cap`, `major`, `sm = major * 10 + minor`) and names holding
    // device properties (`props`, compared through `.major` / `.minor`).
    // (name, scope): the def it was assigned in (`usize::MAX` at module level, visible everywhere)
    let mut derived: Vec<(&str, usize)> = Vec::new();
    let mut props: Vec<(&str, usize)> = Vec::new();
    let scope = |i: usize| src.def_at(i).map(|d| d.name).unwrap_or(usize::MAX);
    let visible = |list: &Vec<(&str, usize)>, i: usize| {
        let sc = scope(i);
        list.iter()
            .any(|&(n, s)| n == src.s(i) && (s == usize::MAX || s == sc))
    };
    let mut sites: Vec<(usize, usize)> = Vec::new();
    let is_cmp = |i: usize| ["<", "<=", "!=", ">=", ">", "=="].contains(&src.s(i));
    let assigned = |line: &crate::python::lex::Line, upto: usize| {
        (line.first..upto)
            .find(|&i| src.s(i) == "=" && src.toks[i].depth == src.toks[line.first].depth)
    };
    for k in 0..n {
        // `torch.cuda.get_device_capability()` and project helpers of the same meaning
        // (`get_device_compute_capability(gpu)`, `get_compute_capability()`), called
        let capability =
            src.kind(k) == Some(Kind::Name) && src.s(k + 1) == "(" && capability_call(src.s(k));
        let properties = src.is_name(k, "get_device_properties");
        if !capability && !properties {
            continue;
        }
        let Some(line) = src.line_of(k) else { continue };
        if matches!(src.s(line.first), "def" | "import" | "from") {
            continue;
        }
        // direct comparison on the same line (properties: through `.major` / `.minor`)
        let via_major = (k..line.end).any(|i| {
            src.s(i) == "." && (src.is_name(i + 1, "major") || src.is_name(i + 1, "minor"))
        });
        if let Some(c) =
            (k..line.end).find(|&i| is_cmp(i) && src.toks[i].depth <= src.toks[k].depth)
        {
            if (capability || via_major) && CMP.contains(&src.s(c)) && risky(src, c) {
                sites.push((src.dotted_start(k), c));
            }
            continue;
        }
        // `cap = ...get_device_capability()` / `major, minor = ...` / `props = ...properties()`
        if let Some(eq) = assigned(line, k) {
            for i in line.first..eq {
                if src.kind(i) == Some(Kind::Name) {
                    if capability || via_major {
                        derived.push((src.s(i), scope(i)));
                    } else {
                        props.push((src.s(i), scope(i)));
                    }
                }
            }
        }
    }
    // one more hop: `sm = major * 10 + minor`, `cc = props.major`
    for _ in 0..2 {
        for line in &src.lines {
            let Some(eq) = assigned(line, line.end) else {
                continue;
            };
            let rhs = eq + 1..line.end;
            let uses = rhs.clone().any(|i| {
                src.kind(i) == Some(Kind::Name)
                    && (visible(&derived, i)
                        || (visible(&props, i)
                            && src.s(i + 1) == "."
                            && (src.is_name(i + 2, "major") || src.is_name(i + 2, "minor"))))
            }) && !rhs.clone().any(is_cmp);
            if uses
                && eq == line.first + 1
                && src.kind(line.first) == Some(Kind::Name)
                && !visible(&derived, line.first)
            {
                derived.push((src.s(line.first), scope(line.first)));
            }
        }
    }
    for k in 0..n {
        if src.kind(k) != Some(Kind::Name) || src.s(k.wrapping_sub(1)) == "." {
            continue;
        }
        // `cap >= (9, 0)`, `cap[0] >= 9`, `major >= 9`, `props.major >= 9`
        let mut j = k + 1;
        if visible(&derived, k) {
            if src.s(j) == "[" {
                j = src.closing(j).map(|c| c + 1).unwrap_or(j);
            }
        } else if visible(&props, k)
            && src.s(j) == "."
            && (src.is_name(j + 1, "major") || src.is_name(j + 1, "minor"))
        {
            j += 2;
        } else {
            continue;
        }
        // `flag = cap < (8, 0)` and `mark = skipif(cap < (8, 0))` compare too; only the
        // assignment's own target (`cap = ...`) is not a comparison
        let target = src.line_of(k).is_some_and(|l| {
            assigned(l, k).is_none() && assigned(l, l.end).is_some_and(|eq| k < eq)
        });
        if CMP.contains(&src.s(j)) && risky(src, j) && !target {
            sites.push((k, j));
        }
    }
    sites.sort_unstable();
    sites.dedup();
    for (left, c) in sites {
        if cx.guarded(c) || cx.scope_has_backend_check(c) {
            continue;
        }
        // the comparison: from the capability expression through the right-hand operand
        let right = match src.s(c + 1) {
            "(" | "[" => src.closing(c + 1).unwrap_or(c + 1),
            _ => c + 1,
        };
        let msg = format!(
            "`{}` is also true on AMD GPUs under ROCm, where the capability is the gfx version (gfx942 -> (9, 4), gfx950 -> (9, 5), gfx1100 -> (11, 0))",
            cx.code(left, right)
        );
        cx.report(&META, left, right, msg, "check the backend first (`triton.runtime.driver.active.get_current_target().backend == \"cuda\"` or `torch.version.hip is None`)");
    }
}
