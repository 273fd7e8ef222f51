//! `wave64-lane-math`: lane arithmetic fixed to 64 lanes (`& 0x3f`, `% 64`, `>> 6`, `/ 64`) in
//! code compiled for every AMD target.

use crate::cuda::{is_lane_ident, is_thread_ident, Cx};
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "wave64-lane-math",
    summary: "lane or wavefront arithmetic fixed to 64 lanes in code compiled for every AMD target",
    what: "Finds `tid & 0x3f`, `tid & 63`, `lane % 64`, `tid >> 6` and `tid / 64` in code that is compiled for \
AMD (an AMD-only branch such as `#ifdef __HIP_PLATFORM_AMD__`, or a HIP-only file) unless the branch tests \
for a wave64 architecture (`__GFX9__`, `__gfx942__`, `__AMDGCN_WAVEFRONT_SIZE == 64`).",
    why: "Only CDNA/GCN GPUs run 64-lane wavefronts. RDNA GPUs (gfx10, gfx11, gfx12) run 32-lane \
wavefronts by default under HIP: a lane id taken modulo 64 addresses lanes that do not exist, a wavefront id \
from `>> 6` puts two wavefronts in one slot, and reductions or scans read the wrong lanes. With no wave32 \
target in scope the finding is a note: it bites as soon as RDNA is.",
    example: "#ifdef __HIP_PLATFORM_AMD__\nint lane = threadIdx.x & 0x3f;\nint wave = threadIdx.x >> 6;\n#endif",
    use_instead: "int lane = threadIdx.x % warpSize;\nint wave = threadIdx.x / warpSize;",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !(cx.has("0x3f")
        || cx.has("0x3F")
        || cx.has("63")
        || cx.has("64")
        || cx.has(">> 6")
        || cx.has(">>6"))
    {
        return;
    }
    let wave32: Vec<String> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor == Vendor::Amd && !t.is_wave64())
        .map(|t| t.arch.clone())
        .collect();
    let amd: Vec<String> = cx.ctx.vendor_targets(Vendor::Amd);
    if amd.is_empty() {
        return;
    }
    let (sev, targets) = if wave32.is_empty() {
        (Severity::Note, amd)
    } else {
        (META.severity, wave32)
    };
    let src = cx.src;
    let n = src.toks.len();
    for k in 1..n.saturating_sub(1) {
        let op = src.s(k);
        let Some(v) = src.int(k + 1) else { continue };
        let hit = match op {
            "&" | "&=" => v == 63,
            "%" | "/" | "%=" | "/=" => v == 64,
            ">>" | ">>=" => v == 6,
            _ => false,
        };
        if !hit || matches!(src.s(k + 2), "*" | "." | "(" | "[") {
            continue;
        }
        if !cx.amd_code(k) || cx.amd_wave(k) == 64 || cx.mfma_branch(k) {
            continue;
        }
        let Some(a) = cx.left_operand(k) else {
            continue;
        };
        let lane_like = cx.any_ident(a, k - 1, |s| is_thread_ident(s) || is_lane_ident(s));
        let device = src.in_device(k) || cx.any_ident(a, k - 1, |s| s == "threadIdx");
        if !(lane_like && device) {
            continue;
        }
        let what = match op {
            "&" | "&=" | "%" | "%=" => "takes the lane",
            _ => "takes the wavefront index",
        };
        let msg = format!(
            "`{}` {what} assuming 64-lane wavefronts on every AMD target; RDNA (gfx10/gfx11/gfx12) runs 32",
            cx.snippet(a, k + 1)
        );
        cx.report_with(&META, sev, targets.clone(), a, k + 1, msg, "use `warpSize` (or test for the wave64 architectures: `__GFX9__`, `__AMDGCN_WAVEFRONT_SIZE == 64`)");
    }
}
