//! Sections 6-8 on real example specs: decode attention tiles (GQA packing, split-KV), dispatch
//! parameters of library verdicts, the reduced CPU verification shape, the sanitizer legs, and
//! the roofline chart (golden for one example, deterministic, one line per known target).

use kplan_kb::Kb;
use kplan_plan::{build_plan, parse_spec, render, PlanInputs};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plan_of(text: &str) -> kplan_plan::Plan {
    let kb = Kb::builtin();
    let spec = parse_spec(text, kb).unwrap_or_else(|e| panic!("{}", e.render("spec", text)));
    build_plan(&spec, kb, &PlanInputs::default())
}

fn example(stem: &str) -> kplan_plan::Plan {
    plan_of(&std::fs::read_to_string(root().join(format!("examples/{stem}.toml"))).unwrap())
}

/// A custom decode kernel: BLOCK_M covers the GQA group (8 heads per KV head -> 16 rows, the
/// smallest MMA tile), never the 128 rows of a prefill tile; Q stays in registers on CDNA; the
/// KV tile is a multiple of the 16-token page; the split count comes from the CU count.
#[test]
fn decode_attention_packs_the_query_group_and_splits_kv() {
    let plan = example("attn-decode-fp8kv-amd");
    assert!(!plan.tiles.is_empty());
    for t in &plan.tiles {
        assert_eq!(
            t.tile.get("block_m"),
            Some(&16),
            "{}: {:?}",
            t.target,
            t.tile
        );
        assert_eq!(t.tile.get("query_rows"), Some(&8), "{}", t.target);
        let bn = t.tile["block_n"];
        assert_eq!(bn % 16, 0, "{}: KV tile {bn} is not whole pages", t.target);
        assert!(
            t.tile.contains_key("kv_splits"),
            "{}: {:?}",
            t.target,
            t.tile
        );
        assert!(t.why.contains("Q in registers"), "{}: {}", t.target, t.why);
        assert!(t.why.contains("split-KV"), "{}", t.why);
        // K/V only in LDS: 2 tiles x stages x head_dim x 1 B (fp8 KV)
        assert_eq!(
            t.shared_bytes,
            2 * bn * 128 * t.tile["stages"],
            "{}",
            t.target
        );
        for c in t.candidate_checks.iter().filter(|c| c.kept) {
            assert!(c.config.contains("BLOCK_M=16"), "{}", c.config);
        }
    }
}

/// A prefill kernel keeps prefill tiles (BLOCK_M of 64 or more).
#[test]
fn prefill_attention_keeps_prefill_tiles() {
    let plan = example("flash-attention-fwd");
    for t in &plan.tiles {
        if let Some(bm) = t.tile.get("block_m") {
            assert!(*bm >= 64, "{}: {:?}", t.target, t.tile);
            assert!(!t.tile.contains_key("kv_splits"));
        }
    }
}

/// A library verdict lists what its dispatch still chooses instead of "no tiles": for paged
/// GQA decode the split count per target, the group (32 / 8 = 4) and the page size.
#[test]
fn library_decode_verdict_lists_its_dispatch_parameters() {
    let plan = example("attn-decode-paged-gqa");
    assert!(plan.tiles.is_empty());
    assert_eq!(plan.dispatch.len(), 2, "{:?}", plan.dispatch);
    for d in &plan.dispatch {
        let get = |n: &str| {
            d.params
                .iter()
                .find(|p| p.name == n)
                .map(|p| p.value.clone())
        };
        assert!(
            get("kv_splits").is_some_and(|v| v.parse::<u64>().is_ok()),
            "{d:?}"
        );
        assert_eq!(get("gqa_group").as_deref(), Some("4"));
        assert_eq!(get("page_size").as_deref(), Some("16"));
    }
    let md = render::markdown(&plan);
    assert!(md.contains("| h100 | kv_splits |"), "{md}");
    assert!(!md.contains("No tiles:"), "{md}");
}

/// 64 sequences x 32768 tokens of bf16 KV (8.6 GB, with an fp32 copy about 26 GB) do not fit
/// a hosted runner: the plan names a reduced shape for the CPU legs and the workflow passes it.
#[test]
fn a_problem_too_large_for_a_hosted_runner_gets_a_reduced_cpu_shape() {
    let plan = example("attn-decode-paged-gqa");
    let h = plan.ci.host_shape.as_ref().expect("a reduced shape");
    assert!(h.full_bytes > 2.0e10, "{}", h.full_bytes);
    assert!(h.bytes <= 3.5e9, "{}", h.bytes);
    let seq = h.shape.get("seq_kv").copied().unwrap_or(32768);
    assert_eq!(seq % 16, 0, "whole pages: {seq}");
    assert!(plan
        .ci
        .notes
        .iter()
        .any(|n| n.starts_with("CPU verification shape")));
    let w = render::workflow(&plan, &render::WorkflowOptions::default());
    assert!(w.contains("KPLAN_CI_SHAPE"), "{w}");
    // a small problem keeps its shape
    assert!(example("rmsnorm").ci.host_shape.is_none());
}

/// What runs under a sanitizer is stated in the plan, and the AMD gap is named.
#[test]
fn sanitizer_legs_and_gaps_are_stated() {
    let plan = example("rmsnorm");
    let note = plan
        .ci
        .notes
        .iter()
        .find(|n| n.starts_with("sanitizers:"))
        .expect("a sanitizer note");
    for want in [
        "synccheck",
        "initcheck",
        "under UBSan",
        "AddressSanitizer",
        "run-gfx1100",
    ] {
        assert!(note.contains(want), "{want}: {note}");
    }
}

/// The chart of one example is committed (examples/plans/rmsnorm-h200.svg); rendering is
/// deterministic, draws one roofline per target with a known peak and bandwidth, the expected
/// band, and the measured point of the KB's H200 measurement.
#[test]
fn roofline_chart_golden_for_one_example() {
    let plan = example("rmsnorm-h200");
    let svg = render::roofline_svg(&plan);
    assert_eq!(svg, render::roofline_svg(&plan));
    kplan_test_support::golden::assert_golden(
        &root().join("examples/plans/rmsnorm-h200.svg"),
        &svg,
        "cargo xtask generate",
    );
    let known = plan
        .operation
        .per_target
        .iter()
        .filter(|o| o.peak_tflops.is_some() && o.bandwidth_gbs.is_some())
        .count();
    assert!(known >= 1);
    assert_eq!(svg.matches("class=\"roofline\"").count(), known, "{svg}");
    let bands = plan
        .performance
        .iter()
        .filter(|p| p.expected_low.is_some())
        .count();
    assert_eq!(svg.matches("class=\"band\"").count(), bands);
    let measured = plan
        .performance
        .iter()
        .filter(|p| p.measured.is_some())
        .count();
    assert_eq!(svg.matches("class=\"measured\"").count(), measured);
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    let md = render::markdown_with_chart(&plan, Some("rmsnorm-h200.svg"));
    assert!(md.contains("](rmsnorm-h200.svg)"));
}

/// A plan whose targets have no device figures (gfx940 and sm_103 name no reference device in
/// the KB) still gets a chart, which says why there is no line.
#[test]
fn a_chart_without_numbers_says_why() {
    let plan = plan_of(
        "[kernel]\nname = \"k\"\nop = \"elementwise\"\ndtypes = [\"fp32\"]\nproblem = { n = 1048576 }\n[backends]\ntargets = [\"gfx940\", \"sm_103\"]\n",
    );
    assert!(plan
        .operation
        .per_target
        .iter()
        .all(|o| o.bandwidth_gbs.is_none()));
    let svg = render::roofline_svg(&plan);
    assert!(svg.contains("No roofline"), "{svg}");
    assert!(!svg.contains("class=\"roofline\""));
}
