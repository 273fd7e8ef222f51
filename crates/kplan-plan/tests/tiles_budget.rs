//! Section 6 over every example plan: no tile and no kept autotune candidate exceeds its
//! target's shared/LDS budget with its stage count (over-budget candidates are dropped with the
//! reason), every kept candidate has its occupancy, and Triton plans speak Triton: BLOCK_M/N/K,
//! num_warps (counted in 64-lane waves on CDNA) and num_stages, plus waves_per_eu and
//! matrix_instr_nonkdim on AMD.

use kplan_kb::Kb;
use kplan_plan::{build_plan, parse_spec, PlanInputs};
use std::path::Path;

fn plans() -> Vec<(String, kplan_plan::Plan)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    let kb = Kb::builtin();
    v.into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let spec = parse_spec(&text, kb).unwrap();
            (
                p.file_stem().unwrap().to_string_lossy().to_string(),
                build_plan(&spec, kb, &PlanInputs::default()),
            )
        })
        .collect()
}

fn param(config: &str, name: &str) -> Option<u64> {
    config
        .split([',', ' '])
        .filter_map(|w| w.trim().strip_prefix(&format!("{name}=")))
        .find_map(|v| v.parse().ok())
}

#[test]
fn no_tile_or_candidate_exceeds_its_budget_and_triton_plans_use_triton_parameters() {
    let kb = Kb::builtin();
    let (mut dropped, mut triton_tiles, mut cdna_triton) = (0, 0, 0);
    for (stem, plan) in plans() {
        for t in &plan.tiles {
            let b = plan
                .backend_matrix
                .iter()
                .find(|b| b.target == t.target)
                .unwrap();
            let arch = kb.arch(&b.arch).unwrap();
            if let Some(budget) = t.shared_budget_bytes {
                assert!(
                    t.shared_bytes <= budget,
                    "{stem} {}: tile needs {} of {budget}",
                    t.target,
                    t.shared_bytes
                );
                for c in &t.candidate_checks {
                    if c.shared_bytes > budget {
                        assert!(
                            !c.kept,
                            "{stem} {}: kept over-budget `{}`",
                            t.target, c.config
                        );
                        let why = c.dropped.as_deref().unwrap_or("");
                        assert!(
                            why.contains("budget"),
                            "{stem} {}: `{}` dropped without the reason",
                            t.target,
                            c.config
                        );
                    }
                }
            }
            for c in t.candidate_checks.iter().filter(|c| !c.kept) {
                assert!(c.dropped.is_some(), "{stem} {}: `{}`", t.target, c.config);
                dropped += 1;
            }
            // The autotune list is exactly the kept candidates.
            let kept: Vec<&str> = t
                .candidate_checks
                .iter()
                .filter(|c| c.kept)
                .map(|c| c.config.as_str())
                .collect();
            assert_eq!(kept, t.candidates, "{stem} {}", t.target);
            // Occupancy per candidate wherever the tile itself has one.
            if t.occupancy.is_some() {
                for c in t.candidate_checks.iter().filter(|c| c.kept) {
                    assert!(
                        c.occupancy.is_some(),
                        "{stem} {}: `{}` has no occupancy",
                        t.target,
                        c.config
                    );
                }
            }
            let triton = plan
                .strategy
                .per_target
                .iter()
                .any(|p| p.target == t.target && p.abstraction == "triton");
            if !triton || b.vendor == "cpu" {
                continue;
            }
            triton_tiles += 1;
            let warp = b.warp_size.unwrap_or(32) as u64;
            assert_eq!(
                t.tile.get("num_warps").copied(),
                Some((t.block_threads as u64 / warp).max(1)),
                "{stem} {}: num_warps in the target's warps",
                t.target
            );
            assert!(t.tile.contains_key("num_stages"), "{stem} {}", t.target);
            let matrix = matches!(plan.operation.class.as_str(), "gemm" | "attention")
                && (t.tile.contains_key("block_m") || t.tile.contains_key("m"));
            for c in t.candidate_checks.iter().filter(|c| c.kept) {
                let cfg = &c.config;
                assert!(
                    !cfg.contains("BLOCK_THREADS") && !cfg.contains("VEC="),
                    "{stem} {}: CUDA terms in `{cfg}`",
                    t.target
                );
                let nw = param(cfg, "num_warps")
                    .unwrap_or_else(|| panic!("{stem} {}: no num_warps in `{cfg}`", t.target));
                assert_eq!(
                    nw,
                    (c.block_threads as u64 / warp).max(1),
                    "{stem} {}: `{cfg}`",
                    t.target
                );
                assert!(
                    param(cfg, "num_stages").is_some(),
                    "{stem} {}: `{cfg}`",
                    t.target
                );
                if matrix {
                    assert!(
                        param(cfg, "BLOCK_M").is_some() && param(cfg, "BLOCK_N").is_some(),
                        "{stem} {}: `{cfg}`",
                        t.target
                    );
                    if plan.operation.class == "gemm" {
                        assert!(
                            param(cfg, "BLOCK_K").is_some(),
                            "{stem} {}: `{cfg}`",
                            t.target
                        );
                    }
                }
                if b.vendor == "amd" {
                    assert!(
                        param(cfg, "waves_per_eu").is_some(),
                        "{stem} {}: `{cfg}`",
                        t.target
                    );
                    assert!(
                        param(cfg, "matrix_instr_nonkdim").is_some(),
                        "{stem} {}: `{cfg}`",
                        t.target
                    );
                }
                if arch.is_cdna() {
                    // 64-lane waves: num_warps x 64 = the block's threads.
                    assert_eq!(
                        nw * 64,
                        c.block_threads as u64,
                        "{stem} {}: `{cfg}`",
                        t.target
                    );
                    cdna_triton += 1;
                }
            }
        }
    }
    assert!(
        triton_tiles > 0,
        "no example plan has a Triton tile: the Triton checks ran on nothing"
    );
    assert!(
        cdna_triton > 0,
        "no Triton candidate on a CDNA target was checked"
    );
    assert!(
        dropped > 0,
        "no example drops an over-budget candidate: the budget check ran on nothing"
    );
}
