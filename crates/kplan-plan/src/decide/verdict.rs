//! The verdict: write a portable custom kernel, or one of the "do not" outcomes.

use super::{join_names, Target};
use crate::model::{Decision, Verdict};
use crate::spec::{Abstraction, Op, PerfReq, Spec};
use kplan_kb::{Availability, Kb, Vendor};

/// Features a near-peak kernel needs that exist only on NVIDIA among the spec's GPU targets.
pub fn nvidia_only_features(spec: &Spec, kb: &Kb, targets: &[Target]) -> Vec<String> {
    spec.features
        .iter()
        .filter(|f| {
            let others: Vec<&Target> = targets
                .iter()
                .filter(|t| t.is_gpu() && t.vendor() != Vendor::Nvidia)
                .collect();
            !others.is_empty()
                && others
                    .iter()
                    .all(|t| kb.availability(f, &t.arch.id) == Availability::No)
                && targets.iter().any(|t| {
                    t.vendor() == Vendor::Nvidia
                        && kb.availability(f, &t.arch.id) == Availability::Yes
                })
        })
        .cloned()
        .collect()
}

pub fn decide(spec: &Spec, kb: &Kb, targets: &[Target]) -> Verdict {
    let mut v = decide_inner(spec, kb, targets);
    v.sources = sources(spec, kb, targets, v.decision);
    v
}

/// The KB support entries and efficiency rows each kind of verdict reads.
fn sources(spec: &Spec, kb: &Kb, targets: &[Target], d: Decision) -> Vec<String> {
    let eff = crate::efficiency::EfficiencyTable::builtin();
    let rows = matches!(spec.problem, crate::spec::Problem::Rows { .. });
    let class = super::strategy::op_class(spec.op, rows);
    let mut v: Vec<String> = Vec::new();
    match d {
        Decision::UseFramework => {
            if let Some(e) = eff.lookup("nvidia", class, "framework") {
                v.extend(e.sources.iter().cloned());
            }
        }
        Decision::UseVendorLibrary => {
            for vendor in ["nvidia", "amd"] {
                if let Some(e) = eff.lookup(vendor, "gemm", "vendor-library") {
                    v.extend(e.sources.iter().cloned());
                }
            }
            for t in targets.iter().filter(|t| t.is_gpu()) {
                for f in ["bf16-matrix", "fp8-matrix", "tf32-matrix"] {
                    if let Some(s) = kb.support(f, &t.arch.id) {
                        v.push(s.source.clone());
                    }
                }
            }
        }
        Decision::NvidiaOnly | Decision::CustomKernel => {
            for t in targets.iter().filter(|t| t.is_gpu()) {
                for f in &spec.features {
                    if let Some(s) = kb.support(f, &t.arch.id) {
                        v.push(s.source.clone());
                    }
                }
            }
        }
    }
    v.sort();
    v.dedup();
    v
}

fn decide_inner(spec: &Spec, kb: &Kb, targets: &[Target]) -> Verdict {
    let allowed = |a: Abstraction| spec.allowed.contains(&a);
    let gpu: Vec<&Target> = targets.iter().filter(|t| t.is_gpu()).collect();
    let non_nv: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.vendor() != Vendor::Nvidia)
        .collect();
    let mut inputs = vec![
        format!("op = {}", spec.op.as_str()),
        format!("requirements.performance = {}", spec.performance.as_str()),
        format!(
            "requirements.framework_expressible = {}",
            spec.framework_expressible
        ),
        format!(
            "GPU targets: {}",
            if gpu.is_empty() {
                "none".to_string()
            } else {
                join_names(
                    &gpu.iter()
                        .map(|t| format!("{} ({})", t.name, t.vendor().as_str()))
                        .collect::<Vec<_>>(),
                )
            }
        ),
        format!(
            "allowed: {}",
            spec.allowed
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];

    if spec.framework_expressible && allowed(Abstraction::Framework) {
        if spec.performance == PerfReq::Reasonable {
            return Verdict {
                decision: Decision::UseFramework,
                reason: "the framework already expresses this operation and the requirement is `reasonable` performance: \
                         a custom kernel would add code on every backend for no required gain"
                    .into(),
                inputs,
                sources: Vec::new(),
            };
        }
        // Near-peak: the framework still wins where its kernels for this class are near-peak.
        let rows = matches!(spec.problem, crate::spec::Problem::Rows { .. });
        let class = super::strategy::op_class(spec.op, rows);
        if let Some(e) =
            crate::efficiency::EfficiencyTable::builtin().lookup("nvidia", class, "framework")
        {
            if e.high >= super::strategy::NEAR_PEAK_FRACTION
                && e.low >= super::strategy::NEAR_PEAK_FRACTION - 0.1
            {
                inputs.push(format!(
                    "framework efficiency for `{class}` on NVIDIA: {:.0}-{:.0}% [{}]",
                    e.low * 100.0,
                    e.high * 100.0,
                    e.sources.join(", ")
                ));
                return Verdict {
                    decision: Decision::UseFramework,
                    reason: format!(
                        "the framework expresses it and its `{class}` kernels already run near peak ({:.0}-{:.0}% of the roofline, section 8): \
                         a custom kernel cannot gain enough to pay for its upkeep on every backend",
                        e.low * 100.0,
                        e.high * 100.0
                    ),
                    inputs,
                    sources: Vec::new(),
                };
            }
        }
    }
    if spec.op == Op::Gemm && allowed(Abstraction::VendorBlas) {
        let unsupported: Vec<String> = gpu
            .iter()
            .filter(|t| {
                let f = match spec.storage {
                    kplan_kb::Dtype::Bf16 => "bf16-matrix",
                    kplan_kb::Dtype::Fp8 => "fp8-matrix",
                    kplan_kb::Dtype::Tf32 => "tf32-matrix",
                    _ => return false,
                };
                kb.availability(f, &t.arch.id) == Availability::No
            })
            .map(|t| t.name.clone())
            .collect();
        let exotic: Vec<&String> = spec
            .features
            .iter()
            .filter(|f| {
                matches!(
                    f.as_str(),
                    "cooperative-launch" | "dynamic-parallelism" | "inline-ptx" | "inline-gcn-asm"
                )
            })
            .collect();
        if unsupported.is_empty() && exotic.is_empty() {
            inputs.push(format!(
                "{} matrix support on every GPU target (KB)",
                spec.storage.as_str()
            ));
            let eff = crate::efficiency::EfficiencyTable::builtin();
            let band = |v: &str| {
                eff.lookup(v, "gemm", "vendor-library").map(|e| {
                    format!(
                        "{:.0}-{:.0}% of peak on {v} [{}]",
                        e.low * 100.0,
                        e.high * 100.0,
                        e.sources.join(", ")
                    )
                })
            };
            let bands: Vec<String> = ["nvidia", "amd"]
                .into_iter()
                .filter(|v| gpu.iter().any(|t| t.vendor().as_str() == *v))
                .filter_map(band)
                .collect();
            return Verdict {
                decision: Decision::UseVendorLibrary,
                reason: format!(
                    "a plain {} GEMM is what cuBLAS/cuBLASLt, hipBLASLt/rocBLAS and CPU BLAS (oneDNN/OpenBLAS) are tuned for{}; \
                     a new portable kernel is unlikely to beat them: call them behind one dispatch function",
                    spec.storage.as_str(),
                    if bands.is_empty() { String::new() } else { format!(": vendor libraries reach {}", bands.join(", ")) }
                ),
                inputs,
                sources: Vec::new(),
            };
        }
        if !unsupported.is_empty() {
            inputs.push(format!(
                "no {} matrix units on {}",
                spec.storage.as_str(),
                join_names(&unsupported)
            ));
        }
        if !exotic.is_empty() {
            inputs.push(format!(
                "features beyond a library call: {}",
                exotic
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if !gpu.is_empty() && non_nv.is_empty() {
        let cpu: Vec<&str> = targets
            .iter()
            .filter(|t| !t.is_gpu())
            .map(|t| t.name.as_str())
            .collect();
        return Verdict {
            decision: Decision::NvidiaOnly,
            reason: format!(
                "every GPU target is NVIDIA ({}): a portable GPU kernel buys nothing; write it for NVIDIA only, at the abstraction chosen in section 3{}",
                join_names(&gpu.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()),
                if cpu.is_empty() {
                    String::new()
                } else {
                    format!(" and keep a separate CPU fallback for {}", join_names(&cpu))
                }
            ),
            inputs,
            sources: Vec::new(),
        };
    }
    let nv_only = nvidia_only_features(spec, kb, targets);
    if spec.performance == PerfReq::NearPeak
        && !nv_only.is_empty()
        && !allowed(Abstraction::PerBackend)
    {
        inputs.push(format!(
            "NVIDIA-only features required: {}",
            nv_only.join(", ")
        ));
        return Verdict {
            decision: Decision::NvidiaOnly,
            reason: format!(
                "near-peak performance needs {} which {} lack, and per-backend code is not allowed: the portability cost \
                 cannot be absorbed; ship the NVIDIA kernel and run the framework or a simple portable path elsewhere",
                nv_only.join(", "),
                join_names(&non_nv.iter().map(|t| t.name.as_str()).collect::<Vec<_>>())
            ),
            inputs,
            sources: Vec::new(),
        };
    }
    let mut reason = String::from("no \"do not write a portable kernel\" condition holds: ");
    let mut why = Vec::new();
    if !spec.framework_expressible {
        why.push("the framework cannot express it".to_string());
    } else if spec.performance == PerfReq::NearPeak {
        why.push("the framework expresses it but near-peak performance is required".to_string());
    } else {
        why.push("the framework is not an allowed abstraction".to_string());
    }
    if !non_nv.is_empty() {
        why.push(format!(
            "non-NVIDIA GPU targets are in scope ({})",
            join_names(&non_nv.iter().map(|t| t.name.as_str()).collect::<Vec<_>>())
        ));
    }
    if gpu.is_empty() {
        why.push("only CPU targets are named".into());
    }
    if spec.op == Op::Gemm {
        why.push("a vendor library alone does not cover it (see inputs)".into());
    }
    reason.push_str(&why.join("; "));
    Verdict {
        decision: Decision::CustomKernel,
        reason,
        inputs,
        sources: Vec::new(),
    }
}
