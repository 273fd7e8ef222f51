//! `python-low-precision-for-other-amd`: a low-precision format (fp8, fp6, fp4, MX) chosen for
//! every AMD architecture but one (`"fp8" if arch == "gfx942" else "fp4"`): the other branch
//! also takes architectures in scope that have no such format.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::{Availability, Vendor};

pub const META: RuleMeta = RuleMeta {
    id: "python-low-precision-for-other-amd",
    summary: "low-precision format chosen for every AMD architecture except one (`... if arch == \"gfx942\" else \"fp4\"`)",
    what: "Finds conditional expressions that test one AMD architecture by name (`arch == \"gfx942\"`, \
`get_gfx() != \"gfx950\"`, `\"gfx942\" in gcnArchName`) and give every other architecture a low-precision float \
format (a string or dtype naming fp8, fp6, fp4, MX formats, `e4m3`, `e5m2`, `e2m1`, FNUZ), when AMD targets in \
scope other than the tested one have no 8-bit float matrix support (kplan's `fp8-matrix` facts).",
    why: "An `else` that stands for \"every other architecture\" also takes the ones nobody tested: older CDNA \
(gfx90a has no 8-bit float types), RDNA3 (gfx11), and architectures released later. The format chosen for a new \
GPU (FP4 on gfx950) then runs on GPUs without it: a kernel that fails to compile, an emulation, or a \
conversion that reads the wrong bits. The choice wants the list of architectures that have the format, with a \
fallback for the rest.",
    example: "cache_dtype = \"fp8\" if get_gfx() == \"gfx942\" else \"fp4\"",
    use_instead: "FP4_ARCHS = {\"gfx950\"}\nFP8_ARCHS = {\"gfx942\", \"gfx950\", \"gfx1200\", \"gfx1201\"}\narch = get_gfx()\ncache_dtype = \"fp4\" if arch in FP4_ARCHS else \"fp8\" if arch in FP8_ARCHS else \"bf16\"",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &["fp8-matrix"],
};

/// A string literal or name that names a low-precision float format.
fn low_precision(s: &str) -> bool {
    let l = s
        .trim_matches(|c| c == '\'' || c == '"')
        .to_ascii_lowercase();
    [
        "fp8", "fp6", "fp4", "mxfp", "nvfp", "float8", "float4", "e4m3", "e5m2", "e2m1", "e3m2",
        "e2m3", "fnuz", "bf8",
    ]
    .iter()
    .any(|p| l.contains(p))
}

/// `"gfx942"`: a string literal holding one AMD architecture name.
fn arch_literal(s: &str) -> Option<&str> {
    let t = s.trim_matches(|c| c == '\'' || c == '"');
    (t.starts_with("gfx") && t.len() > 3 && t[3..].chars().all(|c| c.is_ascii_alphanumeric()))
        .then_some(t)
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let amd = cx.ctx.vendor_targets(Vendor::Amd);
    if amd.is_empty() {
        return;
    }
    for k in 1..n {
        if !src.is_name(k, "if") {
            continue;
        }
        // `A if COND else B` on one line: A is the token before `if`
        let Some(e) = (k + 1..n.min(k + 24)).find(|&j| src.is_name(j, "else")) else {
            continue;
        };
        let (Some(lk), Some(le)) = (src.line_of(k), src.line_of(e)) else {
            continue;
        };
        if lk.first != le.first || src.s(lk.first) == "if" || src.s(lk.first) == "elif" {
            continue;
        }
        // dotted values: `torch.float8_e4m3fn if ... else torch.bfloat16`
        let a = k - 1;
        let mut a0 = a;
        while a0 >= 2 && src.s(a0 - 1) == "." && src.kind(a0 - 2) == Some(Kind::Name) {
            a0 -= 2;
        }
        let b0 = e + 1;
        let mut b = b0;
        while b + 2 < n && src.s(b + 1) == "." && src.kind(b + 2) == Some(Kind::Name) {
            b += 2;
        }
        if b >= n {
            continue;
        }
        // the condition: one architecture compared by `==`, `!=` or `in`
        let mut tested: Option<(&str, bool)> = None;
        for j in k + 1..e {
            if src.kind(j) != Some(Kind::Str) {
                continue;
            }
            let Some(arch) = arch_literal(src.s(j)) else {
                continue;
            };
            let op = if j > k + 1 { src.s(j - 1) } else { "" };
            let op_after = src.s(j + 1);
            let eq = op == "==" || op_after == "==" || op_after == "in";
            let ne = op == "!=" || op_after == "!=";
            if eq || ne {
                tested = Some((arch, eq));
            }
            break;
        }
        let Some((arch, eq)) = tested else { continue };
        // the branch every other architecture takes
        let (other, this) = if eq { (b, a) } else { (a, b) };
        let ov = src.s(other);
        if !low_precision(ov) || low_precision(src.s(this)) && ov == src.s(this) {
            continue;
        }
        if capability_guarded(src, k) {
            continue;
        }
        let untested: Vec<String> = amd
            .iter()
            .filter(|t| t.as_str() != arch)
            .filter(|t| cx.ctx.kb.availability("fp8-matrix", t) == Availability::No)
            .cloned()
            .collect();
        if untested.is_empty() {
            continue;
        }
        let (first, last) = (a0, b);
        let narrower = [
            "fp4", "fp6", "mxfp", "nvfp", "float4", "e2m1", "e3m2", "e2m3",
        ]
        .iter()
        .any(|p| ov.to_ascii_lowercase().contains(p));
        let lacks = if narrower {
            "have no 8-bit float matrix support, let alone a narrower format"
        } else {
            "have no 8-bit float matrix support"
        };
        let msg = format!(
            "`{}` gives `{ov}` to every AMD architecture except {arch}: {} in scope take it and {lacks}",
            cx.code(first, last),
            untested.join(", ")
        );
        cx.report_with(&META, META.severity, untested, first, last, msg, "list the architectures that have the format and give the others a fallback (bf16, fp16)");
    }
}

/// Whether the line of token `k` sits in a block whose `if`/`elif` already limits the
/// architectures (`if arch in FP8_ARCHS:`, `if supports_fp8(arch):`, `if arch.startswith(...)`).
fn capability_guarded(src: &crate::python::lex::PySrc, k: usize) -> bool {
    let li = src
        .lines
        .partition_point(|l| l.first <= k)
        .saturating_sub(1);
    let Some(line) = src.lines.get(li) else {
        return false;
    };
    let mut indent = line.indent;
    for l in src.lines[..li].iter().rev() {
        if l.indent >= indent {
            continue;
        }
        indent = l.indent;
        let head = src.s(l.first);
        if matches!(head, "if" | "elif") {
            let limits = (l.first..l.end).any(|j| {
                let w = src.s(j);
                let lw = w.to_ascii_lowercase();
                src.is_name(j, "in")
                    || w == "startswith"
                    || lw.contains("support")
                    || lw.contains("fp8")
                    || lw.contains("fp4")
                    || lw.starts_with("has_")
                    || lw.starts_with("is_fp")
            });
            if limits {
                return true;
            }
        }
        if matches!(head, "def" | "class") || indent == 0 {
            break;
        }
    }
    false
}
