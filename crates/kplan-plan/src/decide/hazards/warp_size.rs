//! `warp-size`: hand-written GPU code for targets whose warp/wavefront sizes differ (32 on
//! NVIDIA and RDNA, 64 on CDNA), or a target with a selectable size. Code that writes 32 for
//! the lane count, a 32-bit ballot or a shuffle loop breaks on the other size [LCPP-11519].

use super::test_support::{ELEMENTWISE, GEMM};
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Warp / wavefront size.
    let mut sizes: BTreeMap<u32, Vec<&Target>> = BTreeMap::new();
    for t in coded.iter() {
        if let Some(w) = t.warp() {
            sizes.entry(w).or_default().push(t);
        }
        for w in &t.arch.warp_sizes {
            if Some(*w) != t.warp() {
                sizes.entry(*w).or_default().push(t);
            }
        }
    }
    if sizes.len() > 1 {
        let affected: Vec<&Target> = coded
            .iter()
            .copied()
            .filter(|t| t.warp() != Some(32) || t.arch.warp_sizes.len() > 1)
            .collect();
        let evidence: Vec<String> = coded
            .iter()
            .map(|t| {
                format!(
                    "{}: warp size {} [{}]",
                    t.name,
                    warp_text(t),
                    t.arch.warp_size.source
                )
            })
            .collect();
        let mut srcs: Vec<String> = coded
            .iter()
            .map(|t| t.arch.warp_size.source.clone())
            .collect();
        srcs.push("LCPP-11519".into());
        // Every target runs 32 lanes by default (NVIDIA, RDNA): the other size is a compile
        // mode the plan does not use, so the hazard is a latent one.
        let wave32_only = coded.iter().all(|t| t.warp() == Some(32));
        let mut evidence = evidence;
        if wave32_only {
            evidence.push("every target in scope runs wave32 by default; RDNA's wave64 is a compile mode (-mwavefrontsize64) the HIP runtime does not support [HIP-hwfeat], so the plan builds wave32 only".into());
            srcs.push("HIP-hwfeat".into());
            srcs.sort();
            srcs.dedup();
        }
        srcs.sort();
        srcs.dedup();
        risks.push(
            Risk::builder("warp-size", "hazard", if wave32_only { "low" } else { "high" })
                .title({
                    let all = sizes.keys().map(|w| w.to_string()).collect::<Vec<_>>();
                    let defaults: std::collections::BTreeSet<u32> =
                        coded.iter().filter_map(|t| t.warp()).collect();
                    if defaults.len() == 1 {
                        // Every coded target defaults to the same size; the others are a
                        // compile mode. Where a library covers the rest, the coded ones are named.
                        let on = if coded.len() < targets.iter().filter(|t| t.is_gpu()).count() {
                            format!("on {}", names(&coded).join(", "))
                        } else {
                            "on every target".to_string()
                        };
                        format!(
                            "warp/wavefront size is {} {on} by default but selectable ({})",
                            defaults.iter().next().copied().unwrap_or(0),
                            all.join("/")
                        )
                    } else {
                        format!("warp/wavefront size differs across targets ({})", all.join(" vs "))
                    }
                })
                .targets(names(&affected))
                .mitigation(if wave32_only {
                    "every target runs 32 lanes: build RDNA targets wave32 (never -mwavefrontsize64) and size blocks in \
                     multiples of 32; keep the lane count in the header's `KPLAN_WARP_SIZE` rather than a literal 32 so \
                     adding a CDNA (wave64) target later is a rebuild, not a rewrite (`warpSize` is not constexpr on ROCm 7)"
                        .to_string()
                } else if coded
                    .iter()
                    .all(|t| cx.abstraction(t) == Abstraction::Triton)
                {
                    "Triton keeps lanes inside tl.* operations, so kernel code has no warp size; the exposure is the launch: \
                     never derive thread counts from 32, and tune num_warps per backend (risk `triton-num-warps`)"
                        .to_string()
                } else {
                    "never write 32: where the size must be a compile-time constant (array extents, unrolled shuffle \
                     loops, template arguments) use the header's `KPLAN_WARP_SIZE` or a per-target template parameter; \
                     `warpSize` is a run-time value only (it is not constexpr on ROCm 7) and the host sizes launches from \
                     the device query; use 64-bit ballot/activemask types; loop shuffle reductions from KPLAN_WARP_SIZE/2; \
                     make block sizes multiples of 64 so they are whole warps everywhere; size per-warp shared buffers by \
                     blockDim / KPLAN_WARP_SIZE"
                        .to_string()
                })
                .evidence(evidence)
                .sources(srcs)
                .build(),
        );
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "warp-size",
    fires: &[ELEMENTWISE],
    silent: &[
        ELEMENTWISE.targets(&["h100", "a100"]),
        GEMM.dtypes(&["bf16", "fp32"]).allowed(&["vendor-library"]),
    ],
};
