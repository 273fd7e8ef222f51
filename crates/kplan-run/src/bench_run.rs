//! `kplan bench` orchestration: the cases to time, the device, the copy bandwidth anchor, every
//! case's configurations, and the report with its human rendering. The CLI parses arguments and
//! prints what this returns.

use crate::bench::{
    bench_case, bench_configs, copy_bandwidth, default_cases, kb_peak, BenchRecord, BenchReport,
};
use crate::cuda::CudaExecutor;
use crate::error::RunError;
use crate::kernels::{KernelSources, Shape, Tiles};
use crate::reference::{DType, Op};
use crate::skip::Skip;
use crate::verify::parse_sizes;
use std::fmt::Write as _;

/// What to time.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub ops: Vec<Op>,
    /// `--sizes` as given (parsed per kernel); None: the goal shapes.
    pub sizes: Option<String>,
    /// None: per shape, as the goals name them (bf16 for `--sizes`).
    pub dtypes: Option<Vec<DType>>,
    pub reps: usize,
    pub warmup: usize,
    pub alternatives: bool,
}

/// A finished run or the reason it could not run here.
#[derive(Debug, Clone)]
pub enum BenchOutcome {
    Ran(BenchReport),
    Skipped(Skip),
}

impl BenchOutcome {
    /// A timed case whose output did not match the reference.
    pub fn failed(&self) -> bool {
        match self {
            BenchOutcome::Ran(r) => r.records.iter().any(|x| !x.output_checked),
            BenchOutcome::Skipped(_) => false,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            BenchOutcome::Ran(r) => serde_json::to_value(r).unwrap_or_default(),
            BenchOutcome::Skipped(s) => {
                serde_json::json!({"status": "skipped", "skip_reason": s.reason})
            }
        }
    }

    pub fn render_human(&self) -> String {
        match self {
            BenchOutcome::Ran(r) => render_bench_human(r),
            BenchOutcome::Skipped(s) => format!("bench skipped: {}\n", s.reason),
        }
    }
}

/// The (kernel, dtype, shape) cases of `plan`.
pub fn bench_cases(plan: &BenchPlan) -> Result<Vec<(Op, DType, Shape)>, RunError> {
    let mut cases = Vec::new();
    for &op in &plan.ops {
        match &plan.sizes {
            Some(s) => {
                for shape in parse_sizes(op, s)? {
                    for &d in plan.dtypes.as_deref().unwrap_or(&[DType::Bf16]) {
                        cases.push((op, d, shape));
                    }
                }
            }
            None => {
                for (d, shape) in default_cases(op) {
                    if plan.dtypes.as_ref().map_or(true, |v| v.contains(&d)) {
                        cases.push((op, d, shape));
                    }
                }
            }
        }
    }
    Ok(cases)
}

/// Times `plan` on CUDA device 0.
pub fn run_bench(
    kb: &kplan_kb::Kb,
    sources: &KernelSources,
    tiles: &Tiles,
    plan: &BenchPlan,
) -> Result<BenchOutcome, RunError> {
    let cases = bench_cases(plan)?;
    let mut exec = match CudaExecutor::open(sources)? {
        Ok(e) => e,
        Err(skip) => return Ok(BenchOutcome::Skipped(skip)),
    };
    let peak = kb_peak(kb, &exec.name);
    let copy_bytes: usize = 1 << 30;
    let copy_gbs = copy_bandwidth(&mut exec, copy_bytes, plan.reps.max(10))?;
    let mut records: Vec<BenchRecord> = Vec::new();
    for (op, dtype, shape) in cases {
        let configs = bench_configs(tiles, op, dtype, shape, plan.alternatives);
        let rs = bench_case(
            &mut exec,
            op,
            dtype,
            shape,
            &configs,
            plan.warmup,
            plan.reps,
            copy_gbs,
            peak.as_ref().map(|p| p.1),
        )
        .map_err(|e| RunError::Exec {
            what: format!(
                "benchmarking {} {} {}",
                op.as_str(),
                dtype.as_str(),
                shape.label()
            ),
            message: e.to_string(),
        })?;
        for (i, mut r) in rs.into_iter().enumerate() {
            r.default = i == 0;
            records.push(r);
        }
    }
    Ok(BenchOutcome::Ran(BenchReport {
        device: exec.name.clone(),
        compute_capability: format!("{}{}", exec.cc.0, exec.cc.1),
        sm_count: exec.sm_count,
        l2_bytes: exec.l2_bytes,
        driver: exec.driver_version(),
        kb_device: peak.as_ref().map(|p| p.0.clone()),
        peak_gbs: peak.as_ref().map(|p| p.1),
        peak_source: peak.as_ref().map(|p| p.2.clone()),
        copy_gbs,
        copy_bytes: 2 * copy_bytes as u64,
        flush_bytes: (exec.l2_bytes * 4).max(256 << 20),
        warmup: plan.warmup,
        reps: plan.reps,
        records,
    }))
}

/// The human table of a bench report.
pub fn render_bench_human(r: &BenchReport) -> String {
    let mut s = format!(
        "{} (sm_{}, {} SMs, driver {}); copy {:.0} GB/s; peak {}\n",
        r.device,
        r.compute_capability,
        r.sm_count,
        r.driver,
        r.copy_gbs,
        match (&r.kb_device, r.peak_gbs) {
            (Some(d), Some(p)) => format!("{p:.0} GB/s ({d}, KB)"),
            _ => "unknown (device not in the KB)".into(),
        }
    );
    let _ = writeln!(
        s,
        "{:<11} {:<5} {:<14} {:<18} {:>10} {:>9} {:>7} {:>7} check",
        "kernel", "dtype", "shape", "config", "median ms", "GB/s", "%peak", "%copy"
    );
    for x in &r.records {
        let _ = writeln!(
            s,
            "{:<11} {:<5} {:<14} {:<18} {:>10.4} {:>9.1} {:>7} {:>7.1} {}",
            x.kernel,
            x.dtype,
            x.shape,
            if x.default {
                x.config.clone()
            } else {
                format!("({})", x.config)
            },
            x.median_ms,
            x.gbs,
            x.frac_peak
                .map(|f| format!("{:.1}", f * 100.0))
                .unwrap_or_else(|| "-".into()),
            x.frac_copy * 100.0,
            if x.output_checked {
                "ok".to_string()
            } else {
                format!("FAILED: {}", x.check_error.clone().unwrap_or_default())
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_follow_the_plan() {
        let plan = BenchPlan {
            ops: vec![Op::Add],
            sizes: Some("1000,2^20".into()),
            dtypes: None,
            reps: 3,
            warmup: 1,
            alternatives: false,
        };
        let c = bench_cases(&plan).unwrap();
        assert_eq!(c.len(), 2);
        assert!(c.iter().all(|x| x.1 == DType::Bf16));
        let goal = BenchPlan {
            sizes: None,
            ..plan.clone()
        };
        assert_eq!(
            bench_cases(&goal).unwrap().len(),
            default_cases(Op::Add).len()
        );
        let bad = BenchPlan {
            sizes: Some("8x33".into()),
            ..plan
        };
        assert!(bench_cases(&bad).is_err());
    }
}
