//! `fp8-fnuz-scale`: the kernel touches fp8 data (storage, compute, output, KV cache or
//! weights) and every GPU target with fp8 is FNUZ-only (gfx942: e4m3fnuz, max 240), while the
//! spec names no encoding or FNUZ. No encoding mix is in scope (that is `fp8-encoding`), but
//! fp8 data produced elsewhere (checkpoints, KV caches written by OCP code, scales calibrated
//! for e4m3fn, max 448) is read through the other encoding: the same bits are half the e4m3fn
//! value, so per-tensor scales must be doubled on load [vLLM-FNUZ], and absmax scales computed
//! here divide by 240, not 448 [features.toml fp8-fnuz]. High when the kernel reads fp8 data
//! (storage, KV cache or weights) that someone else may have produced in OCP fp8 and the spec
//! does not say FNUZ; medium when the spec names FNUZ or the kernel only writes fp8 (its own
//! scales are the whole risk).

use super::test_support::{Fx, ELEMENTWISE};
use super::Cx;
use crate::model::Risk;
use crate::spec::Fp8Encoding;
use kplan_kb::Availability;

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    if !cx.spec.uses_fp8() || cx.spec.fp8_encoding == Some(Fp8Encoding::Ocp) {
        return None;
    }
    let gpu: Vec<_> = cx.targets.iter().filter(|t| t.is_gpu()).collect();
    let ocp = |id: &str| cx.kb.availability("fp8-ocp", id) == Availability::Yes;
    let fnuz = |id: &str| cx.kb.availability("fp8-fnuz", id) == Availability::Yes;
    // A mix of encodings in scope is the `fp8-encoding` risk of the register.
    if gpu.iter().any(|t| ocp(&t.arch.id)) {
        return None;
    }
    let fnuz_only: Vec<String> = gpu
        .iter()
        .filter(|t| fnuz(&t.arch.id))
        .map(|t| t.name.clone())
        .collect();
    if fnuz_only.is_empty() {
        return None;
    }
    let kv = cx.spec.modifiers.kv_dtype == Some(kplan_kb::Dtype::Fp8);
    // fp8 data read from outside the kernel: an OCP producer is possible.
    let fp8 = kplan_kb::Dtype::Fp8;
    let external = cx.spec.storage == fp8 || kv || cx.spec.modifiers.weight_dtype == Some(fp8);
    let named = cx.spec.fp8_encoding == Some(Fp8Encoding::Fnuz);
    let severity = if external && !named { "high" } else { "medium" };
    let mut sources = vec!["vLLM-FNUZ".to_string()];
    sources.extend(gpu.iter().filter_map(|t| {
        cx.kb
            .support("fp8-fnuz", &t.arch.id)
            .map(|s| s.source.clone())
    }));
    sources.sort();
    sources.dedup();
    Some(Risk {
        id: "fp8-fnuz-scale".into(),
        title: format!(
            "fp8 on FNUZ-only targets: e4m3fnuz (max 240) is not e4m3fn (max 448){}",
            if kv { ": a KV cache or checkpoint written in OCP fp8 needs its scales converted" } else { ": fp8 data and scales made for OCP need converting" }
        ),
        kind: "dtype".into(),
        targets: fnuz_only.clone(),
        severity: severity.into(),
        mitigation: format!(
            "compute every scale for the target's encoding (absmax / 240 on e4m3fnuz); where fp8 {} comes from OCP producers (checkpoints, another engine's cache), convert on load: reinterpreting e4m3fn bits as e4m3fnuz halves the value, so double the per-tensor scale and map the e4m3fn negative-zero pattern 0x80 (NaN in FNUZ) to 0; test with values near 240 and 448 against a CPU reference that emulates e4m3fnuz",
            if kv { "KV data" } else { "data" }
        ),
        fallback: Some("store and exchange the tensor in bf16 (twice the bytes) where the producer's encoding cannot be controlled".into()),
        evidence: fnuz_only
            .iter()
            .map(|t| format!("{t}: fp8-fnuz native, fp8-ocp not"))
            .chain(std::iter::once(match (named, external) {
                (true, _) => "the spec names FNUZ: the encoding is settled, the scales and any OCP input remain".to_string(),
                (false, true) => "the kernel reads fp8 data that may come from an OCP producer, and the spec names no encoding".to_string(),
                (false, false) => "the kernel only writes fp8: its own scales (absmax / 240) are the risk".to_string(),
            }))
            .collect(),
        sources,
    })
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = ELEMENTWISE
    .name("d")
    .op("attention")
    .dtypes(&["bf16", "fp32"])
    .problem("batch = 8, heads = 32, kv_heads = 8, seq_q = 1, seq_kv = 8192, head_dim = 128")
    .kernel(&["kv_dtype = \"fp8\""])
    .targets(&["gfx942"])
    .allowed(&[]);

pub(super) const FIXTURES: super::Fixtures = super::Fixtures {
    probe: "fp8-fnuz-scale",
    fires: &[SPEC],
    silent: &[
        SPEC.kernel(&["kv_dtype = \"bf16\""]),
        SPEC.targets(&["gfx942", "sm_90"]),
        SPEC.targets(&["gfx950"]),
    ],
};

#[cfg(test)]
mod tests {
    const SPEC: &str = "[kernel]\nname = \"d\"\nop = \"attention\"\ndtypes = [\"bf16\", \"fp32\"]\nkv_dtype = \"KV\"\nproblem = { batch = 8, heads = 32, kv_heads = 8, seq_q = 1, seq_kv = 8192, head_dim = 128 }\n[backends]\ntargets = [TARGETS]\n";

    fn severity(spec: &str) -> String {
        crate::decide::hazards::test_support::plan(spec)
            .risks
            .into_iter()
            .find(|r| r.id == "fp8-fnuz-scale")
            .expect("raised")
            .severity
    }

    /// High for fp8 read from outside without a named encoding; medium when FNUZ is named
    /// or the kernel only writes fp8.
    #[test]
    fn severity_follows_the_producer_and_the_named_encoding() {
        let kv = SPEC.replace("TARGETS", "\"gfx942\"").replace("KV", "fp8");
        assert_eq!(severity(&kv), "high");
        let named = kv.replace("[\"bf16\", \"fp32\"]", "[\"e4m3fnuz\", \"fp32\"]");
        assert_eq!(severity(&named), "medium");
        let quant = "[kernel]\nname = \"q\"\nop = \"quantize\"\ndtypes = [\"bf16\", \"fp32\", \"fp8\"]\nproblem = { rows = 4096, cols = 4096 }\n[backends]\ntargets = [\"gfx942\"]\n";
        assert_eq!(severity(quant), "medium");
    }
}
