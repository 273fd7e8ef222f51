//! Portability hazards as rules: one file per hazard, each a function from the planning
//! context to at most one risk entry, listed once in [`RULES`]. Each rule's doc comment says
//! when it fires; the tests in each file plan a spec where it must fire and one where it must
//! not. The register in [`super::risks`] runs them after its own entries.

use super::Target;
use crate::model::Risk;
use crate::spec::Spec;
use kplan_kb::Kb;

mod cross_block;
mod fp8_fnuz_scale;
mod gelu_approximation;
mod gguf_k_quant;
mod half_type_names;
mod launch_bounds;
mod lds_banks;
mod matrix_layout;

/// What a rule reads: the spec, the KB, every target, and the GPU targets the strategy writes
/// kernel code for (with the abstraction that code is written in).
pub struct Cx<'a, 'kb> {
    pub spec: &'a Spec,
    pub kb: &'kb Kb,
    pub targets: &'a [Target<'kb>],
    pub coded: Vec<(&'a Target<'kb>, &'a str)>,
}

impl Cx<'_, '_> {
    pub(crate) fn coded_targets(&self) -> impl Iterator<Item = &Target<'_>> {
        self.coded.iter().map(|(t, _)| *t)
    }
    /// Coded targets whose code is CUDA/HIP C++ (not Triton or another language).
    pub(crate) fn cpp_coded(&self) -> impl Iterator<Item = &Target<'_>> {
        self.coded
            .iter()
            .filter(|(_, a)| {
                matches!(
                    *a,
                    "per-backend" | "hip-single-source" | "cutlass" | "composable-kernel"
                )
            })
            .map(|(t, _)| *t)
    }
}

pub type Rule = fn(&Cx) -> Option<Risk>;

/// Every hazard rule, in register order.
pub const RULES: [(&str, Rule); 8] = [
    ("lds-bank-layout", lds_banks::check),
    ("matrix-operand-layout", matrix_layout::check),
    ("amd-launch-bounds", launch_bounds::check),
    ("half-type-names", half_type_names::check),
    ("cross-block-progress", cross_block::check),
    ("fp8-fnuz-scale", fp8_fnuz_scale::check),
    ("gelu-approximation", gelu_approximation::check),
    ("gguf-k-quant-layout", gguf_k_quant::check),
];

pub fn run(cx: &Cx) -> Vec<Risk> {
    RULES.iter().filter_map(|(_, r)| r(cx)).collect()
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::model::Plan;

    /// Plans a spec with the compiled KB and returns the risk ids.
    pub fn risk_ids(spec: &str) -> Vec<String> {
        plan(spec).risks.iter().map(|r| r.id.clone()).collect()
    }
    pub fn plan(spec: &str) -> Plan {
        let kb = kplan_kb::Kb::builtin();
        let s = crate::parse_spec(spec, kb).expect("spec parses");
        crate::build_plan(&s, kb, &Default::default())
    }
}
