//! `launch-bounds-warp`: `__launch_bounds__` and literal block sizes that are not a multiple of
//! the widest warp in scope, and the second `__launch_bounds__` argument, which means different
//! things on CUDA and HIP.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::consts::Consts;
use crate::rules::launch::{launch_args, literal_block};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "launch-bounds-warp",
    summary: "launch bounds or block size not a multiple of the widest warp in scope",
    what: "Finds `__launch_bounds__(N, ...)` and literal launch block sizes where N is not a multiple of the widest \
warp in scope (64 with a wave64 target), and `__launch_bounds__` with a second argument when an AMD target is in \
scope.",
    why: "A 32- or 96-thread block leaves half of a 64-lane wavefront idle on CDNA and breaks code that assumes \
whole warps. The second `__launch_bounds__` argument is the minimum blocks per SM on CUDA but the minimum \
waves per execution unit on HIP, so the same number asks for a different occupancy.",
    example: "__global__ void __launch_bounds__(96, 4) k(float* x);",
    use_instead: "__global__ void __launch_bounds__(128) k(float* x);  // occupancy hints per target (KPLAN_LAUNCH_BOUNDS)",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    if !(cx.has("<<<") || cx.has("__launch_bounds__")) {
        return;
    }
    let src = cx.src;
    let max_warp = cx.ctx.max_warp_size() as u64;
    let wide = cx.ctx.wave64_targets();
    let amd = cx.ctx.vendor_targets(Vendor::Amd);
    let mut consts: Option<Consts> = None;
    for i in 0..src.toks.len() {
        if cx.guarded(i) {
            continue;
        }
        if src.is(i, "__launch_bounds__") && src.is(i + 1, "(") {
            let args = cx.call_args(i + 1);
            let Some(&(a, b)) = args.first() else {
                continue;
            };
            let c = consts.get_or_insert_with(|| Consts::collect(src));
            if let Some(v) = c.eval(src, a, b) {
                if !wide.is_empty() && v % max_warp != 0 {
                    let msg = format!("`__launch_bounds__({v})` is not a multiple of the {max_warp}-lane wavefront");
                    cx.report_with(
                        &META,
                        Severity::Warning,
                        wide.clone(),
                        a,
                        b,
                        msg,
                        "use a multiple of the widest warp in scope (64)",
                    );
                }
            }
            let second_is_one = args
                .get(1)
                .is_some_and(|&(a2, b2)| a2 == b2 && src.int(a2) == Some(1));
            if args.len() >= 2 && !amd.is_empty() && !second_is_one {
                let (a2, b2) = args[1];
                let msg = format!("second `__launch_bounds__` argument `{}` means min blocks per SM on CUDA but min waves per EU on HIP", cx.snippet(a2, b2));
                cx.report_with(
                    &META,
                    Severity::Warning,
                    amd.clone(),
                    a2,
                    b2,
                    msg,
                    "give each platform its own value (a header macro), or drop the occupancy hint",
                );
            }
        } else if src.is(i, "<<<") && !wide.is_empty() {
            let Some((args, _)) = launch_args(src, i) else {
                continue;
            };
            let Some(&(a, b)) = args.get(1) else { continue };
            if let Some(v) = literal_block(src, a, b) {
                if v % max_warp != 0 && v > 1 {
                    let msg = format!("launch block of {v} threads is not a multiple of the {max_warp}-lane wavefront");
                    cx.report_with(
                        &META,
                        Severity::Warning,
                        wide.clone(),
                        a,
                        b,
                        msg,
                        "use a multiple of the widest warp in scope (64)",
                    );
                }
            }
        }
    }
}
