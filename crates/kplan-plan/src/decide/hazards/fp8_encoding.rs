//! `fp8-encoding`: any fp8 tensor (storage, compute, output, KV cache) on targets whose fp8
//! encodings differ (OCP e4m3fn/e5m2 vs FNUZ on gfx942), differ from the spec's encoding, or
//! have neither: scales computed for one encoding's max (448 vs 240) are wrong on the other.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // fp8 encodings.
    // Any fp8 tensor: storage, compute, output (a quantize kernel's scale goes wrong there), KV.
    if spec.uses_fp8() {
        let ocp: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability("fp8-ocp", &t.arch.id) == Availability::Yes)
            .collect();
        let fnuz: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability("fp8-fnuz", &t.arch.id) == Availability::Yes)
            .collect();
        let neither: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| {
                !ocp.iter().any(|o| o.name == t.name) && !fnuz.iter().any(|o| o.name == t.name)
            })
            .collect();
        let fnuz_only: Vec<&Target> = fnuz
            .iter()
            .copied()
            .filter(|t| !ocp.iter().any(|o| o.name == t.name))
            .collect();
        let ocp_only: Vec<&Target> = ocp
            .iter()
            .copied()
            .filter(|t| !fnuz.iter().any(|o| o.name == t.name))
            .collect();
        let mismatch_with_spec: Vec<&Target> = match spec.fp8_encoding {
            Some(Fp8Encoding::Ocp) => fnuz_only.clone(),
            Some(Fp8Encoding::Fnuz) => ocp_only.clone(),
            None => Vec::new(),
        };
        if (!fnuz_only.is_empty() && !ocp.is_empty())
            || !mismatch_with_spec.is_empty()
            || !neither.is_empty()
        {
            let mut affected = fnuz_only.clone();
            affected.extend(
                mismatch_with_spec
                    .iter()
                    .copied()
                    .filter(|t| !fnuz_only.iter().any(|o| o.name == t.name)),
            );
            affected.extend(neither.iter().copied());
            risks.push(
                Risk::builder("fp8-encoding", "dtype", "high")
                    .title("fp8 encodings differ: OCP e4m3fn/e5m2 vs FNUZ e4m3fnuz/e5m2fnuz")
                    .targets(names(&affected))
                    .mitigation({
                        let mut m = String::from("keep one logical fp8 format at the API boundary and convert per target; FNUZ has no negative zero, \
                                 a different exponent bias and max (e4m3fnuz 240 vs e4m3fn 448): scale factors must be computed per \
                                 encoding, and the CPU reference must emulate the target's encoding");
                        if spec.output == Dtype::Fp8 || spec.modifiers.kv_dtype == Some(Dtype::Fp8) {
                            m.push_str("; the fp8 output is written with a saturating conversion (satfinite: clamp to the encoding's max), \
                                        not one that overflows to NaN/Inf, with the scale from absmax / max of the target's encoding");
                        }
                        m
                    })
                    .fallback(if spec.op.uses_matrix_units() {
                        "where no fp8 matrix path exists, upconvert to bf16/fp16 and use those matrix units (2x the bytes, half the peak)"
                    } else {
                        "where a target has no fp8 conversion instructions, convert in software (bit manipulation per element): a few ALU ops per value on a memory-bound kernel"
                    })
                    .evidence(gpu
                        .iter()
                        .map(|t| {
                            format!(
                                "{}: OCP {}, FNUZ {}",
                                t.name,
                                crate::decide::backend::avail_str(kb.availability("fp8-ocp", &t.arch.id)),
                                crate::decide::backend::avail_str(kb.availability("fp8-fnuz", &t.arch.id))
                            )
                        }))
                    .sources(gpu
                        .iter()
                        .flat_map(|t| ["fp8-ocp", "fp8-fnuz"].into_iter().filter_map(|f| kb.support(f, &t.arch.id).map(|s| s.source.clone())))
                        .collect::<std::collections::BTreeSet<_>>())
                    .build(),
            );
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "fp8-encoding",
    fires: &[ELEMENTWISE.dtypes(&["fp8", "fp32"])],
    silent: &[ELEMENTWISE.dtypes(&["fp16", "fp32"])],
};
