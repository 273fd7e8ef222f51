//! Plan-level checks of decisions that several sections share: vendor-scoped text, the GEMV
//! tile against the library split-K risk, coverage-conditioned baselines, deterministic
//! library switches and the efficiency class of an op.

use crate::decide::hazards::test_support::plan;
use crate::model::Plan;

fn spec(op_lines: &str, targets: &str) -> String {
    format!("[kernel]\nname = \"k\"\n{op_lines}\n[backends]\ntargets = [{targets}]\n")
}

/// Every text of the plan a reader sees in sections 2 and 4: the op knowledge and the risks.
fn knowledge_and_risk_text(p: &Plan) -> String {
    let mut s = String::new();
    if let Some(k) = &p.operation.knowledge {
        s.push_str(&k.tile_hint);
        s.push_str(&k.latency_bound);
        for a in &k.algorithms {
            s.push_str(&format!(" {} {}", a.name, a.when));
        }
        for l in &k.libraries {
            s.push_str(&format!(" {} {}", l.name, l.covers));
        }
    }
    for r in &p.risks {
        s.push_str(&format!(
            " {} {} {}",
            r.title,
            r.mitigation,
            r.evidence.join(" ")
        ));
    }
    s
}

const GEMM: &str = "op = \"gemm\"\ndtypes = [\"fp16\", \"fp32\"]\nproblem = { m = 512, n = 512, k = 8192 }\nfeatures = [\"warp-shuffles\"]";

/// An AMD-only plan names no NVIDIA instruction or library in its op knowledge and risks,
/// and an NVIDIA-only plan no AMD one; a mixed plan names both.
#[test]
fn op_knowledge_and_risks_speak_of_the_vendors_in_scope() {
    // (Source keys in brackets, such as `[CUTLASS]`, cite where a fact comes from.)
    let nv_words = ["cuBLAS", "wgmma", "TMA", "Hopper", "Marlin", "IMMA"];
    let amd_words = ["hipBLASLt", "MFMA", "WMMA", "rocBLAS", "CDNA"];
    let amd = knowledge_and_risk_text(&plan(&spec(GEMM, "\"gfx1100\", \"gfx942\"")));
    for w in nv_words {
        assert!(!amd.contains(w), "AMD-only plan says `{w}`: {amd}");
    }
    let nv = knowledge_and_risk_text(&plan(&spec(GEMM, "\"sm_90a\", \"sm_80\"")));
    for w in amd_words {
        assert!(!nv.contains(w), "NVIDIA-only plan says `{w}`: {nv}");
    }
    let both = knowledge_and_risk_text(&plan(&spec(GEMM, "\"sm_90a\", \"gfx942\"")));
    assert!(both.contains("wgmma") && both.contains("MFMA"), "{both}");
    // An RDNA-only plan gets the RDNA matrix instruction, not the CDNA one.
    assert!(amd.contains("MFMA") || amd.contains("WMMA"));
    let rdna = knowledge_and_risk_text(&plan(&spec(GEMM, "\"gfx1100\"")));
    assert!(rdna.contains("WMMA") && !rdna.contains("MFMA"), "{rdna}");
}

/// The strategy's Triton reason names only the vendors in scope.
#[test]
fn the_triton_reason_names_the_vendors_in_scope() {
    let s = spec(
        "op = \"softmax\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { rows = 4096, cols = 4096 }\n[abstraction]\nallowed = [\"triton\"]",
        "\"gfx942\"",
    );
    let p = plan(&s);
    let why = p
        .strategy
        .alternatives
        .iter()
        .find(|a| a.abstraction == "triton")
        .map(|a| a.why.clone())
        .unwrap_or_default();
    assert!(
        why.contains("AMD (CDNA)") && !why.contains("NVIDIA"),
        "{why}"
    );
}

fn risk_ids(p: &Plan) -> Vec<&str> {
    p.risks.iter().map(|r| r.id.as_str()).collect()
}

/// A GEMM that the GEMV tile plans (m <= 8) gets the GEMV's own risk, not the library
/// tile's split-K and small-m risks; at m = 64 the library risks stand.
#[test]
fn the_gemv_tile_replaces_the_library_tile_risks() {
    let gemv = spec(
        "op = \"gemm\"\ndtypes = [\"fp16\", \"fp32\"]\nweight_dtype = \"q4_k\"\nproblem = { m = 1, n = 14336, k = 4096 }\n[abstraction]\nallowed = [\"hip-single-source\"]",
        "\"rx7900xtx\"",
    );
    let p = plan(&gemv);
    let ids = risk_ids(&p);
    assert!(ids.contains(&"gemm-gemv-bandwidth"), "{ids:?}");
    assert!(
        !ids.contains(&"gemm-split-k") && !ids.contains(&"gemm-small-m"),
        "{ids:?}"
    );
    let wide = gemv.replace("m = 1,", "m = 64,");
    let p = plan(&wide);
    let ids = risk_ids(&p);
    assert!(
        ids.contains(&"gemm-split-k") && !ids.contains(&"gemm-gemv-bandwidth"),
        "{ids:?}"
    );
}

/// The GEMV tile that splits K raises the reduction risk; one that does not, does not.
#[test]
fn a_split_gemv_raises_its_reduction_risk() {
    // 256 columns (64 blocks of 4 column warps) over 96 CUs launch too few blocks: split-K.
    let few = spec(
        "op = \"gemm\"\ndtypes = [\"fp16\", \"fp32\"]\nproblem = { m = 1, n = 256, k = 8192 }\n[abstraction]\nallowed = [\"hip-single-source\"]",
        "\"rx7900xtx\"",
    );
    assert!(risk_ids(&plan(&few)).contains(&"gemm-gemv-split-reduction"));
    let many = few.replace("n = 256", "n = 65536");
    assert!(!risk_ids(&plan(&many)).contains(&"gemm-gemv-split-reduction"));
}

/// A baseline with a coverage condition (ggml for GGUF blocks) is named only where it holds.
#[test]
fn a_conditioned_baseline_is_named_only_where_it_holds() {
    let names = |s: &str| -> Vec<String> {
        plan(s)
            .operation
            .knowledge
            .map(|k| k.libraries.into_iter().map(|l| l.name).collect())
            .unwrap_or_default()
    };
    let q = spec(
        "op = \"gemm\"\ndtypes = [\"fp16\", \"fp32\"]\nweight_dtype = \"q4_k\"\nproblem = { m = 1, n = 4096, k = 4096 }",
        "\"gfx1100\"",
    );
    assert!(
        names(&q).iter().any(|n| n.contains("ggml")),
        "{:?}",
        names(&q)
    );
    let plain = q.replace("weight_dtype = \"q4_k\"\n", "");
    assert!(
        !names(&plain).iter().any(|n| n.contains("ggml")),
        "{:?}",
        names(&plain)
    );
}

/// A deterministic backward names each called library's deterministic switch per target.
#[test]
fn deterministic_backward_names_the_library_switches() {
    let s = spec(
        "op = \"attention\"\ndirection = \"backward\"\ndeterministic = true\ndtypes = [\"bf16\", \"fp32\"]\nproblem = { batch = 4, heads = 16, seq_q = 4096, seq_kv = 4096, head_dim = 128, causal = true }\n[abstraction]\nallowed = [\"vendor-blas\"]",
        "\"h100\", \"mi300x\"",
    );
    let p = plan(&s);
    assert!(
        risk_ids(&p).contains(&"attention-bwd-deterministic"),
        "{:?}",
        risk_ids(&p)
    );
    let det = |t: &str| -> String {
        p.dispatch
            .iter()
            .find(|d| d.target == t)
            .and_then(|d| d.params.iter().find(|x| x.name == "deterministic"))
            .map(|x| x.why.clone())
            .unwrap_or_default()
    };
    assert!(
        det("h100").contains("deterministic=True")
            && det("h100").contains("set_deterministic_algorithm"),
        "{}",
        det("h100")
    );
    assert!(det("mi300x").contains("mha_bwd"), "{}", det("mi300x"));
    // FlashInfer has no backward: it is not called for one.
    assert!(!det("h100").contains("FlashInfer"), "{}", det("h100"));
}

/// A custom op that names the tensor cores is rooflined against the matrix peak.
#[test]
fn a_custom_op_with_tensor_cores_uses_the_matrix_peak() {
    let s = spec(
        "op = \"custom\"\ndtypes = [\"bf16\", \"fp32\"]\nfeatures = [\"tensor-cores\"]\nproblem = { flops = 1e12, bytes = 1e9 }",
        "\"h100\"",
    );
    let p = plan(&s);
    let t = &p.operation.per_target[0];
    assert_eq!(t.peak_kind.as_deref(), Some("matrix"), "{t:?}");
    assert_eq!(t.peak_dtype.as_deref(), Some("bf16"), "{t:?}");
    let plain = plan(&s.replace("features = [\"tensor-cores\"]\n", ""));
    assert_eq!(
        plain.operation.per_target[0].peak_kind.as_deref(),
        Some("vector")
    );
}

/// A histogram whose counters do not fit in shared memory is atomic-bound: no expected range,
/// and the note says why; one that fits is not called atomic-bound.
#[test]
fn an_atomic_bound_histogram_gets_no_band() {
    let s = spec(
        "op = \"histogram\"\ndtypes = [\"int32\", \"int32\"]\nproblem = { n = 1000000000, bins = 131072 }",
        "\"a100\", \"mi250x\"",
    );
    let p = plan(&s);
    assert!(
        p.performance.iter().all(|x| x.expected_low.is_none()),
        "{:?}",
        p.performance
    );
    assert!(
        p.performance_notes
            .iter()
            .any(|n| n.contains("atomic-bound")),
        "{:?}",
        p.performance_notes
    );
    let small = plan(&s.replace("bins = 131072", "bins = 256"));
    assert!(
        !small
            .performance_notes
            .iter()
            .any(|n| n.contains("atomic-bound")),
        "{:?}",
        small.performance_notes
    );
}

/// RDNA targets read the RDNA efficiency rows, CDNA targets the CDNA rows.
#[test]
fn amd_families_read_their_own_efficiency_rows() {
    let s = spec(
        "op = \"elementwise\"\ndtypes = [\"fp32\"]\nproblem = { n = 268435456 }\n[abstraction]\nallowed = [\"hip-single-source\"]",
        "\"rx7900xtx\", \"mi300x\"",
    );
    let p = plan(&s);
    let basis = |t: &str| {
        p.performance
            .iter()
            .find(|x| x.target == t)
            .and_then(|x| x.efficiency.as_ref())
            .map(|e| e.basis.clone())
            .unwrap_or_default()
    };
    assert!(
        basis("rx7900xtx").contains("kplan's estimate"),
        "{}",
        basis("rx7900xtx")
    );
    assert!(
        !basis("mi300x").contains("kplan's estimate"),
        "{}",
        basis("mi300x")
    );
}
