//! `triton-fixed-block-size`: a launch that fixes num_warps / BLOCK sizes for every backend.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::{is_num_warps_name, Cx};
use crate::rule::{Lang, RuleMeta, Scope};

pub const META: RuleMeta = RuleMeta {
    id: "triton-fixed-block-size",
    summary: "kernel launched with literal `num_warps` / block sizes, no autotune config and no per-backend choice",
    what: "Finds launches `kernel[grid](..., BLOCK_SIZE=1024, num_warps=8)` whose `num_warps` or block-size \
constexprs are integer literals, of kernels without `@triton.autotune`, in functions that do not branch on the \
backend.",
    why: "Launch parameters tuned on one GPU rarely carry over: `num_warps` counts 64-lane wavefronts on AMD CDNA \
(the same value is twice the threads), AMD has 64 KiB of LDS where Hopper has 227 KiB, and NVIDIA-tuned settings \
commonly lose 20% to 2x on MI300. Without an autotune config or a per-backend table the kernel runs the NVIDIA \
choice everywhere.",
    example: "softmax_kernel[(rows,)](y, x, n, BLOCK_SIZE=1024, num_warps=8)",
    use_instead: "cfg = LAUNCH[triton.runtime.driver.active.get_current_target().backend]  # per-backend table\nsoftmax_kernel[(rows,)](y, x, n, BLOCK_SIZE=cfg.block, num_warps=cfg.num_warps)",
    severity: Severity::Warning,
    scope: Scope::MultiVendor,
    lang: Lang::Python,
    features: &[],
};

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    let autotuned: Vec<&str> = cx
        .autotuned
        .iter()
        .map(|&d| src.s(src.defs[d].name))
        .collect();
    let kernels: Vec<&str> = cx
        .kernels
        .iter()
        .map(|&d| src.s(src.defs[d].name))
        .collect();
    for k in 0..src.toks.len() {
        // NAME [ grid ] (
        if src.kind(k) != Some(Kind::Name)
            || src.s(k + 1) != "["
            || src.s(k.wrapping_sub(1)) == "." && !kernels.contains(&src.s(k))
        {
            continue;
        }
        let Some(cb) = src.closing(k + 1) else {
            continue;
        };
        if src.s(cb + 1) != "(" {
            continue;
        }
        let name = src.s(k);
        if autotuned.contains(&name) {
            continue;
        }
        let kw = src.kwargs(cb + 1);
        let fixed: Vec<(usize, usize)> = kw
            .iter()
            .filter(|&&(n, vs, ve)| {
                let key = src.s(n);
                vs == ve
                    && src.int(vs).is_some()
                    && (is_num_warps_name(key) || key.to_ascii_uppercase().contains("BLOCK"))
            })
            .map(|&(n, _, ve)| (n, ve))
            .collect();
        let launch =
            kernels.contains(&name) || kw.iter().any(|&(n, _, _)| is_num_warps_name(src.s(n)));
        if fixed.is_empty() || !launch {
            continue;
        }
        if cx.guarded(k) || cx.scope_has_backend_check(k) {
            continue;
        }
        let what: Vec<&str> = fixed.iter().map(|&(a, b)| src.snippet(a, b)).collect();
        let msg = format!(
            "launch of `{name}` fixes {} for every backend",
            what.join(", ")
        );
        let (a, b) = (fixed[0].0, fixed[fixed.len() - 1].1);
        cx.report(&META, a, b, msg, "add a `triton.autotune` config list with AMD entries, or pick these per backend (`get_current_target()`)");
    }
}
