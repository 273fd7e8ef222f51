//! `python-wave64-for-every-amd`: `64 if <running on HIP> else 32` in Python: the warp width
//! chosen by vendor, which is wrong on RDNA (wave32).

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub const META: RuleMeta = RuleMeta {
    id: "python-wave64-for-every-amd",
    summary: "warp width chosen as `64 if <HIP> else 32` (RDNA runs 32-lane wavefronts)",
    what: "Finds conditional expressions that pick the warp width by vendor: `64 if torch.version.hip else 32`, \
`Constant(64) if runtime.is_hip else Constant(32)`, `'64' if is_hip else '32'`, and the mirrored `32 if ... \
else 64` on a CUDA test. Also finds a warp-width name assigned a plain 64 (`WARP_SIZE = 64`, \
`wavefront_size = 64`), which launch code then multiplies into block sizes for every device.",
    why: "Only CDNA/GCN GPUs have 64-lane wavefronts. RDNA GPUs (gfx10, gfx11, gfx12), which ROCm also \
supports, run 32-lane wavefronts: a width of 64 for every HIP device makes shuffles, masks and generated \
kernels address lanes that do not exist there. With no wave32 target in scope the finding is a note.",
    example: "width = 64 if torch.version.hip else 32",
    use_instead: "width = torch.cuda.get_device_properties(dev).warp_size",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

/// Token `i` as a number, or a string holding one (`'64'`).
fn literal(cx: &Cx, i: usize) -> Option<i64> {
    let src = cx.src;
    match src.kind(i)? {
        Kind::Number => src.int(i),
        Kind::Str => src
            .s(i)
            .trim_matches(|c| c == '\'' || c == '"')
            .parse::<i64>()
            .ok(),
        _ => None,
    }
}

/// 64 or 32 as a number, a string (`'64'`) or a one-argument call around one (`Constant(64)`):
/// the value, and the tokens spanned, searching backwards from `end`.
fn width_before(cx: &Cx, end: usize) -> Option<(i64, usize)> {
    let src = cx.src;
    if let Some(v) = literal(cx, end) {
        return Some((v, end));
    }
    if src.s(end) == ")" && end >= 3 && src.s(end - 2) == "(" {
        return literal(cx, end - 1).map(|v| (v, end - 3));
    }
    None
}

/// The same, searching forwards from `start`.
fn width_after(cx: &Cx, start: usize) -> Option<(i64, usize)> {
    let src = cx.src;
    if let Some(v) = literal(cx, start) {
        return Some((v, start));
    }
    if src.kind(start) == Some(Kind::Name) && src.s(start + 1) == "(" && src.s(start + 3) == ")" {
        return literal(cx, start + 2).map(|v| (v, start + 3));
    }
    None
}

fn is_hip_word(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.split('_')
        .any(|p| p == "hip" || p == "rocm" || p == "amd" || p == "iship")
        || l == "is_hip"
        || l.contains("rocm")
}

fn is_cuda_word(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.split('_').any(|p| p == "cuda" || p == "nvidia")
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let wave32: Vec<String> = cx.ctx.wave32_amd_targets();
    let amd = cx.ctx.vendor_targets(Vendor::Amd);
    if amd.is_empty() {
        return;
    }
    let (sev, targets) = if wave32.is_empty() {
        (Severity::Note, amd.clone())
    } else {
        (META.severity, wave32.clone())
    };
    // `WARP_SIZE = 64` on a line of its own
    for l in &src.lines {
        let f = l.first;
        if l.end != f + 3
            || src.kind(f) != Some(Kind::Name)
            || src.s(f + 1) != "="
            || src.int(f + 2) != Some(64)
        {
            continue;
        }
        let name = src.s(f);
        let low = name.to_ascii_lowercase();
        if !crate::rules::warp_size_constant::warp_width_name(name)
            || low.contains("max")
            || low.contains("upper")
            || low.contains("limit")
        {
            continue;
        }
        let msg = format!(
            "`{}` fixes the warp width at 64 for every device; RDNA (gfx10/gfx11/gfx12) runs 32-lane wavefronts, and NVIDIA warps have 32 lanes",
            cx.code(f, f + 2)
        );
        cx.report_with(&META, sev, targets.clone(), f, f + 2, msg, "ask the device for its warp size (`torch.cuda.get_device_properties(d).warp_size`, `hipDeviceProp_t::warpSize`)");
    }
    for k in 1..n {
        if !src.is_name(k, "if") {
            continue;
        }
        let Some((a, first)) = width_before(cx, k - 1) else {
            continue;
        };
        let Some(e) = (k + 1..n.min(k + 16)).find(|&j| src.is_name(j, "else")) else {
            continue;
        };
        let Some((b, last)) = width_after(cx, e + 1) else {
            continue;
        };
        let cond_hip = (k + 1..e).any(|j| src.kind(j) == Some(Kind::Name) && is_hip_word(src.s(j)));
        let cond_cuda =
            (k + 1..e).any(|j| src.kind(j) == Some(Kind::Name) && is_cuda_word(src.s(j)));
        let negated = (k + 1..e).any(|j| src.is_name(j, "not"));
        let amd_gets = match (cond_hip, cond_cuda, negated) {
            (true, false, false) => a,
            (true, false, true) => b,
            (false, true, false) => b,
            (false, true, true) => a,
            _ => continue,
        };
        if !((a == 64 && b == 32) || (a == 32 && b == 64)) || amd_gets != 64 {
            continue;
        }
        // an upper bound (`max_lanes = 64 if hip else 32`) is right on every AMD GPU
        let target = (first >= 2 && src.s(first - 1) == "=").then(|| src.s(first - 2));
        if target.is_some_and(|t| t.to_ascii_lowercase().contains("max")) {
            continue;
        }
        let (sev, targets) = if wave32.is_empty() {
            (Severity::Note, amd.clone())
        } else {
            (META.severity, wave32.clone())
        };
        let msg = format!(
            "`{}` gives every AMD GPU a 64-lane warp; RDNA (gfx10/gfx11/gfx12) runs 32-lane wavefronts",
            cx.code(first, last)
        );
        cx.report_with(&META, sev, targets, first, last, msg, "ask the device for its warp size (`torch.cuda.get_device_properties(d).warp_size`, `hipDeviceProp_t::warpSize`)");
    }
}
