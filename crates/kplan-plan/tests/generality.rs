//! Specs as other teams write them: operations kplan has no class for, problems that lack a key,
//! block-quantized storage types, tools kplan has no level for, one GPU vendor in scope,
//! library limits and latency budgets no kernel can meet. Each test isolates one rule and
//! checks the plan's decision and what it says, plus the case on the other side of the rule.

use kplan_kb::Kb;
use kplan_plan::model::{Decision, Status};
use kplan_plan::render::{json, markdown};
use kplan_plan::{build_plan, parse_spec, Plan, PlanInputs};

fn spec_text(kernel: &str, targets: &str, extra: &str) -> String {
    format!("[kernel]\nname = \"t\"\n{kernel}\n[backends]\ntargets = [{targets}]\n{extra}")
}

fn plan_of(text: &str) -> Plan {
    let spec =
        parse_spec(text, Kb::builtin()).unwrap_or_else(|e| panic!("{}", e.render("t.toml", text)));
    build_plan(&spec, Kb::builtin(), &PlanInputs::default())
}

fn error_of(text: &str) -> String {
    match parse_spec(text, Kb::builtin()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.render("t.toml", text),
    }
}

const MIXED: &str = r#""sm_90a", "gfx942""#;

#[test]
fn an_op_kplan_has_no_class_for_is_planned_as_a_custom_op() {
    let t = spec_text(
        "op = \"marching-cubes\"\ndtypes = [\"fp32\", \"fp32\", \"int32\"]\nproblem = { batch = 64, frames = 3000, states = 801 }",
        MIXED,
        "",
    );
    let p = plan_of(&t);
    assert_eq!(p.operation.class, "custom");
    assert_eq!(p.operation.custom_op.as_deref(), Some("marching-cubes"));
    assert!(
        p.operation.work_unknown.is_some(),
        "no flops/bytes: unknown"
    );
    assert!(p.performance.iter().all(|x| x.roofline.is_none()));
    assert!(p
        .kernel
        .notes
        .iter()
        .any(|n| n.contains("op `marching-cubes` is not an op class")));
    let ids: Vec<&str> = p.risks.iter().map(|r| r.id.as_str()).collect();
    assert!(ids.contains(&"custom-no-work-model"), "{ids:?}");
    assert!(!ids.contains(&"custom-model"), "{ids:?}");
    assert!(!p.backend_matrix.is_empty() && !p.tiles.is_empty() && !p.ci.legs.is_empty());
    let md = markdown(&p);
    assert!(md.contains("kplan has no op class, work model or library knowledge for it"));
    assert!(md.contains("FLOPs and bytes: unknown"));
    // The same op with its flops and bytes has a roofline.
    let t = spec_text(
        "op = \"marching-cubes\"\ndtypes = [\"fp32\"]\nproblem = { flops = 1e10, bytes = 2e9 }",
        MIXED,
        "",
    );
    let p = plan_of(&t);
    assert!(p.operation.work_unknown.is_none());
    assert!(p.performance.iter().all(|x| x.roofline.is_some()));
}

#[test]
fn a_misspelt_op_class_is_an_error_a_different_word_is_not() {
    let t = spec_text(
        "op = \"histgram\"\ndtypes = [\"fp32\"]\nproblem = { n = 10, bins = 4 }",
        MIXED,
        "",
    );
    let e = error_of(&t);
    assert!(
        e.contains("t.toml:3:6") && e.contains("did you mean `histogram`?"),
        "{e}"
    );
    // Two edits from `spmv`, but another operation: planned as custom, the note names it.
    let t = spec_text(
        "op = \"spmspv\"\ndtypes = [\"fp64\"]\nproblem = { rows = 100, cols = 100 }",
        MIXED,
        "",
    );
    let p = plan_of(&t);
    assert_eq!(p.operation.custom_op.as_deref(), Some("spmspv"));
    assert!(
        p.kernel
            .notes
            .iter()
            .any(|n| n.contains("`spmv`") || n.contains("`spmm`")),
        "{:?}",
        p.kernel.notes
    );
}

#[test]
fn a_custom_op_over_rows_and_cols_gets_its_streaming_bytes_stated_as_an_assumption() {
    let t = spec_text(
        "op = \"viterbi-step\"\ndtypes = [\"fp32\", \"fp32\", \"int32\"]\nproblem = { rows = 512, cols = 1000 }",
        MIXED,
        "",
    );
    let p = plan_of(&t);
    assert!(p.operation.work_unknown.is_none());
    // 512 x 1000 elements x (4 B read + 4 B written)
    assert_eq!(p.operation.bytes, 512.0 * 1000.0 * 8.0);
    assert!(
        p.operation.bytes_formula.contains("assumed"),
        "{}",
        p.operation.bytes_formula
    );
}

#[test]
fn a_problem_without_a_key_its_op_needs_plans_without_the_work_model() {
    let t = spec_text(
        "op = \"embedding\"\ndtypes = [\"fp16\"]\nproblem = { rows = 10000000, dim = 128 }",
        MIXED,
        "",
    );
    let spec = parse_spec(&t, Kb::builtin()).unwrap();
    let note = spec
        .notes
        .iter()
        .find(|n| n.message.contains("missing `vocab`"))
        .unwrap_or_else(|| panic!("{:?}", spec.notes));
    assert_eq!(note.line_col(&t).0, 5, "the note points at the problem");
    let p = build_plan(&spec, Kb::builtin(), &PlanInputs::default());
    assert!(p
        .operation
        .work_unknown
        .as_deref()
        .unwrap()
        .contains("missing `vocab`"));
    assert_eq!(
        p.operation.class, "embedding",
        "the op's knowledge still applies"
    );
    assert!(p.operation.knowledge.is_some());
    assert!(p
        .performance_notes
        .iter()
        .any(|n| n.contains("no number for any target")));
    // With every key the model applies.
    let t = t.replace("rows = 10000000", "vocab = 10000000, tokens = 4096");
    assert!(plan_of(&t).operation.work_unknown.is_none());
}

#[test]
fn block_quantized_storage_types_count_their_scales() {
    let t = |w: &str| {
        spec_text(
            &format!("op = \"gemm\"\ndtypes = [\"bf16\", \"fp32\"]\nweight_dtype = \"{w}\"\nproblem = {{ m = 1, n = 4096, k = 4096, group_size = 64 }}"),
            MIXED,
            "",
        )
    };
    let bytes = |w: &str| plan_of(&t(w)).operation.bytes;
    let act = (4096.0 + 4096.0) * 2.0;
    let w = 4096.0 * 4096.0;
    // q4_0: 18 B per 32 values; q8_0: 34 B per 32; AWQ int4 at group 64: 4 bits + 2.5 B / 64.
    assert!((bytes("q4_0") - (act + w * 18.0 / 32.0)).abs() < 1.0);
    assert!((bytes("q8_0") - (act + w * 34.0 / 32.0)).abs() < 1.0);
    assert!((bytes("int4-awq") - (act + w * (0.5 + 2.5 / 64.0))).abs() < 1.0);
    assert!((bytes("nvfp4") - (act + w * (0.5 + 1.0 / 16.0))).abs() < 1.0);
    // A plain bf16 weight moves 2 B per value.
    assert!((bytes("bf16") - (act + w * 2.0)).abs() < 1.0);
    let e = error_of(&t("q4_9"));
    assert!(
        e.contains("unknown dtype `q4_9`") && e.contains("block-quantized"),
        "{e}"
    );
}

#[test]
fn unknown_features_and_abstractions_are_notes_spellings_of_known_ones_errors() {
    let base = "op = \"softmax\"\ndtypes = [\"bf16\"]\nproblem = { rows = 8, cols = 1024 }";
    let t = spec_text(
        &format!("{base}\nfeatures = [\"persistent-cta\"]"),
        MIXED,
        "[abstraction]\nallowed = [\"kokkos\", \"triton\"]\n",
    );
    let p = plan_of(&t);
    assert!(p
        .kernel
        .notes
        .iter()
        .any(|n| n.contains("feature `persistent-cta`")));
    assert!(p
        .kernel
        .notes
        .iter()
        .any(|n| n.contains("abstraction `kokkos`")));
    assert_eq!(p.kernel.allowed, vec!["triton"]);
    let e = error_of(&spec_text(
        base,
        MIXED,
        "[abstraction]\nallowed = [\"trtion\"]\n",
    ));
    assert!(e.contains("did you mean `triton`?"), "{e}");
    // Only C++ portability layers: the nearest levels (single-source C++, per-backend), no
    // Triton; only other unknown tools: the default levels, said in a note.
    let p = plan_of(&spec_text(
        base,
        MIXED,
        "[abstraction]\nallowed = [\"kokkos\"]\n",
    ));
    assert_eq!(p.kernel.allowed, vec!["hip-single-source", "per-backend"]);
    assert!(p
        .kernel
        .notes
        .iter()
        .any(|n| n.contains("C++ portability layers")));
    let p = plan_of(&spec_text(
        base,
        MIXED,
        "[abstraction]\nallowed = [\"in-house-dsl\"]\n",
    ));
    assert!(p.kernel.allowed.len() > 1);
    assert!(p.kernel.notes.iter().any(|n| n.contains("default levels")));
}

#[test]
fn every_gpu_target_amd_is_an_amd_only_verdict_without_nvidia_legs() {
    let t = spec_text(
        "op = \"reduction\"\ndtypes = [\"fp32\"]\nproblem = { n = 100000000 }",
        r#""gfx942", "gfx1100""#,
        "",
    );
    let p = plan_of(&t);
    assert_eq!(p.verdict.decision, Decision::AmdOnly);
    assert!(
        !p.verdict.reason.contains("CUB DeviceReduce"),
        "{}",
        p.verdict.reason
    );
    assert!(p.verdict.reason.contains("rocPRIM"), "{}", p.verdict.reason);
    assert!(p.ci.legs.iter().all(|l| !l.toolchain.contains("nvcc")));
    assert!(p
        .strategy
        .per_target
        .iter()
        .all(|s| !s.implementation.contains("nvcc")));
    // A mixed fleet is not.
    let t = t.replace("\"gfx1100\"", "\"sm_90a\"");
    assert_ne!(plan_of(&t).verdict.decision, Decision::AmdOnly);
}

#[test]
fn a_library_that_lacks_what_the_spec_asks_is_the_baseline_not_the_verdict() {
    let gemm = |extra: &str| {
        spec_text(
            &format!("op = \"gemm\"\ndtypes = [\"bf16\", \"fp32\"]\n{extra}problem = {{ m = 4096, n = 4096, k = 4096 }}"),
            MIXED,
            "",
        )
    };
    assert_eq!(
        plan_of(&gemm("")).verdict.decision,
        Decision::UseVendorLibrary
    );
    assert_eq!(
        plan_of(&gemm("epilogue = \"bias-gelu\"\n"))
            .verdict
            .decision,
        Decision::UseVendorLibrary
    );
    for extra in ["weight_dtype = \"int4\"\n", "epilogue = \"swiglu\"\n"] {
        let p = plan_of(&gemm(extra));
        assert_eq!(p.verdict.decision, Decision::CustomKernel, "{extra}");
        assert!(
            p.verdict
                .inputs
                .iter()
                .any(|i| i.contains("lacks what this spec asks")),
            "{extra}: {:?}",
            p.verdict.inputs
        );
    }
}

#[test]
fn a_library_named_in_allowed_admits_that_library_only() {
    let t = |allowed: &str| {
        spec_text(
            "op = \"topk\"\ndtypes = [\"fp32\", \"fp32\", \"int32\"]\nproblem = { rows = 64, cols = 152064, k = 50 }",
            MIXED,
            &format!("[abstraction]\nallowed = [{allowed}]\n"),
        )
    };
    // FlashInfer and AITER are not CUB or hipCUB.
    assert_eq!(
        plan_of(&t(r#""cub", "hipcub", "per-backend""#))
            .verdict
            .decision,
        Decision::CustomKernel
    );
    assert_eq!(
        plan_of(&t(r#""vendor-library", "per-backend""#))
            .verdict
            .decision,
        Decision::UseVendorLibrary
    );
}

#[test]
fn a_page_size_flashattention_rejects_is_a_risk_with_the_nvidia_consequence() {
    let t = |page: u32, targets: &str| {
        spec_text(
            &format!("op = \"attention\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = {{ batch = 32, heads = 32, kv_heads = 8, seq_q = 1, seq_kv = 4096, head_dim = 128, page_size = {page} }}"),
            targets,
            "",
        )
    };
    let has = |p: &Plan| {
        p.risks
            .iter()
            .any(|r| r.id == "attention-library-page-size")
    };
    let p = plan_of(&t(16, MIXED));
    assert!(has(&p));
    assert!(p.risks.iter().any(|r| r.id == "attention-kv-cache-layout"));
    assert!(
        !has(&plan_of(&t(256, MIXED))),
        "256-token pages are accepted"
    );
    assert!(!has(&plan_of(&t(16, r#""gfx942""#))), "no NVIDIA target");
}

#[test]
fn a_latency_budget_below_the_roofline_time_blocks_the_plan() {
    let t = |lat: u32| {
        spec_text(
            "op = \"attention\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { batch = 64, heads = 64, kv_heads = 8, seq_q = 1, seq_kv = 32768, head_dim = 128 }",
            MIXED,
            &format!("[requirements]\nlatency_us = {lat}\n"),
        )
    };
    let p = plan_of(&t(50));
    assert_eq!(p.blocking.len(), 1, "{:?}", p.blocking);
    assert!(p.blocking[0].contains("infeasible requirement"));
    let r = p
        .risks
        .iter()
        .find(|r| r.id == "latency-infeasible")
        .unwrap();
    assert_eq!(r.severity, "high");
    assert!(r.mitigation.contains("re-spec"));
    let md = markdown(&p);
    let summary = md.split("## Summary").nth(1).unwrap();
    assert!(
        summary.trim_start().starts_with("- **Blocking**"),
        "{summary}"
    );
    assert!(json(&p).contains("\"blocking\""));
    // A budget above the roofline time is a latency risk, not a blocker.
    let p = plan_of(&t(100000));
    assert!(p.blocking.is_empty());
    assert!(p.risks.iter().any(|r| r.id == "latency-bound"));
}

#[test]
fn kernel_items_of_the_checklist_are_not_applicable_to_a_library_verdict() {
    let t = spec_text(
        "op = \"gemm\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { m = 4096, n = 4096, k = 4096 }",
        MIXED,
        "",
    );
    let p = plan_of(&t);
    assert_eq!(p.verdict.decision, Decision::UseVendorLibrary);
    let status = |name: &str| p.checklist.iter().find(|c| c.item == name).unwrap().status;
    assert_eq!(status("tiles configurable"), Status::NotApplicable);
    assert_eq!(status("CPU fallback decided"), Status::NotApplicable);
    assert_eq!(status("warp size addressed"), Status::NotApplicable);
    // A kernel verdict keeps them.
    let t = t
        .replace("\"gemm\"", "\"softmax\"")
        .replace("m = 4096, n = 4096, k = 4096", "rows = 4096, cols = 4096");
    let p = plan_of(&t);
    assert_eq!(
        p.checklist
            .iter()
            .find(|c| c.item == "CPU fallback decided")
            .unwrap()
            .status,
        Status::Fail
    );
}

#[test]
fn an_op_class_added_to_the_knowledge_base_gets_its_work_model_libraries_and_risks() {
    let t = spec_text(
        "op = \"spgemm\"\ndtypes = [\"fp64\"]\nproblem = { rows = 1000000, cols = 1000000, nnz_a = 30000000, nnz_b = 30000000 }",
        r#""a100", "mi250x""#,
        "",
    );
    let p = plan_of(&t);
    assert_eq!(p.operation.class, "spgemm");
    assert!(p.operation.work_unknown.is_none());
    // 2 x nnz_a x nnz_b / cols intermediate products (rows of B of equal length).
    assert_eq!(p.operation.flops, 2.0 * 30000000.0 * 30.0);
    assert_eq!(
        p.verdict.decision,
        Decision::UseVendorLibrary,
        "{}",
        p.verdict.reason
    );
    assert!(p.verdict.reason.contains("cuSPARSE") && p.verdict.reason.contains("rocSPARSE"));
    let ids: Vec<&str> = p.risks.iter().map(|r| r.id.as_str()).collect();
    assert!(ids.contains(&"spgemm-output-size"), "{ids:?}");
    // An alias of the op knowledge base entry reaches the same class.
    let p = plan_of(&t.replace("\"spgemm\"", "\"sparse-matmul\""));
    assert!(p.risks.iter().any(|r| r.id == "spgemm-row-imbalance"));
}
