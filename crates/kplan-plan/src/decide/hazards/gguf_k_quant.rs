//! `gguf-k-quant-layout`: a tensor of the kernel is in a GGUF k-quant format (`q2_k` ..
//! `q6_k`). A k-quant is a 256-value super-block of 8 or 16 sub-blocks whose sub-block scales
//! (and, for q2_K, q4_K and q5_K, mins) are themselves quantized under fp16 super-block scales
//! [GGML-QUANTS]: q2_K packs a 4-bit scale and a 4-bit min per 16 values (84 B), q3_K 6-bit
//! scales packed across 12 bytes and no mins (110 B), q4_K and q5_K 6-bit scales and mins
//! packed across 12 bytes (144 B and 176 B), q6_K one int8 scale per 16 values and no mins
//! (210 B). Unlike a group-wise int4 format (one scale and zero per group) the scales must be
//! unpacked before the values can be used, and a row must be a whole number of super-blocks.
//! The widest aligned load follows from the block size: a block that is not a multiple of 16 B
//! leaves super-blocks straddling 16-B loads (ggml reads q3_K and q6_K with 2-B aligned
//! 32-bit gathers). llama.cpp/ggml's CUDA kernels (`mul_mat_vec_q`, `mul_mat_q`), which its
//! HIP backend builds with hipcc, are the baseline per backend [GGML-CUDA].

use super::test_support::{Fx, GEMM};
use super::Cx;
use crate::model::Risk;
use crate::spec::QuantFormat;
use kplan_kb::Vendor;

/// The sub-block scale structure of one k-quant format (ggml-common.h `block_qN_K`).
struct KQuant {
    /// Sub-blocks per 256-value super-block.
    sub_blocks: u32,
    /// How the sub-block scales are stored.
    scales: &'static str,
    /// Whether the format has sub-block mins (`x = d*s*q - dmin*m`) or only scales.
    mins: bool,
}

/// The k-quant layouts of ggml-common.h [GGML-QUANTS], by canonical format name.
fn k_quant(name: &str) -> Option<KQuant> {
    let n = name.trim().to_ascii_lowercase().replace('-', "_");
    Some(match n.as_str() {
        "q2_k" => KQuant { sub_blocks: 16, scales: "4-bit scale and 4-bit min per byte (scales[16]) under fp16 d and dmin", mins: true },
        "q3_k" => KQuant { sub_blocks: 16, scales: "6-bit scales packed across 12 bytes under one fp16 d, plus a high-bit mask hmask[32]", mins: false },
        "q4_k" => KQuant { sub_blocks: 8, scales: "6-bit scales and mins packed across 12 bytes under fp16 d and dmin", mins: true },
        "q5_k" => KQuant { sub_blocks: 8, scales: "6-bit scales and mins packed across 12 bytes under fp16 d and dmin, plus the fifth bits qh[32]", mins: true },
        "q6_k" => KQuant { sub_blocks: 16, scales: "one int8 scale per sub-block (scales[16]) under one fp16 d, values split into ql[128] and qh[64]", mins: false },
        _ => return None,
    })
}

/// The widest power-of-two load (at most 16 B) that every super-block of `bytes` bytes starts
/// aligned to when blocks are packed back to back.
fn load_width(bytes: u64) -> u64 {
    let mut w = 16;
    while w > 1 && bytes % w != 0 {
        w /= 2;
    }
    w
}

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
    let block_bytes = (first.block as f64 * first.bytes_per_element()).round() as u64;
    let layout = k_quant(&first.name);
    let (scales, mins, sub) = match &layout {
        Some(k) => (k.scales, k.mins, k.sub_blocks),
        None => ("packed sub-block scales", true, 0),
    };
    let width = load_width(block_bytes);
    let loads = if width >= 16 {
        format!(
            "read whole super-blocks ({block_bytes} B = {} x 16 B) with 16-byte loads",
            block_bytes / 16
        )
    } else {
        format!(
            "a super-block is {block_bytes} B, not a multiple of 16 B, so super-blocks straddle 16-B loads: load the row with 16-B loads and extract each super-block's fields across them, or read each field as {width}-B aligned words as ggml does"
        )
    };
    let ratio = 2.0 / first.bytes_per_element();
    // ggml's spelling of the format (`q4_K`), for its function names.
    let ggml_name = {
        let n = first.name.trim().to_ascii_lowercase().replace('-', "_");
        format!("{}_K", n.trim_end_matches("_k"))
    };
    Some(Risk {
        id: "gguf-k-quant-layout".into(),
        title: format!(
            "GGUF k-quant `{}`: {}-value super-blocks of {} sub-blocks, {}{}",
            first.name,
            first.block,
            if sub > 0 { sub.to_string() } else { "several".into() },
            scales,
            if mins { "" } else { " (no mins)" }
        ),
        kind: "dtype".into(),
        targets: cx.targets.iter().map(|t| t.name.clone()).collect(),
        severity: "high".into(),
        mitigation: format!(
            "{loads}; unpack the sub-block scales{} in registers once per super-block ({}), require K to be a multiple of {}; test bit for bit against ggml's dequantize_row_{} on random blocks, including {}the largest scales{}",
            if mins { " and mins" } else { "" },
            if mins && sub == 8 { "ggml's get_scale_min_k4 layout" } else { "ggml's dequantize_row layout for the format" },
            first.block,
            ggml_name,
            if mins { "negative mins and " } else { "negative scales and " },
            if backends.is_empty() {
                String::new()
            } else {
                format!(
                    "; benchmark against llama.cpp/ggml's mul_mat_vec_q (batch up to 8) and mul_mat_q kernels on {}, the baseline to beat",
                    backends.join(" and ")
                )
            }
        ),
        fallback: Some(format!(
            "dequantise the `{}` rows to fp16 once at load ({}x the weight bytes: 2 B against {} B per weight) and use a plain fp16 GEMM/GEMV",
            first.name,
            crate::analysis::tidy((ratio * 100.0).round() / 100.0),
            crate::analysis::tidy(first.bytes_per_element()),
        )),
        evidence: q
            .iter()
            .map(|q| format!("`{}`: {}, {} B per {} values", q.name, q.layout, (q.block as f64 * q.bytes_per_element()).round(), q.block))
            .collect(),
        sources: vec!["GGML-QUANTS".into(), "GGML-CUDA".into()],
    })
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

#[cfg(test)]
mod tests {
    const SPEC: &str = "[kernel]\nname = \"q\"\nop = \"gemm\"\ndtypes = [\"fp16\", \"fp32\"]\nweight_dtype = \"W\"\nproblem = { m = 1, n = 4096, k = 4096 }\n[backends]\ntargets = [\"gfx1100\"]\n";

    fn text(w: &str) -> (String, String, String) {
        let plan = crate::decide::hazards::test_support::plan(&SPEC.replace("W", w));
        let r = plan
            .risks
            .iter()
            .find(|r| r.id == "gguf-k-quant-layout")
            .expect("raised");
        (
            r.title.clone(),
            r.mitigation.clone(),
            r.fallback.clone().unwrap_or_default(),
        )
    }

    /// The text follows the format's own record: q6_K has int8 scales and no mins, 210 B
    /// blocks that straddle 16-B loads, and 2 / (210 / 256) = 2.44x the bytes as fp16.
    #[test]
    fn text_follows_the_format() {
        let (title, mitigation, fallback) = text("q6_K");
        assert!(
            title.contains("int8 scale") && title.contains("no mins"),
            "{title}"
        );
        assert!(!mitigation.contains("negative mins"), "{mitigation}");
        assert!(
            mitigation.contains("not a multiple of 16 B") && mitigation.contains("2-B"),
            "{mitigation}"
        );
        assert!(fallback.contains("2.44x"), "{fallback}");
        let (title, mitigation, fallback) = text("q4_k");
        assert!(title.contains("6-bit scales and mins"), "{title}");
        assert!(
            mitigation.contains("16-byte loads") && mitigation.contains("get_scale_min_k4"),
            "{mitigation}"
        );
        assert!(fallback.contains("3.56x"), "{fallback}");
        let (_, mitigation, _) = text("q2_k");
        assert!(
            mitigation.contains("84 B") && mitigation.contains("4-B"),
            "{mitigation}"
        );
    }

    #[test]
    fn load_width_is_the_block_alignment() {
        assert_eq!(super::load_width(144), 16);
        assert_eq!(super::load_width(176), 16);
        assert_eq!(super::load_width(84), 4);
        assert_eq!(super::load_width(110), 2);
        assert_eq!(super::load_width(210), 2);
    }
}
