//! `triton-inline-asm`: `tl.inline_asm_elementwise` whose assembly only one vendor accepts.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub const META: RuleMeta = RuleMeta {
    id: "triton-inline-asm",
    summary: "`tl.inline_asm_elementwise` with vendor-specific assembly and no backend check",
    what: "Finds `tl.inline_asm_elementwise(...)` calls outside a backend check. PTX (`cvt.`, `mov.b32`, `prmt`, \
`lop3`, `%r`, `.reg`) is reported for AMD targets; AMDGPU assembly (`v_`, `s_`) for NVIDIA targets.",
    why: "The assembly string is passed to the backend verbatim. PTX does not assemble for AMD GPUs and AMDGPU \
instructions do not assemble for NVIDIA, so the kernel fails to compile on the other vendor (Triton has no \
translation).",
    example: "y = tl.inline_asm_elementwise(\"cvt.rn.f16x2.f32 $0, $1, $2;\", \"=r,r,r\", [a, b], dtype=tl.float16, is_pure=True, pack=1)",
    use_instead: "if IS_CUDA:  # constexpr from target.backend == \"cuda\"\n    y = tl.inline_asm_elementwise(\"cvt.rn.f16x2.f32 $0, $1, $2;\", \"=r,r,r\", [a, b], dtype=tl.float16, is_pure=True, pack=1)\nelse:\n    y = a.to(tl.float16)",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["inline-ptx", "inline-gcn-asm"],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    for k in 0..src.toks.len() {
        if !src.is_name(k, "inline_asm_elementwise") || src.s(k + 1) != "(" {
            continue;
        }
        if cx.guarded(k) || switched(cx, k) {
            continue;
        }
        let asm: String = src
            .args(k + 1)
            .first()
            .map(|&(a, b)| {
                (a..=b)
                    .filter(|&i| src.kind(i) == Some(Kind::Str))
                    .map(|i| src.s(i))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let amd_asm = asm.contains("v_") || asm.contains("s_waitcnt") || asm.contains("s_mov");
        let (vendor, dialect, other) = if amd_asm {
            (Vendor::Nvidia, "AMDGPU assembly", "NVIDIA")
        } else {
            (Vendor::Amd, "PTX", "AMD")
        };
        let targets = cx.ctx.vendor_targets(vendor);
        if targets.is_empty() {
            continue;
        }
        let a = src.dotted_start(k);
        let msg = format!(
            "`{}` embeds {dialect}, which does not assemble for {other} targets",
            cx.code(a, k)
        );
        cx.report_with(
            &META,
            META.severity,
            targets,
            a,
            k,
            msg,
            "guard it with a backend constexpr and give the other vendor a plain Triton expression",
        );
    }
}

/// Under an `if` on an upper-case constexpr naming a backend or the assembly (IS_CUDA, USE_PTX, USE_ASM).
fn switched(cx: &Cx, k: usize) -> bool {
    let src = cx.src;
    let Some(line) = src.line_of(k) else {
        return false;
    };
    let li = src.lines.partition_point(|l| l.end <= k);
    let mut indent = line.indent;
    for l in src.lines[..li].iter().rev() {
        if l.indent < indent {
            indent = l.indent;
            if matches!(src.s(l.first), "if" | "elif" | "else") {
                let cond = src.snippet(l.first, l.end - 1).to_ascii_uppercase();
                if ["CUDA", "PTX", "ASM", "NVIDIA", "HIP", "AMD"]
                    .iter()
                    .any(|w| cond.contains(w))
                {
                    return true;
                }
            }
            if src.s(l.first) == "def" {
                break;
            }
        }
    }
    false
}
