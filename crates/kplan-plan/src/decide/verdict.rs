//! The verdict: write a portable custom kernel, or one of the "do not" outcomes.

use super::{join_names, Target};
use crate::model::{Decision, Verdict};
use crate::spec::{Abstraction, Op, PerfReq, Spec};
use kplan_kb::{Availability, Kb, LibraryKind, Vendor};

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

pub fn decide(cx: &super::Context) -> Verdict {
    let (spec, kb, targets) = (cx.spec, cx.kb, &cx.targets[..]);
    let mut v = decide_inner(spec, kb, targets);
    v.sources = sources(spec, kb, targets, v.decision);
    v
}

/// The KB support entries and efficiency rows each kind of verdict reads.
fn sources(spec: &Spec, kb: &Kb, targets: &[Target], d: Decision) -> Vec<String> {
    let eff = crate::efficiency::EfficiencyTable::builtin();
    let class = super::strategy::op_class(spec, targets);
    let mut v: Vec<String> = Vec::new();
    match d {
        Decision::UseFramework => {
            if let Some(e) = eff.lookup("nvidia", class, "framework") {
                v.extend(e.sources.iter().cloned());
            }
        }
        Decision::UseVendorLibrary => {
            if let Some(info) = kb.op_info(spec.kb_op()) {
                for l in &info.library {
                    if targets.iter().any(|t| t.vendor().as_str() == l.vendor) {
                        v.push(l.source.clone());
                    }
                }
            }
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
        Decision::NvidiaOnly | Decision::AmdOnly | Decision::CustomKernel => {
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
        format!("op = {}", spec.op_name()),
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
        // Near-peak: the framework still wins where its kernels for this class are near-peak
        // on every GPU vendor in scope (a vendor with no efficiency figure does not count).
        let class = super::strategy::op_class(spec, targets);
        let eff = crate::efficiency::EfficiencyTable::builtin();
        let mut vendors: Vec<&str> = gpu
            .iter()
            .map(|t| t.vendor().as_str())
            .filter(|v| matches!(*v, "nvidia" | "amd"))
            .collect();
        vendors.sort();
        vendors.dedup();
        let rows_of: Vec<(&str, Option<&crate::efficiency::Efficiency>)> = vendors
            .iter()
            .map(|v| (*v, eff.lookup(v, class, "framework")))
            .collect();
        let near = |e: &crate::efficiency::Efficiency| {
            e.high >= super::strategy::NEAR_PEAK_FRACTION
                && e.low >= super::strategy::NEAR_PEAK_FRACTION - 0.1
        };
        for (v, e) in &rows_of {
            inputs.push(match e {
                Some(e) => format!(
                    "framework efficiency for `{class}` on {v}: {:.0}-{:.0}% [{}]",
                    e.low * 100.0,
                    e.high * 100.0,
                    e.sources.join(", ")
                ),
                None => format!("framework efficiency for `{class}` on {v}: unknown"),
            });
        }
        if !rows_of.is_empty() && rows_of.iter().all(|(_, e)| e.is_some_and(near)) {
            let bands: Vec<String> = rows_of
                .iter()
                .filter_map(|(v, e)| {
                    e.map(|e| format!("{v} {:.0}-{:.0}%", e.low * 100.0, e.high * 100.0))
                })
                .collect();
            return Verdict {
                decision: Decision::UseFramework,
                reason: format!(
                    "the framework expresses it and its `{class}` kernels already run near peak on every vendor in scope ({} of the roofline, section 8): \
                     a custom kernel cannot gain enough to pay for its upkeep on every backend",
                    bands.join(", ")
                ),
                inputs,
                sources: Vec::new(),
            };
        }
    }
    // One GPU vendor in scope: a portable GPU kernel buys nothing; plan for that vendor alone
    // (its libraries, its languages, its CI legs).
    for (vendor, decision, langs) in [
        (
            Vendor::Nvidia,
            Decision::NvidiaOnly,
            "CUDA, CUTLASS or Triton",
        ),
        (
            Vendor::Amd,
            Decision::AmdOnly,
            "HIP, Composable Kernel or Triton (no CUDA build)",
        ),
    ] {
        if gpu.is_empty() || !gpu.iter().all(|t| t.vendor() == vendor) {
            continue;
        }
        let cpu: Vec<&str> = targets
            .iter()
            .filter(|t| !t.is_gpu())
            .map(|t| t.name.as_str())
            .collect();
        let libs = libraries_for(spec, kb, targets, vendor.as_str());
        let limits = library_limits(spec, kb, targets, vendor.as_str());
        let lib_note = if !libs.is_empty() {
            inputs.push(format!(
                "libraries for `{}` on {}: {}",
                spec.op_name(),
                vendor.as_str(),
                libs.join(", ")
            ));
            format!("; start from {} (section 3)", libs.join(", "))
        } else if !limits.is_empty() {
            inputs.push(limits.join("; "));
            format!(
                "; no allowed library covers this spec ({}), so the kernel is written with it as the baseline",
                limits.join("; ")
            )
        } else {
            String::new()
        };
        return Verdict {
            decision,
            reason: format!(
                "every GPU target is {} ({}): a portable GPU kernel buys nothing; write it for {} only, in {} at the abstraction chosen in section 3{lib_note}{}",
                vendor.as_str().to_uppercase(),
                join_names(&gpu.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()),
                vendor.as_str().to_uppercase(),
                langs,
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
    if allowed(Abstraction::VendorBlas) || any_library_allowed(spec, kb) {
        // Stretch targets are planned, but a library that covers every required GPU target is
        // not given up for them.
        let required: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| !spec.stretch.contains(&t.name))
            .collect();
        if let Some(v) = library_first(spec, kb, &required, targets, &mut inputs) {
            return v;
        }
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
    // One GPU vendor in scope returned above (nvidia-only / amd-only): a mixed or CPU-only scope.
    let mut reason = String::from("no \"do not write a portable kernel\" condition holds: ");
    let mut why = Vec::new();
    if !spec.framework_expressible {
        why.push("the spec does not say the framework expresses it".to_string());
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
    if kb
        .op_info(spec.kb_op())
        .is_some_and(|i| !i.library.is_empty())
    {
        why.push(if allowed(Abstraction::VendorBlas) || any_library_allowed(spec, kb) {
            "no allowed library covers it on every GPU target in scope (see inputs)".to_string()
        } else {
            "vendor libraries are not an allowed abstraction (section 2 lists them as the baseline to beat)".to_string()
        });
    }
    reason.push_str(&why.join("; "));
    Verdict {
        decision: Decision::CustomKernel,
        reason,
        inputs,
        sources: Vec::new(),
    }
}

/// Whether the spec's allowed abstractions admit this library: `vendor-library` admits every
/// library; a library compiled into the team's code (CUTLASS, CK) is admitted by its own
/// abstraction too.
pub fn library_allowed(spec: &Spec, l: &kplan_kb::OpLibrary) -> bool {
    let by_name = || {
        let lname = l.name.to_ascii_lowercase();
        spec.named_libraries.iter().any(|n| {
            lname
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == n.as_str())
        })
    };
    // `allowed` names libraries (`cub`, `hipcub`): those, not every library of the level.
    let level =
        spec.allowed.contains(&Abstraction::VendorBlas) && (!spec.library_names_only || by_name());
    level
        || l.abstraction
            .as_deref()
            .is_some_and(|a| spec.allowed.iter().any(|x| x.as_str() == a))
}

/// Whether one call of the library covers this spec: its `when` condition (ops.toml) holds for
/// the spec's dtypes, layout, fusion, sizes and targets.
pub fn library_covers(spec: &Spec, targets: &[Target], l: &kplan_kb::OpLibrary) -> bool {
    let Some(w) = &l.when else { return true };
    match super::when::parse(w) {
        Ok(c) => c.eval(&super::risks::facts(spec, targets, &[])),
        Err(_) => true,
    }
}

/// The allowed `reuse` libraries of `vendor` in the op KB whose one call implements the whole
/// op: those that cover this spec (`covering`) or those that do not.
fn reuse_libraries<'kb>(
    spec: &Spec,
    kb: &'kb Kb,
    targets: &[Target],
    vendor: &str,
    covering: bool,
) -> Vec<&'kb kplan_kb::OpLibrary> {
    kb.op_info(spec.kb_op())
        .map(|i| {
            i.library
                .iter()
                .filter(|l| {
                    l.vendor == vendor
                        && l.role == "reuse"
                        && library_allowed(spec, l)
                        && library_covers(spec, targets, l) == covering
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The allowed `reuse` libraries of `vendor` whose one call covers this spec.
pub fn covering_libraries<'kb>(
    spec: &Spec,
    kb: &'kb Kb,
    targets: &[Target],
    vendor: &str,
) -> Vec<&'kb kplan_kb::OpLibrary> {
    reuse_libraries(spec, kb, targets, vendor, true)
}

/// A library's name with its minimum version where known.
fn named(l: &kplan_kb::OpLibrary) -> String {
    match &l.min_version {
        Some(v) => format!("{} ({v}+)", l.name),
        None => l.name.clone(),
    }
}

/// The allowed `reuse` libraries of `vendor` that do not cover this spec, each with what it
/// lacks: they stay the baseline to beat.
pub fn library_limits(spec: &Spec, kb: &Kb, targets: &[Target], vendor: &str) -> Vec<String> {
    reuse_libraries(spec, kb, targets, vendor, false)
        .into_iter()
        .map(|l| {
            format!(
                "{} lacks what this spec asks: {} [{}]",
                l.name,
                l.limit.as_deref().unwrap_or("its documented coverage"),
                l.source
            )
        })
        .collect()
}

/// Whether some library the spec allows exists for this op (then the library-first check runs).
fn any_library_allowed(spec: &Spec, kb: &Kb) -> bool {
    kb.op_info(spec.kb_op()).is_some_and(|i| {
        i.library
            .iter()
            .any(|l| l.role == "reuse" && library_allowed(spec, l))
    })
}

/// The vendor libraries the op KB lists for `vendor` whose one call implements the whole op
/// (role `reuse`), with versions where known.
pub fn libraries_for(spec: &Spec, kb: &Kb, targets: &[Target], vendor: &str) -> Vec<String> {
    reuse_libraries(spec, kb, targets, vendor, true)
        .into_iter()
        .map(named)
        .collect()
}

/// The per-target label and detail for reusing the op KB's `reuse` libraries of `vendor`:
/// `vendor-library` (all shipped with the vendor's toolkit), `kernel-library` (all open-source
/// kernel libraries) or `library` (both, each named with its kind). Never "BLAS" for a library
/// that is not one.
pub fn library_label(
    spec: &Spec,
    kb: &Kb,
    targets: &[Target],
    vendor: &str,
) -> (super::Abstraction, String) {
    use super::Abstraction as A;
    let libs = reuse_libraries(spec, kb, targets, vendor, true);
    let kernel = libs
        .iter()
        .filter(|l| l.kind == LibraryKind::KernelLibrary)
        .count();
    let label = if kernel == 0 {
        A::VendorLibrary
    } else if kernel == libs.len() {
        A::KernelLibrary
    } else {
        A::Library
    };
    let detail = libs
        .iter()
        .map(|l| {
            if label == A::Library {
                format!("{} ({})", named(l), l.kind.as_str())
            } else {
                named(l)
            }
        })
        .collect::<Vec<_>>()
        .join(" / ");
    (label, detail)
}

/// Every GPU target of `vendor` is memory-bound for this spec's work (intensity below its ridge).
fn memory_bound(spec: &Spec, gpu: &[&Target], vendor: &str) -> bool {
    let w = crate::analysis::work(spec);
    let of: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.vendor().as_str() == vendor)
        .collect();
    let owned: Vec<Target> = of.iter().map(|t| (*t).clone()).collect();
    let ops = super::backend::op_targets(spec, &w, &owned);
    !ops.is_empty()
        && ops
            .iter()
            .all(|o| o.bound == Some(crate::analysis::Bound::Memory))
}

/// Library-first: a library of each GPU vendor in scope covers the op class (and, for matrix
/// ops, every target has matrix units for the dtype), and the kernel needs nothing beyond a
/// library call.
fn library_first(
    spec: &Spec,
    kb: &Kb,
    gpu: &[&Target],
    targets: &[Target],
    inputs: &mut Vec<String>,
) -> Option<Verdict> {
    if gpu.is_empty() {
        return None;
    }
    let mut vendors: Vec<Vendor> = gpu.iter().map(|t| t.vendor()).collect();
    vendors.sort();
    vendors.dedup();
    let per: Vec<(Vendor, Vec<String>)> = vendors
        .iter()
        .map(|v| (*v, libraries_for(spec, kb, targets, v.as_str())))
        .collect();
    let uncovered: Vec<&str> = per
        .iter()
        .filter(|(_, l)| l.is_empty())
        .map(|(v, _)| v.as_str())
        .collect();
    if !uncovered.is_empty() {
        let limits: Vec<String> = uncovered
            .iter()
            .flat_map(|v| library_limits(spec, kb, targets, v))
            .collect();
        inputs.push(if limits.is_empty() {
            format!(
                "no allowed library for `{}` on {} (operation KB)",
                spec.op_name(),
                uncovered.join(", ")
            )
        } else {
            format!(
                "no allowed library covers this `{}` on {}: {}; write the kernel with it as the baseline",
                spec.op_name(),
                uncovered.join(", "),
                limits.join("; ")
            )
        });
        return None;
    }
    let matrix_feature = match spec.storage {
        kplan_kb::Dtype::Bf16 => Some("bf16-matrix"),
        kplan_kb::Dtype::Fp8 => Some("fp8-matrix"),
        kplan_kb::Dtype::Tf32 => Some("tf32-matrix"),
        _ => None,
    };
    if spec.op.uses_matrix_units() {
        if let Some(f) = matrix_feature {
            let no: Vec<&str> = gpu
                .iter()
                .filter(|t| kb.availability(f, &t.arch.id) == Availability::No)
                .map(|t| t.name.as_str())
                .collect();
            if !no.is_empty() {
                inputs.push(format!(
                    "no {} matrix units on {}",
                    spec.storage.as_str(),
                    join_names(&no)
                ));
                return None;
            }
        }
    }
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
    if !exotic.is_empty() {
        inputs.push(format!(
            "features beyond a library call: {}",
            exotic
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return None;
    }
    let cpu: Vec<&Target> = targets.iter().filter(|t| !t.is_gpu()).collect();
    let cpu_libs = libraries_for(spec, kb, targets, "cpu");
    let names: Vec<String> = per
        .iter()
        .map(|(v, l)| format!("{} on {}", l.join(" / "), v.as_str()))
        .chain(
            (!cpu.is_empty() && !cpu_libs.is_empty())
                .then(|| format!("{} on the CPU", cpu_libs.join(" / "))),
        )
        .collect();
    inputs.push(format!(
        "vendor libraries for `{}`: {}",
        spec.op_name(),
        names.join("; ")
    ));
    let mut left = vec!["one dispatch function per backend".to_string()];
    if let Some(e) = &spec.modifiers.epilogue {
        left.push(format!(
            "the `{e}` epilogue where the library's epilogues do not cover it"
        ));
    }
    if !cpu.is_empty() && cpu_libs.is_empty() {
        left.push("the CPU fallback".into());
    }
    let eff = crate::efficiency::EfficiencyTable::builtin();
    let bands: Vec<String> = if spec.op == Op::Gemm {
        ["nvidia", "amd"]
            .into_iter()
            .filter(|v| gpu.iter().any(|t| t.vendor().as_str() == *v))
            .filter(|v| {
                // A memory-bound shape (skinny, decode) is measured in bandwidth: the compute
                // efficiency of the library does not apply (section 8 has its bandwidth view).
                !memory_bound(spec, gpu, v)
            })
            .filter_map(|v| {
                eff.lookup(v, "gemm", "vendor-library").map(|e| {
                    format!(
                        "{:.0}-{:.0}% of peak on {v} [{}]",
                        e.low * 100.0,
                        e.high * 100.0,
                        e.sources.join(", ")
                    )
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    Some(Verdict {
        decision: Decision::UseVendorLibrary,
        reason: format!(
            "a library already implements `{}` on every {}GPU target in scope: {}{}; left to write: {}{}; what the library costs: a pinned library version per backend, its shape heuristics to check (and tune) at the spec's sizes, and its own build dependency",
            spec.op_name(),
            if spec.stretch.is_empty() { "" } else { "required " },
            names.join("; "),
            if bands.is_empty() { String::new() } else { format!(" (vendor libraries reach {})", bands.join(", ")) },
            left.join(", "),
            if spec.stretch.is_empty() {
                String::new()
            } else {
                format!(
                    ", and the path for the stretch target{} {} (section 3)",
                    if spec.stretch.len() > 1 { "s" } else { "" },
                    spec.stretch.join(", ")
                )
            }
        ),
        inputs: std::mem::take(inputs),
        sources: Vec::new(),
    })
}
