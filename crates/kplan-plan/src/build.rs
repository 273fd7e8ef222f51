//! Putting the plan together: each section's decision in order, then the checklist and the
//! list of every source the plan cites.

use crate::decide::{self, risks::SourceFinding, Target};
use crate::efficiency::EfficiencyTable;
use crate::model::*;
use crate::spec::Spec;
use kplan_kb::{Kb, Vendor};
use std::collections::BTreeSet;

/// Extra inputs beyond the spec.
#[derive(Debug, Clone, Default)]
pub struct PlanInputs {
    /// Hazards found in existing source (`kplan plan --source`); `None` when no source was scanned.
    pub findings: Option<Vec<SourceFinding>>,
}

/// Every section's decision from one [`decide::Context`] (spec, KB, op knowledge, work model
/// and resolved targets), each per-target decision aligned with the context's targets; the
/// printable plan model is made from them at the end.
pub fn build_plan(spec: &Spec, kb: &Kb, inputs: &PlanInputs) -> Plan {
    let cx = decide::Context::new(spec, kb);
    let targets = &cx.targets[..];
    let w = &cx.work;
    let verdict = decide::verdict::decide(&cx);
    let backend_matrix = decide::backend::backend_matrix(spec, kb, targets);
    let per_target = decide::backend::op_targets(spec, w, targets);
    let dtype_support = decide::backend::dtype_support(spec, kb, targets);
    let decided = decide::strategy::decide(&cx, &verdict);
    let findings = inputs.findings.clone().unwrap_or_default();
    let risks = decide::risks::register(&cx, &decided, &findings);
    let tiles = decide::tiles::plan(&cx, &decided);
    let dispatch = if tiles.is_empty() {
        decide::tiles::dispatch(&cx, &per_target, &decided)
    } else {
        Vec::new()
    };
    let mut ci = decide::ci::plan(&cx, &decided, &decide::backend::required_features(spec));
    decide::ci::add_host_shape(&mut ci, spec, w);
    // The CI coverage legs (a CDNA target, a second NVIDIA generation) compile the same code, so
    // the header must admit their architectures too, or its scope guard stops those builds.
    let coverage: Vec<&kplan_kb::Arch> = {
        let mut v: Vec<&kplan_kb::Arch> = Vec::new();
        for leg in &ci.legs {
            if let Some(a) = kb.arch(&leg.arch) {
                if matches!(a.vendor, Vendor::Nvidia | Vendor::Amd)
                    && !targets.iter().any(|t| t.arch.id == a.id)
                    && !v.iter().any(|x| x.id == a.id)
                {
                    v.push(a);
                }
            }
        }
        v
    };
    let (header, header_note) = header(targets, &coverage, &decided);
    let (mut performance, performance_notes) =
        decide::perf::expectations(&cx, &per_target, &decided);
    let strategy = decided.to_model(targets);
    warn_underfilled(spec, &tiles, &backend_matrix, &mut performance);

    let operation = Operation {
        class: spec.op.as_str().into(),
        custom_op: spec.custom_op.clone(),
        knowledge_entry: (spec.kb_op() != spec.op.as_str() && kb.op_info(spec.kb_op()).is_some())
            .then(|| spec.kb_op().to_string()),
        work_unknown: w.unknown.clone(),
        problem: serde_json::to_value(&spec.problem).unwrap_or(serde_json::Value::Null),
        flops: w.flops,
        bytes: w.bytes,
        intensity: w.intensity.map(crate::analysis::tidy),
        flops_formula: w.flops_formula.clone(),
        bytes_formula: w.bytes_formula.clone(),
        math_dtype: decide::backend::math_dtype(spec).as_str().into(),
        per_target,
        dtype_support,
        direction: spec.direction.as_str().into(),
        kind: spec.modifiers.kind.clone(),
        knowledge: knowledge(spec, kb, targets, &performance),
    };
    let kernel = KernelSummary {
        name: spec.name.clone(),
        op: spec.op_name().into(),
        description: spec.description.clone(),
        dtypes: spec.dtypes.clone(),
        storage_dtype: spec.storage.as_str().into(),
        compute_dtype: spec.compute.as_str().into(),
        features: spec.features.clone(),
        performance_requirement: spec.performance.as_str().into(),
        framework_expressible: spec.framework_expressible,
        expertise: spec
            .expertise
            .iter()
            .map(|e| e.as_str().to_string())
            .collect(),
        allowed: spec
            .allowed
            .iter()
            .map(|a| a.as_str().to_string())
            .collect(),
        notes: spec.notes.iter().map(|n| n.message.clone()).collect(),
    };
    let mut plan = Plan {
        generated: GENERATED_MARKER.into(),
        schema_version: SCHEMA_VERSION,
        kernel,
        verdict,
        backend_matrix,
        operation,
        strategy,
        risks,
        header,
        header_note,
        tiles,
        dispatch,
        ci,
        performance,
        performance_notes,
        checklist: Vec::new(),
        sources: Vec::new(),
        blocking: Vec::new(),
    };
    latency_feasibility(spec, &mut plan);
    latency_margin(spec, &mut plan);
    near_peak_unproven(spec, &mut plan);
    plan.checklist = decide::checklist::review(spec, kb, targets, &plan, inputs.findings.is_some());
    plan.sources = sources(&plan, kb);
    plan
}

/// A latency budget below the roofline time on every GPU target cannot be met by any kernel:
/// a blocking requirement at the top of the plan, and the latency risk asks for a re-spec.
fn latency_feasibility(spec: &Spec, plan: &mut Plan) {
    let Some(budget) = spec.latency_us else {
        return;
    };
    let gpu: Vec<&Performance> = plan
        .performance
        .iter()
        .filter(|p| {
            plan.backend_matrix
                .iter()
                .any(|b| b.target == p.target && matches!(b.vendor.as_str(), "nvidia" | "amd"))
        })
        .collect();
    let times: Vec<(&str, f64)> = gpu
        .iter()
        .filter_map(|p| p.roofline_time_us.map(|t| (p.target.as_str(), t)))
        .collect();
    if times.is_empty() || times.len() < gpu.len() {
        return;
    }
    let Some(&(best, t)) = times.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return;
    };
    if t <= budget {
        return;
    }
    let bw = plan
        .operation
        .per_target
        .iter()
        .find(|o| o.target == best)
        .and_then(|o| o.bandwidth_gbs);
    let msg = format!(
        "infeasible requirement: `latency_us = {budget}` is below the roofline time on every GPU target; the fastest, {best}, needs at least {} us for {} and {}{} (section 8), {:.1}x the budget. No kernel meets it: re-spec the budget, the problem size (batch, sequence, a smaller dtype) or the targets",
        crate::analysis::tidy(t),
        crate::render::si_bytes(plan.operation.bytes),
        crate::render::si_unit(plan.operation.flops, "FLOP"),
        bw.map(|b| format!(" at {b} GB/s")).unwrap_or_default(),
        t / budget
    );
    if let Some(r) = plan.risks.iter_mut().find(|r| r.id == "latency-bound") {
        r.id = "latency-infeasible".into();
        r.severity = "high".into();
        r.title = format!(
            "the {budget} us budget is below the roofline time ({} us on {best}): no implementation meets it",
            crate::analysis::tidy(t)
        );
        r.mitigation = "re-spec before building: raise `latency_us` to at least the roofline time plus a launch, shrink the per-call problem, or split it across devices; then plan again".into();
        r.evidence.push(msg.clone());
    }
    plan.blocking.push(msg);
}

/// A latency budget within [`LATENCY_MARGIN`] of the launch floor on every GPU target leaves
/// almost nothing for the kernel itself: the latency risk says so and becomes high.
const LATENCY_MARGIN: f64 = 1.5;

fn latency_margin(spec: &Spec, plan: &mut Plan) {
    let Some(budget) = spec.latency_us else {
        return;
    };
    let floor = plan
        .performance
        .iter()
        .filter(|p| {
            plan.backend_matrix
                .iter()
                .any(|b| b.target == p.target && matches!(b.vendor.as_str(), "nvidia" | "amd"))
        })
        .filter_map(|p| p.launch_floor_us.map(|f| (p.target.clone(), f)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let Some((target, f)) = floor else {
        return;
    };
    if budget > LATENCY_MARGIN * f {
        return;
    }
    if let Some(r) = plan.risks.iter_mut().find(|r| r.id == "latency-bound") {
        r.severity = "high".into();
        r.title = format!(
            "a {budget} us per-call budget is within {LATENCY_MARGIN}x of the launch floor ({} us on {target}): the launch alone takes {:.0}% of it",
            crate::analysis::tidy(f),
            (f / budget * 100.0).min(100.0)
        );
        r.evidence.push(format!(
            "launch floor {} us on {target} (section 8), budget {budget} us: a met budget at this margin is a proxy figure, measure it with `kplan bench` before relying on it",
            crate::analysis::tidy(f)
        ));
    }
}

/// "Meets the near-peak requirement" is a claim section 8 must back: where it has no expected
/// range for a GPU target, the strategy says the requirement is unproven there.
fn near_peak_unproven(spec: &Spec, plan: &mut Plan) {
    if spec.performance != crate::spec::PerfReq::NearPeak {
        return;
    }
    let unknown: Vec<String> = plan
        .performance
        .iter()
        .filter(|p| p.expected_low.is_none())
        .filter(|p| {
            plan.backend_matrix
                .iter()
                .any(|b| b.target == p.target && matches!(b.vendor.as_str(), "nvidia" | "amd"))
        })
        .map(|p| p.target.clone())
        .collect();
    if unknown.is_empty() {
        return;
    }
    let claim = "and meets the `near-peak` requirement";
    if plan.strategy.summary.contains(claim) {
        plan.strategy.summary = plan.strategy.summary.replace(
            claim,
            &format!(
                "for the `near-peak` requirement, which is unproven on {}: section 8 has no expected range there (measure with `kplan bench`)",
                decide::join_names(&unknown)
            ),
        );
    }
}

/// The op knowledge base's entry for the spec's op, narrowed to the vendors in scope.
fn knowledge(
    spec: &Spec,
    kb: &Kb,
    targets: &[Target],
    performance: &[Performance],
) -> Option<OpKnowledge> {
    let info = kb.op_info(spec.kb_op())?;
    let sc = |t: &str| decide::scoped(t, targets);
    let vendors: Vec<&str> = {
        let mut v: Vec<&str> = targets
            .iter()
            .map(|t| t.vendor().as_str())
            .filter(|v| OpInfoVendors::contains(v))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let libraries = info
        .library
        .iter()
        .filter(|l| l.vendor == "any" || vendors.contains(&l.vendor.as_str()))
        // A baseline with a coverage condition is named only where it holds (a GGUF kernel
        // library for GGUF weights); a reuse library that does not cover the spec stays, as
        // the verdict says why it is not called.
        .filter(|l| l.role != "baseline" || decide::verdict::library_covers(spec, targets, l))
        .map(|l| LibraryRef {
            vendor: l.vendor.clone(),
            name: sc(&l.name),
            role: l.role.clone(),
            covers: sc(&l.covers),
            min_version: l.min_version.as_deref().map(sc),
            source: l.source.clone(),
        })
        .collect();
    let latency = spec.latency_us.map(|budget| {
        let per: Vec<String> = performance
            .iter()
            .filter_map(|p| {
                let t = p.roofline_time_us?;
                Some(format!(
                    "{}: roofline {} us{}",
                    p.target,
                    crate::analysis::tidy(t),
                    if t > budget {
                        " (over the budget even at the roofline)"
                    } else if t * 5.0 < budget {
                        " (far below: launch overhead and occupancy decide, not bandwidth)"
                    } else {
                        ""
                    }
                ))
            })
            .collect();
        format!(
            "budget {budget} us per call; {}; {}",
            if per.is_empty() {
                "no roofline time known".to_string()
            } else {
                per.join(", ")
            },
            sc(&info.latency_bound)
        )
    });
    Some(OpKnowledge {
        name: info.name.clone(),
        latency_bound: sc(&info.latency_bound),
        tile_hint: sc(&info.tile_hint),
        libraries,
        algorithms: info
            .algorithm
            .iter()
            .map(|a| AlgorithmRef {
                name: sc(&a.name),
                when: sc(&a.when),
                source: a.source.clone(),
            })
            .collect(),
        latency,
    })
}

/// Vendors an op library can be named for.
struct OpInfoVendors;
impl OpInfoVendors {
    fn contains(v: &str) -> bool {
        matches!(v, "nvidia" | "amd" | "cpu")
    }
}

/// Blocks the problem launches at a target's tile (section 6); `None` where the tile does not
/// say (custom ops, CPU tiles).
pub(crate) fn grid_blocks(spec: &Spec, tile: &Tile) -> Option<u64> {
    use crate::spec::Problem;
    let g = |k: &str| tile.tile.get(k).copied().filter(|v| *v > 0);
    let div = |a: u64, b: u64| a.div_ceil(b);
    match &spec.problem {
        Problem::Flat { n } => g("elems_per_block").map(|e| div(*n, e)),
        Problem::Rows { rows, .. } => g("rows_per_block").map(|r| div(*rows, r)),
        Problem::Gemm { batch, m, n, .. } => Some(
            batch
                .saturating_mul(div(*m, g("m")?))
                .saturating_mul(div(*n, g("n")?))
                .saturating_mul(g("split_k").unwrap_or(1)),
        ),
        // decode: one block per (batch, KV head, query block, KV split)
        Problem::Attention {
            batch, kv_heads, ..
        } if g("query_rows").is_some() => Some(
            batch
                .saturating_mul(*kv_heads)
                .saturating_mul(div(g("query_rows")?, g("block_m")?))
                .saturating_mul(g("kv_splits").unwrap_or(1)),
        ),
        Problem::Attention {
            batch,
            heads,
            seq_q,
            ..
        } => g("block_m").map(|bm| batch.saturating_mul(*heads).saturating_mul(div(*seq_q, bm))),
        Problem::Custom { .. } => None,
    }
}

/// A problem that launches fewer blocks than the GPU has SMs/CUs cannot reach a roofline that
/// assumes the whole GPU: say so next to the expected range.
fn warn_underfilled(
    spec: &Spec,
    tiles: &[Tile],
    matrix: &[BackendEntry],
    performance: &mut [Performance],
) {
    for p in performance.iter_mut().filter(|p| p.roofline.is_some()) {
        let Some(tile) = tiles.iter().find(|t| t.target == p.target) else {
            continue;
        };
        let Some(cus) = matrix
            .iter()
            .find(|b| b.target == p.target && matches!(b.vendor.as_str(), "nvidia" | "amd"))
            .and_then(|b| b.compute_units)
        else {
            continue;
        };
        let Some(blocks) = grid_blocks(spec, tile) else {
            continue;
        };
        if blocks >= cus as u64 {
            continue;
        }
        let w = format!(
            "the problem launches {blocks} block(s) at the section 6 tile for {cus} {}s: at most {:.0}% of the GPU works, so the roofline and expected range (which assume a full GPU) overstate this size; batch the calls, fuse the op, or use smaller tiles / split-K",
            tile.occupancy_unit.as_deref().unwrap_or("SM/CU"),
            (blocks as f64 * 100.0 / cus as f64).floor()
        );
        p.warning = Some(match p.warning.take() {
            Some(prev) => format!("{prev}; {w}"),
            None => w,
        });
    }
}

fn header(
    targets: &[Target],
    coverage: &[&kplan_kb::Arch],
    strategy: &decide::strategy::Decided,
) -> (Option<String>, String) {
    let mut archs: Vec<&kplan_kb::Arch> = targets
        .iter()
        .filter(|t| matches!(t.vendor(), Vendor::Nvidia | Vendor::Amd | Vendor::Cpu))
        .map(|t| t.arch)
        .collect();
    if archs.is_empty() {
        return (None, "no NVIDIA, AMD or CPU target: the portability header does not apply (Intel/Apple legs use their own languages)".into());
    }
    archs.extend(coverage.iter().copied());
    let cfg = kplan_gen::HeaderConfig::from_archs(&archs);
    let text = kplan_gen::render_header(&cfg);
    let cxx = strategy
        .with_targets(targets)
        .filter(|(_, p)| {
            use decide::Abstraction as A;
            matches!(
                p.abstraction,
                A::HipSingleSource | A::PerBackend | A::Cutlass | A::CpuFallback
            )
        })
        .map(|(t, _)| t.name.clone())
        .collect::<Vec<_>>();
    let cov = if coverage.is_empty() {
        String::new()
    } else {
        format!(
            " (with {} for the CI coverage legs, section 7)",
            coverage
                .iter()
                .map(|a| a.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let note = if cxx.is_empty() {
        format!(
            "generated for {}{cov} ({}); the chosen strategy writes no CUDA/HIP/C++ kernel code, so the header is only needed for launch glue and tests",
            cfg.targets.join(", "),
            cfg.backend_names().join(", ")
        )
    } else {
        format!(
            "generated for {}{cov} ({}); include it in every CUDA/HIP/C++ source of {} ({} writes the same file)",
            cfg.targets.join(", "),
            cfg.backend_names().join(", "),
            cxx.join(", "),
            if coverage.is_empty() {
                "`kplan header`".to_string()
            } else {
                format!("`kplan header --targets {}`", cfg.targets.join(","))
            }
        )
    };
    (Some(text), note)
}

fn sources(plan: &Plan, kb: &Kb) -> Vec<SourceRef> {
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for b in &plan.backend_matrix {
        keys.extend(b.sources.iter().cloned());
    }
    for o in &plan.operation.per_target {
        keys.extend(o.sources.iter().cloned());
    }
    for d in &plan.operation.dtype_support {
        keys.extend(d.source.iter().cloned());
    }
    if let Some(k) = &plan.operation.knowledge {
        keys.extend(k.libraries.iter().map(|l| l.source.clone()));
        keys.extend(k.algorithms.iter().map(|a| a.source.clone()));
    }
    keys.extend(plan.verdict.sources.iter().cloned());
    for a in &plan.strategy.alternatives {
        keys.extend(a.sources.iter().cloned());
    }
    for r in &plan.risks {
        keys.extend(r.sources.iter().cloned());
    }
    for t in &plan.tiles {
        keys.extend(t.sources.iter().cloned());
    }
    for p in &plan.performance {
        if let Some(e) = &p.efficiency {
            keys.extend(e.sources.iter().cloned());
        }
        if let Some(m) = &p.measured {
            keys.insert(m.source.clone());
        }
    }
    let eff = EfficiencyTable::builtin();
    keys.into_iter()
        .filter(|k| !k.is_empty())
        .map(|k| {
            let s = kb.source(&k).or_else(|| eff.sources.get(&k));
            SourceRef {
                title: s
                    .map(|s| s.title.clone())
                    .unwrap_or_else(|| "(not listed in the knowledge base's sources)".into()),
                url: s.and_then(|s| s.url.clone()),
                kind: s
                    .map(|s| s.kind.clone())
                    .unwrap_or_else(|| "unknown".into()),
                key: k,
            }
        })
        .collect()
}
