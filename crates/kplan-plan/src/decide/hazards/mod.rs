//! The risk register's rules: one file per risk, each a function from the planning context
//! (spec, KB, op knowledge, resolved targets and the chosen strategy) to the risk entries it
//! raises, listed once in [`RULES`] in register order. Each rule's doc comment says when it
//! fires; each entry carries fixture specs that must raise it and specs that must not, and a
//! test walks the registry.

#![allow(clippy::needless_borrow)]

use super::strategy::Decided;
use super::{join_names, kib, Abstraction, Target};
use crate::model::Risk;
use crate::spec::{Fp8Encoding, Spec};
use kplan_kb::{Availability, Dtype, Kb, OpInfo, Vendor};
use std::collections::BTreeMap;

mod amd_tuning;
mod blackwell_arch_specific;
mod consumer_mma;
mod cpu_fallback_drift;
mod cross_block;
mod dtype_support;
mod features;
mod float_atomics;
mod fp64_rate;
mod fp8_encoding;
mod fp8_fnuz_scale;
mod gelu_approximation;
mod gguf_k_quant;
mod half_type_names;
mod inline_asm;
mod int32_index_overflow;
mod latency_bound;
mod launch_bounds;
mod lds_banks;
mod library_selection;
mod matrix_layout;
mod multi_die;
mod op_knowledge;
mod rdna_matrix;
mod rdna_wave32;
mod separate_language;
mod shared_memory_budget;
mod stated_concerns;
pub mod test_support;
mod triton_num_warps;
mod warp_size;

/// What a rule reads: the spec, the KB, the op knowledge entry, every target, the strategy
/// (aligned with the targets), the GPU targets and the GPU targets the strategy writes kernel
/// code for (a library or framework call meets no kernel-code hazard).
pub struct Cx<'a, 'kb> {
    pub spec: &'a Spec,
    pub kb: &'kb Kb,
    pub op: Option<&'kb OpInfo>,
    pub targets: &'a [Target<'kb>],
    pub strategy: &'a Decided,
    pub gpu: Vec<&'a Target<'kb>>,
    pub coded: Vec<&'a Target<'kb>>,
}

impl<'a, 'kb> Cx<'a, 'kb> {
    pub fn new(cx: &'a super::Context<'a, 'kb>, strategy: &'a Decided) -> Self {
        let gpu: Vec<&Target> = cx.gpu().collect();
        let coded = gpu
            .iter()
            .copied()
            .filter(|t| !strategy.abstraction(t.index).is_library())
            .collect();
        Cx {
            spec: cx.spec,
            kb: cx.kb,
            op: cx.op,
            targets: &cx.targets,
            strategy,
            gpu,
            coded,
        }
    }
    /// The abstraction the strategy writes this target's code in.
    pub(crate) fn abstraction(&self, t: &Target) -> Abstraction {
        self.strategy.abstraction(t.index)
    }
    pub(crate) fn coded_targets(&self) -> impl Iterator<Item = &Target<'_>> {
        self.coded.iter().copied()
    }
    /// Coded targets whose code is CUDA/HIP C++ (not Triton or another language).
    pub(crate) fn cpp_coded(&self) -> impl Iterator<Item = &Target<'_>> {
        self.coded
            .iter()
            .copied()
            .filter(|t| self.abstraction(t).is_cuda_hip())
    }
}

/// The spec names of targets, in order.
fn names(v: &[&Target]) -> Vec<String> {
    v.iter().map(|t| t.name.clone()).collect()
}

/// What the KB says of `feature` on target `t`, as a line of evidence:
/// `mi300x: rdna-wmma no (from ROCm 6.0), note [SOURCE]`, or that it has no entry.
fn support_evidence(kb: &Kb, t: &Target, feature: &str) -> String {
    match kb.support(feature, &t.arch.id) {
        Some(s) => format!(
            "{}: {feature} {}{}{} [{}]",
            t.name,
            super::backend::avail_str(s.status),
            s.min_toolchain
                .as_deref()
                .map(|m| format!(" (from {m})"))
                .unwrap_or_default(),
            s.note
                .as_deref()
                .map(|n| format!(", {n}"))
                .unwrap_or_default(),
            s.source
        ),
        None => format!("{}: {feature} unknown (no KB entry)", t.name),
    }
}

/// The sources of the KB's `feature` facts for `targets`, each once, in first-seen order.
fn support_sources(kb: &Kb, targets: &[&Target], feature: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        if let Some(s) = kb.support(feature, &t.arch.id) {
            if !out.contains(&s.source) {
                out.push(s.source.clone());
            }
        }
    }
    out
}

impl Risk {
    /// Starts a risk entry from its id, kind (`hazard`, `feature`, `dtype`, `toolchain`, `op`)
    /// and severity (`high`, `medium`, `low`); the rule adds its title, targets and
    /// mitigation, and the fallback, evidence and sources where it has them.
    pub(crate) fn builder(id: impl Into<String>, kind: &str, severity: &str) -> RiskBuilder {
        RiskBuilder(Risk {
            id: id.into(),
            title: String::new(),
            kind: kind.into(),
            targets: Vec::new(),
            severity: severity.into(),
            mitigation: String::new(),
            fallback: None,
            evidence: Vec::new(),
            sources: Vec::new(),
        })
    }
}

/// A risk entry under construction ([`Risk::builder`]).
pub(crate) struct RiskBuilder(Risk);

impl RiskBuilder {
    pub(crate) fn title(mut self, title: impl Into<String>) -> Self {
        self.0.title = title.into();
        self
    }
    /// The affected targets, as the spec names them.
    pub(crate) fn targets(mut self, targets: Vec<String>) -> Self {
        self.0.targets = targets;
        self
    }
    pub(crate) fn mitigation(mut self, mitigation: impl Into<String>) -> Self {
        self.0.mitigation = mitigation.into();
        self
    }
    /// The software fallback and its penalty.
    pub(crate) fn fallback(mut self, fallback: impl Into<String>) -> Self {
        self.0.fallback = Some(fallback.into());
        self
    }
    /// The fallback where there may be none (a KB feature's).
    pub(crate) fn fallback_opt(mut self, fallback: Option<String>) -> Self {
        self.0.fallback = fallback;
        self
    }
    /// KB facts with their source keys, or locations.
    pub(crate) fn evidence<S: Into<String>>(mut self, e: impl IntoIterator<Item = S>) -> Self {
        self.0.evidence = e.into_iter().map(Into::into).collect();
        self
    }
    /// Source keys of the KB's sources.
    pub(crate) fn sources<S: Into<String>>(mut self, s: impl IntoIterator<Item = S>) -> Self {
        self.0.sources = s.into_iter().map(Into::into).collect();
        self
    }
    pub(crate) fn build(self) -> Risk {
        self.0
    }
}

/// A target's warp size as evidence states it (`32`, `unknown`), with ` (selectable: 32/64)`
/// where its architecture has more than one.
fn warp_text(t: &Target) -> String {
    let w = t
        .warp()
        .map(|w| w.to_string())
        .unwrap_or_else(|| "unknown".into());
    if t.arch.warp_sizes.len() > 1 {
        let all: Vec<String> = t.arch.warp_sizes.iter().map(|w| w.to_string()).collect();
        format!("{w} (selectable: {})", all.join("/"))
    } else {
        w
    }
}

pub type Rule = fn(&Cx) -> Vec<Risk>;

/// Specs that must raise a rule's risk (`fires`) and specs that must not (`silent`); `probe`
/// is the risk id the test looks for (a concrete id of a rule that raises a family of ids).
pub struct Fixtures {
    pub probe: &'static str,
    pub fires: &'static [test_support::Fx],
    pub silent: &'static [test_support::Fx],
}

/// One risk rule: its id (`*` stands for the part of a family's id that varies), its check
/// and its fixtures.
pub struct Entry {
    pub id: &'static str,
    pub check: Rule,
    pub fixtures: Fixtures,
}

/// Every risk rule, in register order (one line each).
#[rustfmt::skip]
pub const RULES: &[Entry] = &[
    Entry { id: "warp-size", check: warp_size::check, fixtures: warp_size::FIXTURES },
    Entry { id: "rdna-wave32", check: rdna_wave32::check, fixtures: rdna_wave32::FIXTURES },
    Entry { id: "shared-memory-budget", check: shared_memory_budget::check, fixtures: shared_memory_budget::FIXTURES },
    Entry { id: "feature-*", check: features::check, fixtures: features::FIXTURES },
    Entry { id: "fp8-encoding", check: fp8_encoding::check, fixtures: fp8_encoding::FIXTURES },
    Entry { id: "dtype-*", check: dtype_support::check, fixtures: dtype_support::FIXTURES },
    Entry { id: "*-guard", check: inline_asm::check, fixtures: inline_asm::FIXTURES },
    Entry { id: "triton-num-warps", check: triton_num_warps::check, fixtures: triton_num_warps::FIXTURES },
    Entry { id: "amd-tuning", check: amd_tuning::check, fixtures: amd_tuning::FIXTURES },
    Entry { id: "separate-language-*", check: separate_language::check, fixtures: separate_language::FIXTURES },
    Entry { id: "cpu-fallback-drift", check: cpu_fallback_drift::check, fixtures: cpu_fallback_drift::FIXTURES },
    Entry { id: "int32-index-overflow", check: int32_index_overflow::check, fixtures: int32_index_overflow::FIXTURES },
    Entry { id: "latency-bound", check: latency_bound::check, fixtures: latency_bound::FIXTURES },
    Entry { id: "multi-die", check: multi_die::check, fixtures: multi_die::FIXTURES },
    Entry { id: "blackwell-arch-specific", check: blackwell_arch_specific::check, fixtures: blackwell_arch_specific::FIXTURES },
    Entry { id: "*", check: op_knowledge::check, fixtures: op_knowledge::FIXTURES },
    Entry { id: "lds-bank-layout", check: lds_banks::check, fixtures: lds_banks::FIXTURES },
    Entry { id: "matrix-operand-layout", check: matrix_layout::check, fixtures: matrix_layout::FIXTURES },
    Entry { id: "amd-launch-bounds", check: launch_bounds::check, fixtures: launch_bounds::FIXTURES },
    Entry { id: "half-type-names", check: half_type_names::check, fixtures: half_type_names::FIXTURES },
    Entry { id: "cross-block-progress", check: cross_block::check, fixtures: cross_block::FIXTURES },
    Entry { id: "fp8-fnuz-scale", check: fp8_fnuz_scale::check, fixtures: fp8_fnuz_scale::FIXTURES },
    Entry { id: "gelu-approximation", check: gelu_approximation::check, fixtures: gelu_approximation::FIXTURES },
    Entry { id: "gguf-k-quant-layout", check: gguf_k_quant::check, fixtures: gguf_k_quant::FIXTURES },
    Entry { id: "fp64-rate", check: fp64_rate::check, fixtures: fp64_rate::FIXTURES },
    Entry { id: "float-atomic-order", check: float_atomics::check, fixtures: float_atomics::FIXTURES },
    Entry { id: "nvidia-consumer-mma", check: consumer_mma::check, fixtures: consumer_mma::FIXTURES },
    Entry { id: "rdna-matrix-path", check: rdna_matrix::check, fixtures: rdna_matrix::FIXTURES },
    Entry { id: "library-shape-heuristics", check: library_selection::check, fixtures: library_selection::FIXTURES },
    Entry { id: "cross-vendor-reproducibility", check: stated_concerns::reproducibility, fixtures: stated_concerns::FIXTURES_REPRO },
    Entry { id: "irregular-work-divergence", check: stated_concerns::irregular, fixtures: stated_concerns::FIXTURES_IRREGULAR },
    Entry { id: "unified-memory", check: stated_concerns::unified_memory, fixtures: stated_concerns::FIXTURES_UNIFIED },
    Entry { id: "low-precision-accumulation", check: stated_concerns::accumulation, fixtures: stated_concerns::FIXTURES_ACCUM },
];

pub fn run(cx: &Cx) -> Vec<Risk> {
    RULES.iter().flat_map(|e| (e.check)(cx)).collect()
}

#[cfg(test)]
mod tests {
    use super::test_support::risk_ids;
    use super::RULES;

    /// Every rule raises its risk on each of its `fires` specs and not on its `silent` ones.
    #[test]
    fn every_rule_fires_on_its_fixtures_and_only_there() {
        let mut failures = Vec::new();
        for e in RULES {
            let f = &e.fixtures;
            assert!(
                !f.fires.is_empty() && !f.silent.is_empty(),
                "{}: no fixtures",
                e.id
            );
            for (i, spec) in f.fires.iter().enumerate() {
                let ids = risk_ids(&spec.toml());
                if !ids.iter().any(|x| x == f.probe) {
                    failures.push(format!(
                        "{}: fires[{i}] did not raise `{}`: {ids:?}",
                        e.id, f.probe
                    ));
                }
            }
            for (i, spec) in f.silent.iter().enumerate() {
                let ids = risk_ids(&spec.toml());
                if ids.iter().any(|x| x == f.probe) {
                    failures.push(format!("{}: silent[{i}] raised `{}`", e.id, f.probe));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Ids are unique in the table.
    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<&str> = RULES.iter().map(|e| e.id).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
