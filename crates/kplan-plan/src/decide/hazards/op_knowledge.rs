//! Op-specific risks from the operation knowledge base (`ops*.toml`): every risk of the spec's
//! op entry (and of `custom` for a custom op the KB maps) whose direction and `when` condition
//! hold for the spec, the targets and the strategy (see [`crate::decide::when`]).

use super::test_support::ELEMENTWISE;
use super::*;

pub fn check(cx: &Cx) -> Vec<Risk> {
    #[allow(unused_variables)]
    let (spec, kb, targets, gpu, coded) = (cx.spec, cx.kb, cx.targets, &cx.gpu, &cx.coded);
    let mut risks = Vec::new();
    // Op-specific hazards from the operation knowledge base.
    // A custom op the knowledge base knows gets that entry's risks and the custom op's own.
    let entries: Vec<&kplan_kb::OpInfo> = [spec.kb_op(), spec.op.as_str()]
        .into_iter()
        .enumerate()
        .filter(|(i, id)| *i == 0 || *id != spec.kb_op())
        .filter_map(|(_, id)| kb.op_info(id))
        .collect();
    for info in entries {
        let affected: Vec<String> = if gpu.is_empty() {
            targets.iter().map(|t| t.name.clone()).collect()
        } else {
            names(&gpu)
        };
        let facts = crate::decide::risks::facts(spec, targets, coded);
        for r in info.risk.iter().filter(|r| {
            r.direction
                .as_deref()
                .map_or(true, |d| d == spec.direction.as_str())
                && r.when.as_deref().map_or(true, |w| {
                    // A condition the KB cannot parse is a KB error the drift test reports; the
                    // risk is kept rather than silently dropped.
                    crate::decide::when::parse(w).map_or(true, |c| c.eval(&facts))
                })
        }) {
            // A condition on one vendor or family (`amd`, `rdna`, `nvidia`) names the targets
            // it concerns: evaluated per target, it narrows the list; a condition about the
            // combination (`amd && nvidia`, `gpu_targets > 1`) holds for no single target
            // and keeps them all.
            let narrowed: Vec<String> = match r
                .when
                .as_deref()
                .and_then(|w| crate::decide::when::parse(w).ok())
            {
                Some(c) => targets
                    .iter()
                    .filter(|t| affected.contains(&t.name))
                    .filter(|t| {
                        let one = std::slice::from_ref(*t);
                        let coded_one: Vec<&Target> =
                            coded.iter().copied().filter(|c| c.name == t.name).collect();
                        c.eval(&crate::decide::risks::facts(spec, one, &coded_one))
                    })
                    .map(|t| t.name.clone())
                    .collect(),
                None => Vec::new(),
            };
            let on = if narrowed.is_empty() {
                affected.clone()
            } else {
                narrowed
            };
            // KB text names each vendor's instructions and libraries in scoped groups: only
            // the vendors in scope are printed.
            let sc = |t: &str| crate::decide::scoped(t, targets);
            risks.push(Risk {
                id: r.id.clone(),
                title: sc(&r.title),
                kind: "op".into(),
                targets: on,
                severity: "medium".into(),
                mitigation: sc(&r.mitigation),
                fallback: None,
                evidence: vec![format!("{} [{}]", sc(&r.why), r.source)],
                sources: vec![r.source.clone()],
            });
        }
    }
    risks
}

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "elementwise-fusion-boundary",
    fires: &[ELEMENTWISE],
    silent: &[ELEMENTWISE.op("reduction")],
};
