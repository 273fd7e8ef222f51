//! Section 8: performance expectations per target. Roofline = min(peak[math dtype], intensity x
//! bandwidth); the expected range is the roofline times the efficiency band of the target's
//! strategy (data/efficiency.toml, sourced); unknown peak or bandwidth stays unknown.

use super::strategy::{op_class, Decided};
use crate::analysis::{roofline, tidy, Bound};
use crate::efficiency::EfficiencyTable;
use crate::model::{EfficiencyRef, Measured, OpTarget, Performance};
use crate::spec::Problem;

/// A problem whose roofline time is below this many launch floors is latency-bound.
const LATENCY_BOUND_LAUNCHES: f64 = 3.0;

pub fn expectations(
    cx: &super::Context,
    ops: &[OpTarget],
    strategy: &Decided,
) -> (Vec<Performance>, Vec<String>) {
    let (spec, kb, work, targets) = (cx.spec, cx.kb, &cx.work, &cx.targets[..]);
    let eff = EfficiencyTable::builtin();
    let math_dtype = super::backend::math_dtype(spec).as_str().to_string();
    let mut out = Vec::new();
    let mut unbanded_noted = false;
    let mut class_notes: Vec<String> = Vec::new();
    for (t, o) in targets.iter().zip(ops) {
        let abs = strategy.abstraction(t.index);
        let abs_name = abs.to_string();
        let group = abs.efficiency_group();
        let rl = match (o.peak_tflops, o.bandwidth_gbs) {
            _ if work.unknown.is_some() => None,
            (Some(p), Some(b)) => roofline(work, p, b),
            _ => None,
        };
        let mut class = op_class(spec, targets);
        // A matrix op that is memory-bound on this target (skinny GEMM, short sequences) moves
        // bytes like a streaming kernel.
        if rl.is_some_and(|r| r.bound == Bound::Memory) && (class == "gemm" || class == "attention")
        {
            class = "streaming";
        }
        // The streaming and row bands are fractions of bandwidth, measured on memory-bound
        // kernels; a non-matrix op that is compute-bound here (high-intensity custom or
        // elementwise work) has no sourced FLOP/s efficiency, so its range stays unknown.
        let bandwidth_band_on_compute = rl.is_some_and(|r| r.bound == Bound::Compute)
            && (class == "streaming" || class == "row");
        let family = if t.is_rdna() {
            Some("rdna")
        } else if t.is_cdna() {
            Some("cdna")
        } else {
            None
        };
        let e = if bandwidth_band_on_compute {
            None
        } else {
            eff.lookup_family(t.vendor().as_str(), family, class, group)
        };
        if t.is_gpu() && !unbanded_noted {
            if let Some(u) = eff.unbanded(class) {
                unbanded_noted = true;
                class_notes.push(format!("no expected range: {}", u.basis));
            }
        }
        let measured = t.device.as_deref().and_then(|d| {
            let mut ms: Vec<&kplan_kb::Measurement> = kb
                .measurements
                .iter()
                .filter(|m| {
                    m.op == spec.op.as_str() && m.device == d.id && m.dtype == spec.storage.as_str()
                })
                .collect();
            let shape = problem_shape(&spec.problem);
            // Prefer what this plan would ship (same strategy family), then the closest shape.
            let family = match group {
                "triton" => "triton",
                "framework" => "torch",
                "vendor-library" => "blas",
                _ => "kplan-cuda",
            };
            let distance = |m: &kplan_kb::Measurement| -> u64 {
                let mut d = 0.0f64;
                for (k, v) in &shape {
                    match m.shape.get(k) {
                        Some(mv) => d += ((*mv as f64).max(1.0) / (*v as f64).max(1.0)).ln().abs(),
                        None => d += 50.0,
                    }
                }
                (d * 1000.0) as u64
            };
            ms.sort_by_key(|m| {
                (
                    u8::from(!m.implementation.contains(family)),
                    distance(m),
                    m.id.clone(),
                )
            });
            ms.first().map(|m| Measured {
                value: m.achieved,
                unit: m.unit.clone(),
                what: format!(
                    "{} `{}` ({}) on {}, shape {}, {}{}",
                    m.implementation,
                    m.kernel,
                    m.dtype,
                    d.name,
                    if m.shape.is_empty() {
                        "unspecified".to_string()
                    } else {
                        m.shape
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    },
                    m.date,
                    match (m.shape == shape, m.implementation.contains(family)) {
                        (true, true) => "",
                        (true, false) => " (another implementation than this plan's strategy)",
                        (false, true) => " (closest measured shape; not this spec's)",
                        (false, false) => " (another implementation and shape than this plan's)",
                    }
                ),
                source: m.source.clone(),
            })
        });
        let mut p = Performance {
            target: t.name.clone(),
            bound: rl.map(|r| r.bound),
            roofline: rl.map(|r| r.value),
            unit: rl.map(|r| {
                if r.bound == Bound::Memory {
                    "GB/s".to_string()
                } else {
                    "TFLOP/s".to_string()
                }
            }),
            expected_low: None,
            expected_high: None,
            measured,
            strategy: abs_name.clone(),
            efficiency: e.map(|e| {
                let proxy_reason = e.proxy_reason(&t.arch.id, &math_dtype);
                EfficiencyRef {
                    low: e.low,
                    high: e.high,
                    class: e.class.clone(),
                    strategy: e.strategy.clone(),
                    basis: e.basis.clone(),
                    proxy: proxy_reason.is_some(),
                    proxy_reason,
                    sources: e.sources.clone(),
                }
            }),
            roofline_time_us: rl.map(|r| r.time_us),
            expected_time_us: None,
            gap_vs_fastest: None,
            launch_floor_us: None,
            latency_bound: false,
            latency_note: None,
            warning: None,
            note: None,
        };
        let floor = if t.is_gpu() {
            eff.launch_floor(t.vendor().as_str())
        } else {
            None
        };
        p.launch_floor_us = floor.map(|f| f.floor_us);
        match (rl, e) {
            (None, _) => {
                p.note = Some(format!(
                    "unknown: {}",
                    match &work.unknown {
                        Some(_) => "kplan has no work model for this problem (section 5), so there is no roofline to compare with".to_string(),
                        None => o.note.clone().unwrap_or_else(|| {
                            "the KB lacks the peak or bandwidth for this target".into()
                        }),
                    }
                ))
            }
            (Some(r), Some(e)) => {
                p.expected_low = Some(r.value * e.low);
                p.expected_high = Some(r.value * e.high);
                // Expected time = max(roofline time / efficiency, launch floor).
                let t_band = r.time_us / ((e.low + e.high) / 2.0);
                p.expected_time_us = Some(match floor {
                    Some(f) => t_band.max(f.floor_us),
                    None => t_band,
                });
                if e.low < 1.0 / 3.0 {
                    p.warning = Some(format!(
                        "the low end of the expected range is {:.1}x below what the hardware allows ({} efficiency {:.0}%): {}",
                        1.0 / e.low,
                        group,
                        e.low * 100.0,
                        if t.vendor() == kplan_kb::Vendor::Amd {
                            "tune this backend separately (risk `amd-tuning`) or choose a lower abstraction for it"
                        } else {
                            "tune this backend separately or choose a lower abstraction for it"
                        }
                    ));
                }
            }
            (Some(r), None) => {
                p.note = Some(if bandwidth_band_on_compute {
                    format!(
                        "roofline {:.0} TFLOP/s known; expected range unknown: the op is compute-bound on {} and the sourced {} `{}` efficiency is a fraction of bandwidth, not of FLOP/s",
                        r.value,
                        t.name,
                        class,
                        group
                    )
                } else {
                    format!(
                        "roofline {:.0} {} known; expected range unknown: no sourced efficiency for {} `{}` on {}",
                        r.value,
                        if r.bound == Bound::Memory { "GB/s" } else { "TFLOP/s" },
                        class,
                        group,
                        t.vendor().as_str()
                    )
                })
            }
        }
        if let (Some(r), Some(f)) = (rl, floor) {
            // A few launch floors: below that, launch latency decides the time per call.
            if r.time_us < LATENCY_BOUND_LAUNCHES * f.floor_us {
                p.latency_bound = true;
                if p.expected_time_us.is_none() {
                    p.expected_time_us = Some(r.time_us.max(f.floor_us));
                }
            }
            let residency = t.device.as_deref().and_then(|d| {
                let fits = |b: Option<u64>| b.filter(|b| work.bytes <= *b as f64);
                match (fits(d.l2_bytes.value), fits(d.llc_bytes.as_ref().and_then(|f| f.value))) {
                    (Some(l2), _) => Some(format!(
                        "its {} fit in the {} L2 of {}: back-to-back calls read from cache, so the {} roofline overstates the time",
                        crate::render::si_bytes(work.bytes),
                        crate::render::si_bytes(l2 as f64),
                        d.name,
                        d.roofline_memory()
                    )),
                    (None, Some(llc)) => Some(format!(
                        "its {} fit in the {} Infinity Cache (MALL) of {}: back-to-back calls read from it, so the {} roofline overstates the time",
                        crate::render::si_bytes(work.bytes),
                        crate::render::si_bytes(llc as f64),
                        d.name,
                        d.roofline_memory()
                    )),
                    _ => None,
                }
            });
            if p.latency_bound {
                // A rate over a call the launch decides says nothing: no GB/s or TFLOP/s range.
                p.expected_low = None;
                p.expected_high = None;
                p.latency_note = Some(format!(
                    "latency-bound: the roofline time ({:.2} us) is below {LATENCY_BOUND_LAUNCHES:.0} launch floors ({} us each{}, [{}]); expected time per call is at least the floor, and no bandwidth range is given (the launch, not the memory system, sets the time){}; fuse with the producer or consumer, or capture in a {} graph",
                    r.time_us,
                    f.floor_us,
                    if f.proxy { ", a proxy" } else { "" },
                    f.sources.join(", "),
                    residency.map(|r| format!("; {r}")).unwrap_or_default(),
                    match t.vendor() {
                        kplan_kb::Vendor::Amd => "HIP",
                        kplan_kb::Vendor::Nvidia => "CUDA",
                        _ => "CUDA/HIP",
                    }
                ));
            } else if let Some(res) = residency {
                p.latency_note = Some(format!("the problem {res}"));
            }
        }
        out.push(p);
    }
    let best = out
        .iter()
        .filter_map(|p| p.expected_time_us)
        .fold(f64::INFINITY, f64::min);
    if best.is_finite() && best > 0.0 {
        for p in &mut out {
            p.gap_vs_fastest = p.expected_time_us.map(|t| tidy(t / best));
        }
    }
    for p in &mut out {
        for v in [
            &mut p.roofline,
            &mut p.expected_low,
            &mut p.expected_high,
            &mut p.roofline_time_us,
            &mut p.expected_time_us,
            &mut p.launch_floor_us,
        ] {
            *v = v.map(tidy);
        }
    }
    let mut notes = class_notes;
    if let Some(fast) = out
        .iter()
        .filter(|p| p.gap_vs_fastest == Some(1.0))
        .map(|p| p.target.clone())
        .next()
    {
        let slow: Vec<String> = out
            .iter()
            .filter_map(|p| p.gap_vs_fastest.map(|g| (p, g)))
            .filter(|(_, g)| *g > 1.05)
            .map(|(p, g)| format!("{} {:.1}x", p.target, g))
            .collect();
        if !slow.is_empty() {
            notes.push(format!(
                "expected time per call relative to the fastest target ({fast}): {}",
                slow.join(", ")
            ));
        }
    }
    let unknown: Vec<&str> = out
        .iter()
        .filter(|p| p.roofline.is_none())
        .map(|p| p.target.as_str())
        .collect();
    if let Some(why) = &work.unknown {
        notes.push(format!("no number for any target: {why}"));
    } else if !unknown.is_empty() {
        notes.push(format!(
            "no number for {}: the KB lacks the device peak or bandwidth (unknown stays unknown)",
            unknown.join(", ")
        ));
    }
    (out, notes)
}

fn problem_shape(p: &Problem) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    match p {
        Problem::Flat { n } => {
            m.insert("n".into(), *n);
        }
        Problem::Rows { rows, cols } => {
            m.insert("rows".into(), *rows);
            m.insert("cols".into(), *cols);
        }
        Problem::Gemm { batch, m: mm, n, k } => {
            if *batch != 1 {
                m.insert("batch".into(), *batch);
            }
            m.insert("m".into(), *mm);
            m.insert("n".into(), *n);
            m.insert("k".into(), *k);
        }
        Problem::Attention {
            batch,
            heads,
            seq_q,
            head_dim,
            ..
        } => {
            m.insert("batch".into(), *batch);
            m.insert("heads".into(), *heads);
            m.insert("seq".into(), *seq_q);
            m.insert("head_dim".into(), *head_dim);
        }
        Problem::Custom { .. } => {}
    }
    m
}
