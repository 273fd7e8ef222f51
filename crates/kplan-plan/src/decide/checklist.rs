//! The review checklist: the ten standard items, each pass / fail / needs-human with evidence
//! taken from the plan itself.

use super::{join_names, Target};
use crate::model::{ChecklistItem, Plan, Status};
use crate::spec::{Expertise, Spec};
use kplan_kb::{Kb, Vendor};

fn item(item: &str, status: Status, evidence: String) -> ChecklistItem {
    ChecklistItem {
        item: item.into(),
        status,
        evidence,
    }
}

/// Every name in `names` is a stretch target of the spec (wanted if cheap, never a veto).
fn only_stretch(spec: &Spec, names: &[&str]) -> bool {
    !names.is_empty() && names.iter().all(|n| spec.stretch.iter().any(|s| s == n))
}

pub fn review(
    spec: &Spec,
    kb: &Kb,
    targets: &[Target],
    plan: &Plan,
    source_scanned: bool,
) -> Vec<ChecklistItem> {
    let mut v = Vec::new();
    // A library or framework verdict writes no kernel: the kernel-code items do not apply.
    // So does a one-vendor verdict whose chosen strategy is the vendor library or the framework.
    let no_kernel = matches!(
        plan.verdict.decision,
        crate::model::Decision::UseFramework | crate::model::Decision::UseVendorLibrary
    ) || (matches!(plan.strategy.chosen.as_str(), "vendor-blas" | "framework")
        && plan.tiles.is_empty());
    let na = |what: &str, why: &str| item(what, Status::NotApplicable, format!("n/a: {why}"));

    // 1
    let no_ver: Vec<&str> = plan
        .backend_matrix
        .iter()
        .filter(|b| b.min_toolchain.is_none())
        .map(|b| b.target.as_str())
        .collect();
    // the libraries the plan reuses whose first version with that coverage no source gives
    let lib_unknown: Vec<&str> = plan
        .operation
        .knowledge
        .as_ref()
        .map(|k| {
            k.libraries
                .iter()
                .filter(|l| l.role == "reuse" && l.min_version.is_none())
                .map(|l| l.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    let uses_library = matches!(
        plan.verdict.decision,
        crate::model::Decision::UseVendorLibrary | crate::model::Decision::UseFramework
    ) || plan.strategy.chosen == "vendor-blas";
    v.push(if no_ver.is_empty() && uses_library && !lib_unknown.is_empty() {
        item(
            "backend matrix defined with versions",
            Status::NeedsHuman,
            format!(
                "toolchains known; no source gives the minimum version of {}: pin and record the version the plan is tested with",
                join_names(&lib_unknown)
            ),
        )
    } else if no_ver.is_empty() {
        item(
            "backend matrix defined with versions",
            Status::Pass,
            plan.backend_matrix
                .iter()
                .map(|b| {
                    format!(
                        "{}: {}",
                        b.target,
                        b.min_toolchain.as_deref().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
    } else if only_stretch(spec, &no_ver) {
        item(
            "backend matrix defined with versions",
            Status::NeedsHuman,
            format!(
                "stretch target {}: no minimum toolchain in the KB (wanted if cheap, never a veto)",
                join_names(&no_ver)
            ),
        )
    } else {
        item(
            "backend matrix defined with versions",
            Status::Fail,
            format!("no minimum toolchain in the KB for {}", join_names(&no_ver)),
        )
    });

    // 2
    let gpu_warps: Vec<u32> = targets
        .iter()
        .filter(|t| t.is_gpu())
        .filter_map(|t| t.warp())
        .collect();
    // The warp size each target's code runs at (an RDNA part that can also run wave64 runs
    // wave32 under HIP): one size for every target means no warp-size difference to address.
    let differ = gpu_warps.windows(2).any(|w| w[0] != w[1]);
    let unknown_warp: Vec<&str> = targets
        .iter()
        .filter(|t| t.is_gpu() && t.warp().is_none())
        .map(|t| t.name.as_str())
        .collect();
    v.push(if no_kernel {
        na("warp size addressed", "no kernel is written (library/framework verdict): the library handles the warp/wavefront size")
    } else if !unknown_warp.is_empty() {
        item("warp size addressed", Status::NeedsHuman, format!("warp size unknown in the KB for {}", join_names(&unknown_warp)))
    } else if gpu_warps.is_empty() {
        item(
            "warp size addressed",
            Status::Pass,
            "no GPU target: warp size does not apply".into(),
        )
    } else if !differ {
        item("warp size addressed", Status::Pass, match gpu_warps.first() {
            Some(32) if targets.iter().filter(|t| t.is_gpu()).all(|t| t.is_rdna()) => "every target wave32: no wave64 path to write".to_string(),
            Some(w) => format!("every GPU target runs warp size {w}"),
            None => "- (no GPU target)".into(),
        })
    } else if plan.risks.iter().any(|r| r.id == "warp-size") {
        item("warp size addressed", Status::Pass, "warp sizes differ; risk `warp-size` gives the mitigation and tiles are whole warps per target (section 6)".into())
    } else {
        item("warp size addressed", Status::Fail, "warp sizes differ and no warp-size risk was recorded".into())
    });

    // 3
    let uncovered: Vec<&str> = plan
        .strategy
        .per_target
        .iter()
        .filter(|p| p.abstraction == "none")
        .map(|p| p.target.as_str())
        .collect();
    v.push(if uncovered.is_empty() && plan.strategy.chosen != "none" {
        item(
            "strategy decided with justification",
            Status::Pass,
            format!(
                "{} ({} alternatives considered)",
                plan.strategy.chosen,
                plan.strategy
                    .alternatives
                    .iter()
                    .filter(|a| a.outcome != "not-applicable")
                    .count()
            ),
        )
    } else if plan.strategy.chosen != "none" && only_stretch(spec, &uncovered) {
        item(
            "strategy decided with justification",
            Status::NeedsHuman,
            format!(
                "{} for the required targets; stretch target {} not planned: no allowed abstraction covers it",
                plan.strategy.chosen,
                join_names(&uncovered)
            ),
        )
    } else {
        item(
            "strategy decided with justification",
            Status::Fail,
            format!(
                "no allowed abstraction covers {}",
                if uncovered.is_empty() {
                    "the GPU targets".to_string()
                } else {
                    join_names(&uncovered)
                }
            ),
        )
    });

    // 4
    let nv_feats: Vec<&String> = spec
        .features
        .iter()
        .filter(|f| kb.feature(f).is_some_and(|x| x.origin == "nvidia"))
        .collect();
    let unlisted: Vec<&str> = nv_feats
        .iter()
        .filter(|f| {
            !plan.risks.iter().any(|r| {
                r.id.starts_with(&format!("feature-{f}-")) || r.id == format!("source-{f}")
            })
        })
        .map(|f| f.as_str())
        .collect();
    let has_non_nv = targets
        .iter()
        .any(|t| t.is_gpu() && t.vendor() != Vendor::Nvidia);
    let has_gpu = targets.iter().any(|t| t.is_gpu());
    v.push(if !has_non_nv && has_gpu {
        item(
            "risk register lists every NVIDIA-specific feature",
            Status::Pass,
            "every GPU target is NVIDIA: NVIDIA-specific features carry no portability risk here".into(),
        )
    } else if !unlisted.is_empty() && has_non_nv {
        item("risk register lists every NVIDIA-specific feature", Status::Fail, format!("not in the register: {}", unlisted.join(", ")))
    } else if source_scanned {
        item(
            "risk register lists every NVIDIA-specific feature",
            Status::Pass,
            format!(
                "spec features ({}) and the source scan's findings are in the register",
                if nv_feats.is_empty() { "none NVIDIA-specific".to_string() } else { nv_feats.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ") }
            ),
        )
    } else {
        item(
            "risk register lists every NVIDIA-specific feature",
            Status::NeedsHuman,
            format!(
                "the spec's NVIDIA-specific features ({}) are listed; no source was scanned: run `kplan plan --source DIR` on the existing code",
                if nv_feats.is_empty() { "none".to_string() } else { nv_feats.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ") }
            ),
        )
    });

    // 5
    let dropped: usize = plan
        .tiles
        .iter()
        .map(|t| t.candidate_checks.iter().filter(|c| !c.kept).count())
        .sum();
    v.push(
        if plan.tiles.is_empty() && no_kernel {
            na(
                "tiles configurable",
                "no kernel is written: the library/framework chooses its own tiles",
            )
        } else if plan.tiles.len() == targets.len()
            && plan.tiles.iter().all(|t| {
                t.shared_budget_bytes.map_or(true, |b| {
                    t.shared_bytes <= b
                        && t.candidate_checks
                            .iter()
                            .filter(|c| c.kept)
                            .all(|c| c.shared_bytes <= b)
                })
            })
        {
            item(
                "tiles configurable",
                Status::Pass,
                format!(
                    "per-target tiles and autotune candidates within each shared/LDS budget with their stages{}, exposed as {}",
                    if dropped > 0 { format!(" ({dropped} over-budget candidates dropped, with the reason, in section 6)") } else { String::new() },
                    plan.tiles
                        .first()
                        .map(|t| t.configuration.as_str())
                        .unwrap_or("-")
                ),
            )
        } else {
            item(
                "tiles configurable",
                Status::Fail,
                "a target has no tile within its shared/LDS budget".into(),
            )
        },
    );

    // 6
    let cpu: Vec<&str> = targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Cpu)
        .map(|t| t.name.as_str())
        .collect();
    v.push(if cpu.is_empty() && no_kernel {
        na(
            "CPU fallback decided",
            "no CPU target and no kernel is written: the library/framework call is tested against the CPU reference (docs/verify.md)",
        )
    } else if cpu.is_empty() {
        item(
            "CPU fallback decided",
            Status::Fail,
            "no CPU target in [backends] targets: add e.g. `cpu-x86_64`".into(),
        )
    } else {
        let imp: Vec<String> = plan
            .strategy
            .per_target
            .iter()
            .filter(|p| cpu.contains(&p.target.as_str()))
            .map(|p| format!("{}: {}", p.target, p.implementation))
            .collect();
        item("CPU fallback decided", Status::Pass, imp.join("; "))
    });

    // 7
    // A target is covered when a leg checks it automatically: a compile leg with a kplan
    // command, or a run leg (a library call's test, a kernel's test on its device). A target no
    // allowed abstraction reaches, or whose code no kplan command compiles (Metal, SYCL), is not.
    let uncovered: Vec<String> = targets
        .iter()
        .filter_map(|t| {
            let abs = plan
                .strategy
                .per_target
                .iter()
                .find(|p| p.target == t.name)
                .map(|p| p.abstraction.as_str())
                .unwrap_or("");
            let legs: Vec<&crate::model::CiLeg> =
                plan.ci.legs.iter().filter(|l| l.arch == t.arch.id).collect();
            if abs == "none" {
                Some(format!("{} (no allowed abstraction reaches it: nothing to build or test)", t.name))
            } else if legs.is_empty() {
                Some(format!("{} (no leg)", t.name))
            } else if t.is_gpu()
                && matches!(abs, "metal" | "sycl" | "opencl")
                && !legs.iter().any(|l| l.kind == "compile" && l.command.is_some())
            {
                Some(format!(
                    "{} ({} code: `kplan build` does not compile it, so its compile leg is by hand)",
                    t.name, abs
                ))
            } else {
                None
            }
        })
        .collect();
    let missing = uncovered;
    let run_vendors: Vec<&str> = {
        let mut vs: Vec<&str> = targets
            .iter()
            .filter(|t| {
                plan.ci
                    .legs
                    .iter()
                    .any(|l| l.kind == "run" && l.arch == t.arch.id)
            })
            .map(|t| t.vendor().as_str())
            .collect();
        vs.sort();
        vs.dedup();
        vs
    };
    v.push(if missing.is_empty() {
        item(
            "CI covers every backend",
            Status::Pass,
            format!(
                "{} compile and {} run legs; run legs for {}",
                plan.ci.legs.iter().filter(|l| l.kind == "compile").count(),
                plan.ci.legs.iter().filter(|l| l.kind == "run").count(),
                run_vendors.join(", ")
            ),
        )
    } else if !missing.is_empty()
        && missing.iter().all(|m| {
            spec.stretch
                .iter()
                .any(|st| m == st || m.starts_with(&format!("{st} ")))
        })
    {
        item(
            "CI covers every backend",
            Status::NeedsHuman,
            format!(
                "every required backend has legs; not planned (stretch): {}",
                join_names(&missing)
            ),
        )
    } else {
        item(
            "CI covers every backend",
            Status::Fail,
            format!("not covered: {}", join_names(&missing)),
        )
    });

    // 8
    let unknown: Vec<&str> = plan
        .performance
        .iter()
        .filter(|p| p.expected_low.is_none())
        .map(|p| p.target.as_str())
        .collect();
    v.push(if unknown.is_empty() {
        item("performance per backend documented", Status::Pass, "roofline and expected range for every target (section 8)".into())
    } else if let Some(why) = &plan.operation.work_unknown {
        item(
            "performance per backend documented",
            Status::NeedsHuman,
            format!("no roofline for any target: {why}"),
        )
    } else {
        item(
            "performance per backend documented",
            Status::NeedsHuman,
            format!("no expected range for {}: the KB lacks peak/bandwidth or a sourced efficiency; measure with `kplan bench`", join_names(&unknown)),
        )
    });

    // 9
    v.push(match &plan.header {
        _ if no_kernel => na("header thin and documented", "no kernel is written (library/framework verdict): the portability header is not needed"),
        Some(h) => {
            let lines = h.lines().count();
            item(
                "header thin and documented",
                if lines <= 1500 { Status::Pass } else { Status::NeedsHuman },
                format!("generated portability header, {lines} lines, one documented macro/inline per platform difference (section 5)"),
            )
        }
        None => item("header thin and documented", Status::NeedsHuman, plan.header_note.clone()),
    });

    // 10
    let secondary: Vec<&str> = {
        let mut s = Vec::new();
        if targets.iter().any(|t| t.vendor() == Vendor::Amd)
            && !spec.expertise.contains(&Expertise::Hip)
        {
            s.push("AMD/HIP");
        }
        if targets.iter().any(|t| t.vendor() == Vendor::Nvidia)
            && !spec.expertise.contains(&Expertise::Cuda)
        {
            s.push("NVIDIA/CUDA");
        }
        s
    };
    v.push(item(
        "reviewed by someone with secondary-backend experience",
        Status::NeedsHuman,
        if spec.expertise.is_empty() {
            "no CUDA or HIP expertise among the team's skills; name a reviewer for each backend"
                .into()
        } else if secondary.is_empty() {
            format!(
                "team lists {}: name the reviewer in the PR",
                spec.expertise
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "team lists no {} experience: find a reviewer who has it",
                secondary.join(" or ")
            )
        },
    ));
    v
}
