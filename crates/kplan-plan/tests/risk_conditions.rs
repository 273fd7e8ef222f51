//! Op risks fire for the shapes they concern and stay silent elsewhere: for every risk of the
//! operation knowledge base that has a `when` condition (and for the hazard rules the brief of
//! issue 12 names), one spec where it must fire and one where it must not.

use kplan_kb::Kb;
use kplan_plan::{build_plan, parse_spec};

fn ids(kernel: &str, targets: &str) -> Vec<String> {
    let t = format!(
        "[kernel]\nname = 'x'\n{kernel}\n[backends]\ntargets = [{targets}]\n[abstraction]\nallowed = ['hip-single-source', 'per-backend']\n"
    );
    let kb = Kb::builtin();
    let s = parse_spec(&t, kb).unwrap_or_else(|e| panic!("{t}: {e}"));
    build_plan(&s, kb, &Default::default())
        .risks
        .into_iter()
        .map(|r| r.id)
        .collect()
}

const T: &str = "'sm_90', 'gfx942'";

/// (risk id, spec that must raise it, spec that must not)
const CASES: &[(&str, &str, &str)] = &[
    (
        "gemm-split-k",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 256, n = 256, k = 65536 }",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 4096, n = 4096, k = 4096 }",
    ),
    (
        // m = 8 is the GEMV tile's (gemm-gemv-bandwidth); above it the library tile's risk.
        "gemm-small-m",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 32, n = 8192, k = 8192 }",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 4096, n = 4096, k = 4096 }",
    ),
    (
        "gemm-gemv-bandwidth",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 8, n = 8192, k = 8192 }",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 32, n = 8192, k = 8192 }",
    ),
    (
        "gemm-int32-accumulation",
        "op = 'gemm'\ndtypes = ['int8', 'int32', 'int32']\nproblem = { m = 4096, n = 4096, k = 4096 }",
        "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 4096, n = 4096, k = 4096 }",
    ),
    (
        "attention-head-dim-smem",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 4, heads = 16, seq = 4096, head_dim = 256 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 4, heads = 16, seq = 4096, head_dim = 128 }",
    ),
    (
        "attention-splitkv-merge",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, kv_heads = 8, seq_q = 1, seq_kv = 8192, head_dim = 128 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, seq = 4096, head_dim = 128 }",
    ),
    (
        "attention-gqa-packing",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, kv_heads = 8, seq = 4096, head_dim = 128 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, seq = 4096, head_dim = 128 }",
    ),
    (
        "attention-paged-gather",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, seq_q = 1, seq_kv = 8192, head_dim = 128, page_size = 16 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, seq_q = 1, seq_kv = 8192, head_dim = 128 }",
    ),
    (
        "attention-causal-imbalance",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, seq = 4096, head_dim = 128, causal = true }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, seq = 4096, head_dim = 128 }",
    ),
    (
        "topk-long-rows",
        "op = 'topk'\ndtypes = ['fp32']\nproblem = { rows = 64, cols = 152064, k = 50 }",
        "op = 'topk'\ndtypes = ['fp32']\nproblem = { rows = 16384, cols = 128, k = 8 }",
    ),
    (
        "topk-short-rows",
        "op = 'topk'\ndtypes = ['fp32']\nproblem = { rows = 16384, cols = 128, k = 8 }",
        "op = 'topk'\ndtypes = ['fp32']\nproblem = { rows = 64, cols = 152064, k = 50 }",
    ),
    (
        "histogram-lds-banks",
        "op = 'histogram'\ndtypes = ['uint8', 'uint32']\nproblem = { n = 1000000, bins = 256 }",
        "op = 'histogram'\ndtypes = ['int32', 'uint32']\nproblem = { n = 1000000, bins = 131072 }",
    ),
    (
        "histogram-bin-overflow",
        "op = 'histogram'\ndtypes = ['int32', 'uint32']\nproblem = { n = 5000000000, bins = 1024 }",
        "op = 'histogram'\ndtypes = ['int32', 'uint32']\nproblem = { n = 1000000, bins = 1024 }",
    ),
    (
        "scan-lookback-progress",
        "op = 'scan'\ndtypes = ['int32', 'int64']\nproblem = { n = 1000000000 }",
        "op = 'scan'\ndtypes = ['fp32']\nproblem = { rows = 128, cols = 4096 }",
    ),
    (
        "scan-accumulator-overflow",
        "op = 'scan'\ndtypes = ['int32']\nproblem = { n = 1000000000 }",
        "op = 'scan'\ndtypes = ['fp32']\nproblem = { n = 1000000000 }",
    ),
    (
        "softmax-long-rows",
        "op = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 64, cols = 128256 }",
        "op = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 65536, cols = 512 }",
    ),
    (
        "softmax-short-rows",
        "op = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 65536, cols = 512 }",
        "op = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 64, cols = 128256 }",
    ),
    (
        "softmax-masking",
        "op = 'softmax'\ndtypes = ['fp16', 'fp32']\nmask = 'causal'\nproblem = { rows = 4096, cols = 512 }",
        "op = 'softmax'\ndtypes = ['fp16', 'fp32']\nproblem = { rows = 4096, cols = 512 }",
    ),
    (
        "norm-bwd-dgamma",
        "op = 'norm'\ndirection = 'backward'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 16384, cols = 4096 }",
        "op = 'norm'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 16384, cols = 4096 }",
    ),
    (
        "norm-underfilled",
        "op = 'norm'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 1, cols = 8192 }",
        "op = 'norm'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 16384, cols = 8192 }",
    ),
    (
        "spmv-index-width",
        "op = 'spmv'\ndtypes = ['fp32']\nproblem = { rows = 50000000, cols = 50000000, nnz = 1800000000 }",
        "op = 'spmv'\ndtypes = ['fp64']\nproblem = { rows = 10000000, cols = 10000000, nnz = 300000000 }",
    ),
    (
        "stencil-grid-sync",
        "op = 'stencil'\ndtypes = ['fp32']\nproblem = { nx = 16384, ny = 16384, points = 5, radius = 1, steps = 100 }",
        "op = 'stencil'\ndtypes = ['fp64']\nproblem = { nx = 512, ny = 512, nz = 512, points = 7, radius = 1 }",
    ),
    (
        "embedding-index-width",
        "op = 'embedding'\ndtypes = ['bf16']\nproblem = { vocab = 1000000, dim = 4096, tokens = 8192 }",
        "op = 'embedding'\ndtypes = ['bf16']\nproblem = { vocab = 128256, dim = 4096, tokens = 8192 }",
    ),
    (
        "scatter-duplicates",
        "op = 'scatter'\ndtypes = ['fp32']\nreduce = 'sum'\nproblem = { n = 1000000, dim = 64, out_rows = 1000 }",
        "op = 'scatter'\ndtypes = ['bf16', 'fp32', 'fp8']\nproblem = { tokens = 8192, kv_heads = 8, head_dim = 128, page_size = 16, num_pages = 65536 }",
    ),
    (
        "quant-scale-layout",
        "op = 'quantize'\ndtypes = ['bf16', 'fp32', 'mxfp4']\nproblem = { rows = 1024, cols = 8192, block = 32 }",
        "op = 'quantize'\ndtypes = ['bf16', 'fp32', 'fp8']\nproblem = { rows = 1024, cols = 8192 }",
    ),
    (
        "quant-scale-encoding",
        "op = 'quantize'\ndtypes = ['bf16', 'fp32', 'fp8']\nproblem = { rows = 1024, cols = 8192 }",
        "op = 'quantize'\ndtypes = ['bf16', 'fp32', 'int8']\nproblem = { rows = 1024, cols = 8192 }",
    ),
    (
        "sort-float-keys",
        "op = 'sort'\ndtypes = ['fp32']\nproblem = { n = 268435456 }",
        "op = 'sort'\ndtypes = ['uint32']\nproblem = { n = 268435456 }",
    ),
    (
        "sort-stability",
        "op = 'sort'\ndtypes = ['uint32']\nstable = true\nproblem = { n = 268435456 }",
        "op = 'sort'\ndtypes = ['uint32']\nproblem = { n = 268435456 }",
    ),
    (
        "sort-segment-size",
        "op = 'sort'\ndtypes = ['fp32']\nproblem = { segments = 65536, segment_len = 512 }",
        "op = 'sort'\ndtypes = ['fp32']\nproblem = { n = 268435456 }",
    ),
    (
        "reduction-argmax-ties",
        "op = 'reduction'\nreduce = 'argmax'\ndtypes = ['fp32', 'fp32', 'int32']\nproblem = { rows = 1, cols = 128256 }",
        "op = 'reduction'\ndtypes = ['fp32']\nproblem = { n = 100000000 }",
    ),
    (
        "reduction-order",
        "op = 'reduction'\ndtypes = ['fp32']\nproblem = { n = 100000000 }",
        "op = 'reduction'\ndtypes = ['int32']\nproblem = { n = 100000000 }",
    ),
    (
        "conv-causal-padding",
        "op = 'conv'\ndtypes = ['bf16', 'fp32']\ncausal = true\nproblem = { batch = 8, seq = 4096, channels = 512, kernel_w = 4, groups = 512 }",
        "op = 'conv'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, seq = 4096, channels = 512, kernel_w = 4, groups = 512 }",
    ),
    (
        "conv-depthwise-matrix-units",
        "op = 'conv'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, seq = 4096, channels = 512, kernel_w = 4, groups = 512 }",
        "op = 'conv'\ndtypes = ['fp16', 'fp32']\nproblem = { batch = 32, height = 56, width = 56, in_channels = 256, out_channels = 256, kernel_h = 3, kernel_w = 3 }",
    ),
    (
        "moe-align-latency",
        "op = 'moe'\ndtypes = ['int32']\nproblem = { tokens = 4096, experts = 128, top_k = 8, block_size = 64 }",
        "op = 'moe'\ndtypes = ['fp32', 'fp32', 'int32']\nproblem = { tokens = 8192, experts = 256, top_k = 8 }",
    ),
    (
        "attention-library-page-size",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, seq_q = 1, seq_kv = 8192, head_dim = 128, page_size = 16 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, seq_q = 1, seq_kv = 8192, head_dim = 128, page_size = 256 }",
    ),
    (
        "attention-kv-cache-layout",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 32, seq_q = 1, seq_kv = 8192, head_dim = 128, page_size = 256 }",
        "op = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 8, heads = 32, seq = 4096, head_dim = 128 }",
    ),
    (
        "custom-no-work-model",
        "op = 'viterbi'\ndtypes = ['fp32']\nproblem = { batch = 64, frames = 3000 }",
        "op = 'custom'\ndtypes = ['fp32']\nproblem = { flops = 1e9, bytes = 1e9 }",
    ),
    (
        "custom-model",
        "op = 'custom'\ndtypes = ['fp32']\nproblem = { flops = 1e9, bytes = 1e9 }",
        "op = 'viterbi'\ndtypes = ['fp32']\nproblem = { batch = 64, frames = 3000 }",
    ),
];

#[test]
fn each_conditioned_op_risk_fires_where_it_applies_and_only_there() {
    for (id, yes, no) in CASES {
        let y = ids(yes, T);
        assert!(
            y.iter().any(|i| i == id),
            "{id} must fire for\n{yes}\ngot {y:?}"
        );
        let n = ids(no, T);
        assert!(
            !n.iter().any(|i| i == id),
            "{id} must not fire for\n{no}\ngot {n:?}"
        );
    }
}

#[test]
fn hazard_rules_fire_only_for_the_targets_they_concern() {
    let gemm = "op = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 4096, n = 4096, k = 4096 }";
    let y = ids(gemm, "'sm_90', 'gfx942', 'gfx1100'");
    for id in [
        "matrix-operand-layout",
        "amd-launch-bounds",
        "half-type-names",
    ] {
        assert!(y.iter().any(|i| i == id), "{id}: {y:?}");
    }
    let n = ids(gemm, "'sm_80', 'sm_90'");
    for id in [
        "matrix-operand-layout",
        "amd-launch-bounds",
        "half-type-names",
        "lds-bank-layout",
    ] {
        assert!(!n.iter().any(|i| i == id), "{id}: {n:?}");
    }
}
