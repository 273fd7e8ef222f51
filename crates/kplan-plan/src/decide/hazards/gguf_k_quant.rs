//! `gguf-k-quant-layout`: a tensor of the kernel is in a GGUF k-quant format (`q2_k` ..
//! `q6_k`). A k-quant is a 256-value super-block of 8 or 16 sub-blocks: q4_K stores an fp16
//! `d` and `dmin`, 12 bytes of 6-bit sub-block scales and mins packed across byte boundaries,
//! and 128 bytes of nibbles (144 B per 256 values) [GGML-QUANTS]; unlike a group-wise int4
//! format (one scale and zero per group) its scales must be unpacked before the nibbles can be
//! used, and a row must be a whole number of super-blocks. llama.cpp/ggml's CUDA kernels
//! (`mul_mat_vec_q`, `mul_mat_q`), which its HIP backend builds with hipcc, are the baseline
//! per backend [GGML-CUDA].

use super::test_support::{Fx, GEMM};
use super::Cx;
use crate::model::Risk;
use crate::spec::QuantFormat;
use kplan_kb::Vendor;

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let q: Vec<&QuantFormat> = [&cx.spec.storage_quant, &cx.spec.weight_quant]
        .into_iter()
        .flatten()
        .filter(|q| q.is_gguf_k_quant())
        .collect();
    let first = q.first()?;
    let gpu: Vec<_> = cx.targets.iter().filter(|t| t.is_gpu()).collect();
    let backends: Vec<&str> = [
        (Vendor::Nvidia, "CUDA"),
        (Vendor::Amd, "HIP (the same sources through hipcc)"),
    ]
    .into_iter()
    .filter(|(v, _)| gpu.iter().any(|t| t.vendor() == *v))
    .map(|(_, b)| b)
    .collect();
    Some(
        Risk::builder("gguf-k-quant-layout", "dtype", "high")
            .title(format!(
                "GGUF k-quant `{}`: 256-value super-blocks with 6-bit packed sub-block scales and mins",
                first.name
            ))
            .targets(cx.targets.iter().map(|t| t.name.clone()).collect())
            .mitigation(format!(
                "read whole super-blocks ({} values, {} B per block of scales and values) with 16-byte loads, unpack the packed sub-block scales and mins in registers once per super-block (ggml's get_scale_min_k4 layout for q4_K/q5_K), require K to be a multiple of {}; test bit for bit against ggml's dequantize_row_* for the format on random blocks, including negative mins and the largest 6-bit scales{}",
                first.block,
                crate::analysis::tidy(first.block as f64 * first.bytes_per_element()),
                first.block,
                if backends.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; benchmark against llama.cpp/ggml's mul_mat_vec_q (batch up to 8) and mul_mat_q kernels on {}, the baseline to beat",
                        backends.join(" and ")
                    )
                }
            ))
            .fallback("dequantise the k-quant rows to fp16 once at load (3.6x the weight bytes of q4_K) and use a plain fp16 GEMM/GEMV")
            .evidence(q.iter().map(|q| format!("`{}`: {}", q.name, q.layout)))
            .sources(["GGML-QUANTS", "GGML-CUDA"])
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = GEMM
    .name("q")
    .problem("m = 1, n = 4096, k = 4096")
    .kernel(&["weight_dtype = \"q4_k\""])
    .targets(&["gfx1100"])
    .allowed(&[]);

pub(super) const FIXTURES: super::Fixtures = super::Fixtures {
    probe: "gguf-k-quant-layout",
    fires: &[SPEC, SPEC.kernel(&["weight_dtype = \"q6_K\""])],
    silent: &[
        SPEC.kernel(&["weight_dtype = \"q4_0\""]),
        SPEC.kernel(&["weight_dtype = \"int4-awq\""]),
        SPEC.kernel(&["weight_dtype = \"fp16\""]),
    ],
};
