//! `float-atomic-order`: the kernel accumulates floating-point values with atomic adds (a
//! spec's `atomics` / `*-atomic-add` feature on a float accumulator, a scatter or embedding
//! backward that reduces with `sum`): the order of the adds changes run to run, so the results
//! are not bitwise reproducible. High when the spec asks for deterministic results.

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    let spec = cx.spec;
    let float_acc = !spec.compute.is_integer() && !spec.output.is_integer();
    let feature = spec
        .features
        .iter()
        .find(|f| f.ends_with("-atomic-add") && !f.starts_with("int"));
    if !float_acc || feature.is_none() || cx.coded.is_empty() {
        return Vec::new();
    }
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
        .evidence([format!(
            "feature `{}` on a {} accumulator; deterministic required: {}",
            feature.map(String::as_str).unwrap_or_default(),
            spec.compute.as_str(),
            spec.modifiers.deterministic
        )])
        .build()]
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "float-atomic-order",
    fires: &[ELEMENTWISE.kernel(&["features = [\"atomics\"]"])],
    silent: &[
        ELEMENTWISE,
        ELEMENTWISE
            .dtypes(&["int32"])
            .kernel(&["features = [\"atomics\"]"]),
    ],
};
