//! The Markdown plan: a verdict line, the nine sections in order, then the sources.

use super::HEADINGS;
use crate::analysis::Bound;
use crate::model::*;
use std::fmt::Write;

/// Significant-figure formatting with SI prefixes for large counts: 1.07e9 -> "1.07 G".
pub(crate) fn si(x: f64) -> String {
    let a = x.abs();
    let (v, p) = if a >= 1e15 {
        (x / 1e15, " P")
    } else if a >= 1e12 {
        (x / 1e12, " T")
    } else if a >= 1e9 {
        (x / 1e9, " G")
    } else if a >= 1e6 {
        (x / 1e6, " M")
    } else if a >= 1e3 {
        (x / 1e3, " k")
    } else {
        (x, " ")
    };
    format!("{}{p}", num(v)).trim_end().to_string()
}

/// `si` followed by a unit, with the space kept when there is no prefix: "8.00 B", "50.3 MB".
pub(crate) fn si_unit(x: f64, unit: &str) -> String {
    let s = si(x);
    if s.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{s} {unit}")
    } else {
        format!("{s}{unit}")
    }
}

/// 3 significant figures, no exponent.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

fn opt<T: ToString>(o: &Option<T>) -> String {
    o.as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn bytes(b: u64) -> String {
    if b >= 1024 && b % 1024 == 0 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// Spec text shown as prose: one line, so it cannot open a heading or a code block.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(plan: &Plan) -> String {
    markdown_with_chart(plan, None)
}

/// The Markdown plan; `chart` names the roofline SVG written beside it ([`super::roofline_svg`]),
/// which section 8 links.
pub fn markdown_with_chart(plan: &Plan, chart: Option<&str>) -> String {
    let mut o = String::new();
    let k = &plan.kernel;
    let _ = writeln!(o, "<!-- {} -->", plan.generated);
    let _ = writeln!(o, "# Kernel plan: {}\n", one_line(&k.name));
    if let Some(d) = &k.description {
        let _ = writeln!(o, "{}\n", one_line(d));
    }
    let _ = writeln!(
        o,
        "**Verdict: `{}`**: {}\n",
        plan.verdict.decision.as_str(),
        plan.verdict.reason
    );
    let _ = writeln!(
        o,
        "Decided from: {}.{}\n",
        plan.verdict.inputs.join("; "),
        if plan.verdict.sources.is_empty() {
            String::new()
        } else {
            format!(" Sources: {}.", plan.verdict.sources.join(", "))
        }
    );
    let _ = writeln!(
        o,
        "Spec: op `{}`, direction `{}`, dtypes {} (storage {}, compute {}), features {}, performance `{}`, framework-expressible {}, team {}, allowed {}.\n",
        k.op,
        plan.operation.direction,
        k.dtypes.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", "),
        k.storage_dtype,
        k.compute_dtype,
        if k.features.is_empty() { "none".to_string() } else { k.features.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ") },
        k.performance_requirement,
        k.framework_expressible,
        if k.expertise.is_empty() { "(not given)".to_string() } else { k.expertise.join(", ") },
        k.allowed.join(", ")
    );
    if !k.notes.is_empty() {
        let _ = writeln!(o, "Spec notes (accepted, not used):\n");
        for n in &k.notes {
            let _ = writeln!(o, "- {}", one_line(n));
        }
        let _ = writeln!(o);
    }
    let compact = matches!(
        plan.verdict.decision,
        Decision::UseFramework | Decision::UseVendorLibrary
    );
    summary(&mut o, plan);

    // 1
    let _ = writeln!(o, "## {}\n", HEADINGS[0]);
    let _ = writeln!(o, "| target | vendor | arch (family) | device | warp | max threads/block | shared/LDS per block | SMs/CUs | bandwidth GB/s | min toolchain | sources |");
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|");
    for b in &plan.backend_matrix {
        let warp = match (b.warp_size, b.warp_sizes.len()) {
            (Some(w), n) if n > 1 => format!(
                "{w} (also {})",
                b.warp_sizes
                    .iter()
                    .filter(|x| **x != w)
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            ),
            (Some(w), _) => w.to_string(),
            (None, _) => "unknown".into(),
        };
        let dev = match (&b.device_name, b.resolved_via.as_str()) {
            (Some(n), "architecture") => format!("{n} (reference device)"),
            (Some(n), _) => n.clone(),
            (None, _) => "none in the KB".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} | {} |",
            b.target,
            b.vendor,
            b.arch,
            b.family,
            dev,
            warp,
            opt(&b.max_threads_per_block),
            b.shared_per_block_bytes
                .map(bytes)
                .unwrap_or_else(|| "unknown".into()),
            opt(&b.compute_units),
            b.bandwidth_gbs.map(num).unwrap_or_else(|| "unknown".into()),
            b.min_toolchain.as_deref().unwrap_or("unknown"),
            b.sources.join(", ")
        );
    }
    let refs: Vec<String> = plan
        .backend_matrix
        .iter()
        .filter(|b| b.resolved_via == "architecture" && b.device_name.is_some())
        .map(|b| {
            format!(
                "`{}` -> {}",
                b.target,
                b.device_name.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !refs.is_empty() {
        let _ = writeln!(
            o,
            "\nArchitectures use their documented reference device for per-device numbers: {}.",
            refs.join(", ")
        );
    }
    o.push('\n');

    // 2
    let op = &plan.operation;
    let _ = writeln!(o, "## {}\n", HEADINGS[1]);
    let _ = writeln!(
        o,
        "- problem: `{}`",
        serde_json::to_string(&op.problem).unwrap_or_default()
    );
    match (&op.custom_op, &op.knowledge_entry) {
        (Some(c), Some(e)) => {
            let _ = writeln!(
                o,
                "- operation `{c}`: kplan has no op class or work model for it; planned as a custom op with the op knowledge base entry `{e}` (its libraries, algorithms and risks below)"
            );
        }
        (Some(c), None) => {
            let _ = writeln!(
                o,
                "- operation `{c}`: kplan has no op class, work model or library knowledge for it; planned as a custom op (the risks below come from its dtypes, features, targets and strategy)"
            );
        }
        (None, Some(e)) => {
            let _ = writeln!(
                o,
                "- operation: op class `{}` (its work model), read as the op knowledge base entry `{e}` (its libraries, algorithms and risks)",
                op.class
            );
        }
        (None, None) => {}
    }
    if let Some(why) = &op.work_unknown {
        let _ = writeln!(o, "- FLOPs and bytes: unknown: {why}");
    } else {
        let _ = writeln!(o, "- FLOPs: {} = {}", op.flops_formula, si(op.flops));
        let _ = writeln!(
            o,
            "- bytes (minimum DRAM traffic): {} = {}",
            op.bytes_formula,
            si_unit(op.bytes, "B")
        );
        let _ = writeln!(
            o,
            "- arithmetic intensity: {} FLOP/byte",
            op.intensity
                .map(num)
                .unwrap_or_else(|| "unbounded (no bytes)".into())
        );
    }
    let _ = writeln!(o, "- math dtype (peak used): {}", op.math_dtype);
    if compact {
        // The roofline per target is in section 8; the peak table is in the JSON.
        let _ = writeln!(
            o,
            "- per-target peaks and bounds: section 8 and the JSON (`operation.per_target`)"
        );
    }
    o.push('\n');
    if !compact {
        let _ = writeln!(o, "| target | peak TFLOP/s | bandwidth GB/s | ridge point FLOP/byte | bound | note | sources |");
        let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    }
    for t in op.per_target.iter().filter(|_| !compact) {
        let peak = match (t.peak_tflops, &t.peak_kind, &t.peak_dtype) {
            (Some(p), Some(k), Some(d)) => format!("{} ({d}, {k})", num(p)),
            _ => "unknown".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            t.target,
            peak,
            t.bandwidth_gbs.map(num).unwrap_or_else(|| "unknown".into()),
            t.ridge_point.map(num).unwrap_or_else(|| "unknown".into()),
            match t.bound {
                Some(Bound::Memory) => "memory",
                Some(Bound::Compute) => "compute",
                None => "unknown",
            },
            cell(t.note.as_deref().unwrap_or("")),
            t.sources.join(", ")
        );
    }
    let native: Vec<&str> = {
        let mut v: Vec<&str> = op
            .dtype_support
            .iter()
            .map(|d| d.dtype.as_str())
            .filter(|dt| {
                op.dtype_support
                    .iter()
                    .filter(|d| d.dtype == *dt)
                    .all(|d| d.status == "yes" && d.feature.is_none())
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if !native.is_empty() {
        let _ = writeln!(
            o,
            "\nDtype support: {} native on every target.",
            native.join(", ")
        );
    }
    let special: Vec<&DtypeSupport> = op
        .dtype_support
        .iter()
        .filter(|d| !native.contains(&d.dtype.as_str()))
        .collect();
    if !special.is_empty() {
        let _ = writeln!(
            o,
            "\n| target | dtype | status | KB feature | note | source |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|");
    }
    for d in special {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            d.target,
            d.dtype,
            d.status,
            d.feature.as_deref().unwrap_or("-"),
            cell(d.note.as_deref().unwrap_or("")),
            d.source.as_deref().unwrap_or("-")
        );
    }
    o.push('\n');
    if let Some(k) = &op.knowledge {
        let _ = writeln!(
            o,
            "Operation knowledge ({}, `{}`{}):\n",
            k.name,
            op.direction,
            op.kind
                .as_deref()
                .map(|k| format!(", kind `{k}`"))
                .unwrap_or_default()
        );
        if !k.libraries.is_empty() {
            let _ = writeln!(
                o,
                "| backend | library | role | covers | minimum version | source |"
            );
            let _ = writeln!(o, "|---|---|---|---|---|---|");
            for l in &k.libraries {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} |",
                    l.vendor,
                    cell(&l.name),
                    l.role,
                    cell(&l.covers),
                    l.min_version.as_deref().unwrap_or("unknown (no source)"),
                    l.source
                );
            }
            o.push('\n');
        }
        if !compact {
            for a in &k.algorithms {
                let _ = writeln!(o, "- algorithm: {}: {} [{}]", a.name, a.when, a.source);
            }
        }
        let _ = writeln!(o, "- latency-bound when: {}", k.latency_bound);
        if !compact {
            let _ = writeln!(o, "- tile hint: {}", k.tile_hint);
        }
        if let Some(l) = &k.latency {
            let _ = writeln!(o, "- latency requirement: {l}");
        }
        o.push('\n');
    }

    // 3
    let s = &plan.strategy;
    let _ = writeln!(o, "## {}\n", HEADINGS[2]);
    let _ = writeln!(o, "**Chosen: `{}`**: {}.\n", s.chosen, s.summary);
    if compact {
        let _ = writeln!(
            o,
            "Per target: {}.",
            s.per_target
                .iter()
                .map(|p| format!("{} `{}` ({})", p.target, p.abstraction, p.implementation))
                .collect::<Vec<_>>()
                .join("; ")
        );
    } else {
        let _ = writeln!(o, "| target | abstraction | implementation |");
        let _ = writeln!(o, "|---|---|---|");
    }
    for p in s.per_target.iter().filter(|_| !compact) {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            p.target,
            p.abstraction,
            cell(&p.implementation)
        );
    }
    let (shown, folded): (Vec<&Alternative>, Vec<&Alternative>) =
        s.alternatives.iter().partition(|a| {
            a.allowed && a.outcome != "not-applicable" && !(compact && a.outcome != "chosen")
        });
    let _ = writeln!(
        o,
        "\nAlternatives considered (highest abstraction first):\n"
    );
    if !shown.is_empty() {
        let _ = writeln!(o, "| abstraction | allowed | outcome | why | sources |");
        let _ = writeln!(o, "|---|---|---|---|---|");
    }
    for a in shown {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            a.abstraction,
            if a.allowed { "yes" } else { "no" },
            a.outcome,
            cell(&a.why),
            a.sources.join(", ")
        );
    }
    let mut by_outcome: Vec<(&str, Vec<&str>)> = Vec::new();
    for a in folded {
        let label = if !a.allowed {
            "not allowed by the spec"
        } else {
            a.outcome.as_str()
        };
        match by_outcome.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(a.abstraction.as_str()),
            None => by_outcome.push((label, vec![a.abstraction.as_str()])),
        }
    }
    if !by_outcome.is_empty() {
        let _ = writeln!(
            o,
            "\n{} (reasons in the JSON).",
            by_outcome
                .iter()
                .map(|(l, v)| format!("{}: {}", capitalize(l), v.join(", ")))
                .collect::<Vec<_>>()
                .join(". ")
        );
    }
    if compact {
        o.push('\n');
    } else {
        let _ = writeln!(o, "\nDecided from: {}.\n", s.inputs.join("; "));
    }

    // 4
    let _ = writeln!(o, "## {}\n", HEADINGS[3]);
    if compact && !plan.risks.is_empty() {
        let _ = writeln!(
            o,
            "No custom GPU kernel is planned; these matter for code that still runs per backend (launch glue, tuning, the CPU fallback) and for any custom path later:"
        );
    }
    if plan.risks.is_empty() {
        let _ = writeln!(
            o,
            "No portability risk found for these targets and features.\n"
        );
    }
    if compact {
        for (i, r) in plan.risks.iter().enumerate() {
            let _ = writeln!(
                o,
                "- R{} `{}` ({}, {}): {}. Mitigation: {}",
                i + 1,
                r.id,
                r.severity,
                if r.targets.is_empty() {
                    "no target".to_string()
                } else {
                    r.targets.join(", ")
                },
                r.title,
                r.mitigation
            );
        }
        if !plan.risks.is_empty() {
            o.push('\n');
        }
    }
    for (i, r) in plan.risks.iter().enumerate().filter(|_| !compact) {
        let _ = writeln!(o, "### R{} `{}`: {}\n", i + 1, r.id, r.title);
        let _ = writeln!(
            o,
            "- targets: {}",
            if r.targets.is_empty() {
                "none".to_string()
            } else {
                r.targets.join(", ")
            }
        );
        let _ = writeln!(o, "- severity: {} ({})", r.severity, r.kind);
        let _ = writeln!(o, "- mitigation: {}", r.mitigation);
        if let Some(f) = &r.fallback {
            let _ = writeln!(o, "- fallback: {f}");
        }
        if !r.evidence.is_empty() {
            let _ = writeln!(o, "- evidence:");
            for e in &r.evidence {
                let _ = writeln!(o, "  - {e}");
            }
        }
        if !r.sources.is_empty() {
            let _ = writeln!(o, "- sources: {}", r.sources.join(", "));
        }
        o.push('\n');
    }

    // 5
    let _ = writeln!(o, "## {}\n", HEADINGS[4]);
    match &plan.header {
        Some(h) => {
            let macros: Vec<&str> = h
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("#define "))
                .filter_map(|l| l.split(|c: char| c == '(' || c.is_whitespace()).next())
                .filter(|n| {
                    n.starts_with("KPLAN_") && !n.starts_with("KPLAN_DETAIL_") && !n.ends_with("_H")
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let _ = writeln!(
                o,
                "The header, {}: {} lines.",
                plan.header_note,
                h.lines().count()
            );
            if !macros.is_empty() && !compact {
                let shown: Vec<String> = macros.iter().take(12).map(|m| format!("`{m}`")).collect();
                let _ = writeln!(
                    o,
                    "It defines {} macros{}: {}{}.",
                    macros.len(),
                    if macros.len() > 12 {
                        ", among them"
                    } else {
                        ""
                    },
                    shown.join(", "),
                    if macros.len() > 12 { ", ..." } else { "" }
                );
            }
            let _ = writeln!(
                o,
                "The text is in the JSON plan (`header`); `kplan header --spec SPEC.toml -o kplan_portability.h` writes it.\n"
            );
        }
        None => {
            let _ = writeln!(o, "{}\n", plan.header_note);
        }
    }

    // 6
    let _ = writeln!(o, "## {}\n", HEADINGS[5]);
    if plan.tiles.is_empty() {
        let _ = writeln!(
            o,
            "No kernel tiles: the verdict is `{}`, so no kernel is written; the {} chooses its own tiles.{}\n",
            plan.verdict.decision.as_str(),
            if plan.verdict.decision == Decision::UseFramework { "framework" } else { "library" },
            if plan.dispatch.is_empty() { "" } else { " What the dispatch function still chooses per target:" }
        );
        dispatch_section(&mut o, plan);
    } else {
        tiles_section(&mut o, plan);
    }
    latency_lines(&mut o, plan);

    // 7
    ci_section(&mut o, plan);

    // 8
    perf_section(&mut o, plan, compact, chart);
    checklist_and_sources(&mut o, plan);
    o
}

fn dispatch_section(o: &mut String, plan: &Plan) {
    if plan.dispatch.is_empty() {
        return;
    }
    let _ = writeln!(o, "| target | parameter | value | why |");
    let _ = writeln!(o, "|---|---|---|---|");
    for d in &plan.dispatch {
        for p in &d.params {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                d.target,
                p.name,
                cell(&p.value),
                cell(&p.why)
            );
        }
    }
    o.push('\n');
}

/// Targets where the problem is too small for tiles to matter: launches decide (section 8).
fn latency_lines(o: &mut String, plan: &Plan) {
    let mut any = false;
    for p in plan.performance.iter().filter(|p| p.latency_bound) {
        any = true;
        let _ = writeln!(
            o,
            "- small problem on {}: latency-bound (roofline {} us against a launch floor of {} us): expect at least {} us per call whatever the tile{}; see section 8",
            p.target,
            p.roofline_time_us.map(num).unwrap_or_else(|| "?".into()),
            p.launch_floor_us.map(num).unwrap_or_else(|| "?".into()),
            p.expected_time_us.map(num).unwrap_or_else(|| "?".into()),
            p.latency_note
                .as_deref()
                .and_then(|n| n.split("; ").find(|x| x.contains("fit in the")))
                .map(|r| format!("; {r}"))
                .unwrap_or_default()
        );
    }
    if any {
        o.push('\n');
    }
}

fn tiles_section(o: &mut String, plan: &Plan) {
    let _ = writeln!(o, "| target | block threads | tile | shared bytes (budget) | occupancy | registers assumed | why |");
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    for t in &plan.tiles {
        let tile = t
            .tile
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let occ = match (t.occupancy, t.blocks_per_sm, &t.limiter) {
            (Some(f), Some(b), Some(l)) => format!(
                "{:.0}% ({b} blocks/{}, limited by {l}){}",
                f * 100.0,
                t.occupancy_unit.as_deref().unwrap_or("SM"),
                t.occupancy_note
                    .as_ref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            ),
            _ => t.occupancy_note.clone().unwrap_or_else(|| "n/a".into()),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} ({}) | {} | {} | {} |",
            t.target,
            t.block_threads,
            tile,
            t.shared_bytes,
            t.shared_budget_bytes
                .map(bytes)
                .unwrap_or_else(|| "n/a".into()),
            occ,
            if t.registers_assumed == 0 {
                "n/a".to_string()
            } else {
                t.registers_assumed.to_string()
            },
            cell(&t.why)
        );
    }
    let _ = writeln!(o, "\nConfiguration, per target:\n");
    for t in &plan.tiles {
        let _ = writeln!(
            o,
            "- {}: {}{}",
            t.target,
            t.configuration,
            if t.candidate_checks.is_empty() {
                String::new()
            } else {
                let kept: Vec<String> = t
                    .candidate_checks
                    .iter()
                    .filter(|c| c.kept)
                    .map(|c| match c.occupancy {
                        Some(f) => format!(
                            "`{}` ({}, {:.0}% occupancy)",
                            c.config,
                            bytes(c.shared_bytes),
                            f * 100.0
                        ),
                        None => format!("`{}` ({})", c.config, bytes(c.shared_bytes)),
                    })
                    .collect();
                let dropped: Vec<String> = t
                    .candidate_checks
                    .iter()
                    .filter_map(|c| c.dropped.as_ref().map(|d| format!("`{}`: {d}", c.config)))
                    .collect();
                format!(
                    "; autotune candidates: {}{}",
                    if kept.is_empty() {
                        "none fits".to_string()
                    } else {
                        kept.join(", ")
                    },
                    if dropped.is_empty() {
                        String::new()
                    } else {
                        format!("; dropped: {}", dropped.join("; "))
                    }
                )
            }
        );
    }
    let _ = writeln!(o, "\nOccupancy comes from the KB's occupancy model (kplan_kb::occupancy) with the registers shown as an assumption; `kplan build` reports the real register count.\n");
}

fn ci_section(o: &mut String, plan: &Plan) {
    let _ = writeln!(o, "## {}\n", HEADINGS[6]);
    let _ = writeln!(
        o,
        "| leg | kind | target | toolchain | runner | kplan command | why |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    for l in &plan.ci.legs {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            l.name,
            l.kind,
            l.target,
            cell(&l.toolchain),
            cell(&l.runner),
            l.command
                .as_ref()
                .map(|c| format!("`{c}`"))
                .unwrap_or_else(|| "-".into()),
            cell(&l.why)
        );
    }
    o.push('\n');
    for n in &plan.ci.notes {
        let _ = writeln!(o, "- {n}");
    }
    o.push('\n');
}

fn perf_section(o: &mut String, plan: &Plan, compact: bool, chart: Option<&str>) {
    let _ = writeln!(o, "## {}\n", HEADINGS[7]);
    if let Some(c) = chart {
        let _ = writeln!(
            o,
            "![Roofline per target: the roofline, the expected band at this op's intensity and the measured point where one exists]({c})\n"
        );
    }
    let _ = writeln!(o, "| target | strategy | bound | roofline | expected (low-high) | measured | expected time/call | vs fastest | efficiency assumption |");
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|");
    for p in &plan.performance {
        let unit = p.unit.as_deref().unwrap_or("");
        let roof = p
            .roofline
            .map(|r| format!("{} {unit}", num(r)))
            .unwrap_or_else(|| "unknown".into());
        let exp = match (p.expected_low, p.expected_high) {
            (Some(l), Some(h)) => format!("{}-{} {unit}", num(l), num(h)),
            _ => "unknown".into(),
        };
        let meas = p
            .measured
            .as_ref()
            .map(|m| format!("{} {} [{}]", num(m.value), m.unit, m.source))
            .unwrap_or_else(|| "not measured".into());
        let eff = match &p.efficiency {
            Some(e) => format!(
                "{:.0}-{:.0}% ({} {}{}): {} [{}]",
                e.low * 100.0,
                e.high * 100.0,
                e.strategy,
                e.class,
                match &e.proxy_reason {
                    Some(r) => format!(", proxy: {r}"),
                    None => String::new(),
                },
                e.basis,
                e.sources.join(", ")
            ),
            None => p.note.clone().unwrap_or_else(|| "unknown".into()),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.target,
            p.strategy,
            match p.bound {
                Some(Bound::Memory) => "memory",
                Some(Bound::Compute) => "compute",
                None => "unknown",
            },
            roof,
            exp,
            cell(&meas),
            p.expected_time_us
                .map(|t| format!(
                    "{} us{}",
                    num(t),
                    if p.latency_bound {
                        " (latency-bound)"
                    } else {
                        ""
                    }
                ))
                .unwrap_or_else(|| "unknown".into()),
            p.gap_vs_fastest
                .map(|g| format!("{:.2}x", g))
                .unwrap_or_else(|| "-".into()),
            cell(&eff)
        );
    }
    o.push('\n');
    if !compact {
        let _ = writeln!(o, "Roofline = min(peak[math dtype], intensity x bandwidth): GB/s when memory-bound, TFLOP/s when compute-bound. Expected = roofline x the efficiency band; expected time = max(roofline time / efficiency, launch floor); figures without a measurement are expected, not measured.\n");
    }
    for p in &plan.performance {
        if let Some(n) = &p.latency_note {
            let _ = writeln!(
                o,
                "- {} ({}): {n}",
                if p.latency_bound { "latency" } else { "cache" },
                p.target
            );
        }
        if let Some(w) = &p.warning {
            let _ = writeln!(o, "- warning ({}): {w}", p.target);
        }
        if let (Some(n), Some(_)) = (&p.note, &p.efficiency) {
            let _ = writeln!(o, "- note ({}): {n}", p.target);
        }
        if let Some(m) = &p.measured {
            let _ = writeln!(o, "- measured ({}): {} [{}]", p.target, m.what, m.source);
        }
    }
    for n in &plan.performance_notes {
        // The table's `vs fastest` column already says this on a one-page plan.
        if compact && n.starts_with("expected time per call relative to the fastest") {
            continue;
        }
        let _ = writeln!(o, "- {n}");
    }
    o.push('\n');
}

fn checklist_and_sources(o: &mut String, plan: &Plan) {
    let _ = writeln!(o, "## {}\n", HEADINGS[8]);
    let _ = writeln!(o, "| item | status | evidence |");
    let _ = writeln!(o, "|---|---|---|");
    for c in &plan.checklist {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            c.item,
            c.status.as_str(),
            cell(&c.evidence)
        );
    }
    o.push('\n');

    let _ = writeln!(o, "## Sources\n");
    for s in &plan.sources {
        let _ = writeln!(
            o,
            "- `{}`: {}{} ({})",
            s.key,
            s.title,
            s.url
                .as_ref()
                .map(|u| format!(", <{u}>"))
                .unwrap_or_default(),
            s.kind
        );
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "high" => 0,
        "medium" => 1,
        "low" => 2,
        _ => 3,
    }
}

/// The one-page summary: verdict, strategy, top risks, expected throughput per target, what to
/// build first, open questions.
fn summary(o: &mut String, plan: &Plan) {
    let _ = writeln!(o, "## Summary\n");
    for b in &plan.blocking {
        let _ = writeln!(o, "- **Blocking**: {b}.");
    }
    let _ = writeln!(
        o,
        "- **Verdict** `{}`; **strategy** `{}`: {}.",
        plan.verdict.decision.as_str(),
        plan.strategy.chosen,
        plan.strategy.summary.trim_end_matches('.')
    );
    let mut risks: Vec<(usize, &Risk)> = plan.risks.iter().enumerate().collect();
    risks.sort_by_key(|(i, r)| (severity_rank(&r.severity), *i));
    let compact = matches!(
        plan.verdict.decision,
        Decision::UseFramework | Decision::UseVendorLibrary
    );
    if risks.is_empty() {
        let _ = writeln!(o, "- **Top risks**: none found for these targets.");
    } else if compact {
        let _ = writeln!(
            o,
            "- **Top risks** (section 4): {}.",
            risks
                .iter()
                .take(3)
                .map(|(i, r)| format!("R{} `{}` ({})", i + 1, r.id, r.severity))
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        let _ = writeln!(o, "- **Top risks** (section 4):");
        for (i, r) in risks.iter().take(3) {
            let _ = writeln!(o, "  - R{} `{}` ({}): {}", i + 1, r.id, r.severity, r.title);
        }
    }
    let _ = writeln!(o, "- **Expected per target** (section 8):");
    for p in &plan.performance {
        let unit = p.unit.as_deref().unwrap_or("");
        let range = match (p.expected_low, p.expected_high) {
            (Some(l), Some(h)) => format!("{}-{} {unit}", num(l), num(h)),
            _ => "unknown".into(),
        };
        let mut tags = Vec::new();
        if let Some(t) = p.expected_time_us {
            tags.push(format!("{} us per call", num(t)));
        }
        if p.latency_bound {
            tags.push("latency-bound".into());
        }
        if p.efficiency.as_ref().is_some_and(|e| e.proxy) {
            tags.push("proxy band".into());
        }
        if p.measured.is_some() {
            tags.push("measured point in section 8".into());
        }
        let _ = writeln!(
            o,
            "  - {}: {range}{}",
            p.target,
            if tags.is_empty() {
                String::new()
            } else {
                format!(" ({})", tags.join(", "))
            }
        );
    }
    let first = match plan.verdict.decision {
        Decision::UseFramework | Decision::UseVendorLibrary => format!(
            "the {} call and its test against the CPU reference on each target; `kplan ci` writes the workflow that runs it",
            if plan.verdict.decision == Decision::UseFramework { "framework" } else { "library" }
        ),
        _ => {
            let primary = plan
                .strategy
                .per_target
                .iter()
                .find(|p| p.abstraction != "cpu-fallback" && p.abstraction != "none")
                .map(|p| format!("{} ({})", p.target, p.abstraction))
                .unwrap_or_else(|| "the first GPU target".into());
            format!(
                "the CPU reference and the kernel's harness (docs/verify.md), then the {primary} path with the tile in section 6; compile every target on every change (`kplan ci`)"
            )
        }
    };
    let _ = writeln!(o, "- **Build first**: {first}.");
    let open: Vec<&ChecklistItem> = plan
        .checklist
        .iter()
        .filter(|c| !matches!(c.status, Status::Pass | Status::NotApplicable))
        .collect();
    if open.is_empty() {
        let _ = writeln!(o, "- **Open questions**: none from the checklist.");
    } else {
        let _ = writeln!(o, "- **Open questions** (checklist):");
        for c in open {
            let _ = writeln!(o, "  - {} ({}): {}", c.item, c.status.as_str(), c.evidence);
        }
    }
    o.push('\n');
}
