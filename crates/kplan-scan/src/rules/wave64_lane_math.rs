//! `wave64-lane-math`: lane arithmetic fixed to 64 lanes (`& 0x3f`, `% 64`, `>> 6`, `/ 64`) in
//! code compiled for every AMD target.

use crate::cuda::{is_lane_ident, is_thread_ident, is_warp_count_ident, is_wave_count_ident, Cx};
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "wave64-lane-math",
    summary: "lane or wavefront arithmetic fixed to 64 lanes in code compiled for every AMD target",
    what: "Finds `tid & 0x3f`, `tid & 63`, `lane % 64`, `tid >> 6` and `tid / 64` in code that is compiled for \
AMD (an AMD-only branch such as `#ifdef __HIP_PLATFORM_AMD__`, or a HIP-only file) unless the branch tests \
for a wave64 architecture (`__GFX9__`, `__gfx942__`, `__AMDGCN_WAVEFRONT_SIZE == 64`). Also finds thread \
counts made from a number of wavefronts at 64 lanes each (`max_wavefronts * 64`, `64 * num_waves`), in host or \
device code: a count named for wavefronts is AMD code wherever it is; one named for warps (`num_warps * 64`) is \
reported in code compiled for AMD.",
    why: "Only CDNA/GCN GPUs run 64-lane wavefronts. RDNA GPUs (gfx10, gfx11, gfx12) run 32-lane \
wavefronts by default under HIP: a lane id taken modulo 64 addresses lanes that do not exist, a wavefront id \
from `>> 6` puts two wavefronts in one slot, and reductions or scans read the wrong lanes. With no wave32 \
target in scope the finding is a note: it bites as soon as RDNA is.",
    example: "#ifdef __HIP_PLATFORM_AMD__\nint lane = threadIdx.x & 0x3f;\nint wave = threadIdx.x >> 6;\n#endif\nint block_size = max_wavefronts * 64;  // host launch",
    use_instead: "int lane = threadIdx.x % warpSize;\nint wave = threadIdx.x / warpSize;\nint block_size = max_wavefronts * prop.warpSize;  // host launch",
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
    let wave32: Vec<String> = cx.ctx.wave32_amd_targets();
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
        if op == "*" {
            wavefronts_times_64(cx, k, sev, &targets);
            continue;
        }
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
        if !cx.amd_code(k)
            || cx.amd_wave(k) == 64
            || cx.runtime_wave(k) == 64
            || cx.in_arch_alternative(k)
            || cx.mfma_branch(k)
        {
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

/// `max_wavefronts * 64`, `64 * num_waves`: threads counted from a number of wavefronts with a
/// fixed 64 lanes each, in host or device code. A count named for wavefronts is AMD code
/// wherever it is; a count named for warps must sit in code compiled for AMD.
fn wavefronts_times_64(cx: &mut Cx, k: usize, sev: Severity, targets: &[String]) {
    let src = cx.src;
    let (lit, a, b) = if src.int(k + 1) == Some(64) {
        // `x * 64`, not `x * 64 * y` or `x * 64.0`
        if matches!(src.s(k + 2), "*" | "." | "(" | "[") {
            return;
        }
        let Some(a) = cx.left_operand(k) else { return };
        (k + 1, a, k - 1)
    } else if src.int(k - 1) == Some(64) {
        if k >= 2 && matches!(src.s(k - 2), "*" | "/" | "." | ")") {
            return;
        }
        let Some(r) = cx.right_operand(k) else { return };
        (k - 1, k + 1, r)
    } else {
        return;
    };
    let waves = cx.any_ident(a, b, is_wave_count_ident);
    let warps = cx.any_ident(a, b, is_warp_count_ident);
    if !(waves || warps && cx.amd_code(k)) {
        return;
    }
    if cx.nv_only(k) || cx.amd_wave(k) == 64 || cx.runtime_wave(k) == 64 || cx.mfma_branch(k) {
        return;
    }
    let (s, e) = (a.min(lit), b.max(lit));
    let msg = format!(
        "`{}` counts threads from a number of wavefronts at 64 lanes each on every AMD target; RDNA (gfx10/gfx11/gfx12) runs 32",
        cx.snippet(s, e)
    );
    cx.report_with(&META, sev, targets.to_vec(), s, e, msg, "multiply by the device's wavefront size (`hipDeviceProp_t::warpSize` on the host, `warpSize` in device code)");
}
