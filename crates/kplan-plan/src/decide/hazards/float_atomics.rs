//! `float-atomic-order`: kernel code accumulates floating-point values with atomic adds (a
//! spec's `atomics` / `*-atomic-add` feature on a float accumulator, a float histogram, a
//! scatter that adds): the order of the adds changes run to run, so the results are not
//! bitwise reproducible. High when the spec asks for deterministic results. The evidence quotes
//! the KB's atomic-add support for the accumulator dtype per target.

use super::test_support::ELEMENTWISE;
use super::*;
use crate::spec::Op;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let (spec, kb) = (cx.spec, cx.kb);
    let float_acc = !spec.compute.is_integer() && !spec.output.is_integer();
    // A float atomic named as a feature, or an op whose kernel accumulates with atomics by
    // construction: a weighted (float) histogram, a scatter that adds.
    let named = spec
        .features
        .iter()
        .find(|f| f.ends_with("-atomic-add") && !f.starts_with("int"))
        .map(|f| format!("feature `{f}`"));
    let adds = matches!(
        spec.modifiers.reduce.as_deref(),
        None | Some("sum" | "add" | "mean")
    );
    let by_op = match spec.op {
        Op::Histogram => Some("a weighted (float) histogram accumulates bins with atomic adds"),
        Op::Scatter if adds => Some("a scatter-add accumulates rows with atomic adds"),
        _ => None,
    }
    .map(String::from);
    let Some(why) = named.or(by_op) else {
        return Vec::new();
    };
    if !float_acc || cx.coded.is_empty() {
        return Vec::new();
    }
    let feature = crate::spec::atomic_feature(spec.compute, spec.output);
    let support: Vec<String> = cx
        .coded
        .iter()
        .filter(|t| kb.support(feature, &t.arch.id).is_some())
        .map(|t| support_evidence(kb, t, feature))
        .collect();
    let severity = if spec.modifiers.deterministic {
        "high"
    } else {
        "low"
    };
    vec![Risk::builder("float-atomic-order", "hazard", severity)
        .title("floating-point atomic adds make the result depend on their order: not deterministic run to run")
        .targets(names(&cx.coded))
        .mitigation(if spec.modifiers.deterministic {
            "deterministic results are required: replace the float atomics by an ordered reduction (sort contributions by destination and reduce segments, or per-block partials combined in index order), or accumulate in fixed point (integer atomics are order-free)"
        } else {
            "compare against the CPU reference with a tolerance that covers reordering; keep a deterministic (sorted or two-pass) path behind a flag for debugging and for users who need bitwise-identical runs"
        })
        .fallback("an ordered reduction: typically 1.5-3x slower than atomics where contention is low")
        .evidence(
            std::iter::once(format!(
                "{why} on a {} accumulator; deterministic required: {}",
                spec.compute.as_str(),
                spec.modifiers.deterministic
            ))
            .chain(support),
        )
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "float-atomic-order",
    fires: &[
        ELEMENTWISE.kernel(&["features = [\"atomics\"]"]),
        ELEMENTWISE
            .op("histogram")
            .dtypes(&["fp32", "fp64", "fp64"])
            .problem("n = 1048576, bins = 256"),
    ],
    silent: &[
        ELEMENTWISE,
        ELEMENTWISE
            .dtypes(&["int32"])
            .kernel(&["features = [\"atomics\"]"]),
    ],
};
