//! Risks the team states in its own words. A spec's comments and free text (`description`,
//! `numerics`, descriptive keys) often say what matters most: bitwise reproducibility, work that
//! is irregular per thread, memory shared with the CPU, accuracy against a reference. Each rule
//! here fires when the spec's words name its concern (matched at the start of a word), quotes
//! the words as evidence, and gives the cross-vendor mitigation:
//! - `cross-vendor-reproducibility`: reproducible, deterministic, bitwise, bit-exact, run-to-run;
//! - `irregular-work-divergence`: imbalance, skew, irregular, variable-length, divergence,
//!   long tail, power-law; kernel code only (a library call meets no divergence hazard);
//! - `unified-memory`: unified or managed memory, zero-copy, APU, integrated GPU, Jetson;
//! - `low-precision-accumulation`: 16-bit or narrower storage and words about accuracy
//!   (precision, ulp, tolerance, parity, drift, accuracy); kernel code only.

use super::test_support::ELEMENTWISE;
use super::*;

/// Where one of `words` starts a word of `text`: the quoted phrase around the first match.
fn quote(text: &str, words: &[&str]) -> Option<String> {
    let b = text.as_bytes();
    for w in words {
        let mut from = 0;
        while let Some(p) = text[from..].find(w) {
            let at = from + p;
            let starts = at == 0 || !b[at - 1].is_ascii_alphanumeric();
            if starts {
                // about 40 characters each side within the piece (comment line or value),
                // widened to whole words
                let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
                let line_end = text[at..].find('\n').map_or(text.len(), |p| at + p);
                let mut s = at.saturating_sub(40).max(line_start);
                while s > line_start
                    && (!text.is_char_boundary(s) || !b[s - 1].is_ascii_whitespace())
                {
                    s -= 1;
                }
                let mut e = (at + w.len() + 40).min(line_end);
                while e < line_end && (!text.is_char_boundary(e) || !b[e].is_ascii_whitespace()) {
                    e += 1;
                }
                let phrase: String = text[s..e].split_whitespace().collect::<Vec<_>>().join(" ");
                return Some(phrase);
            }
            from = at + w.len();
        }
    }
    None
}

fn gpu_names(cx: &Cx, coded_only: bool) -> Vec<String> {
    let list = if coded_only { &cx.coded } else { &cx.gpu };
    list.iter().map(|t| t.name.to_string()).collect()
}

const REPRODUCIBLE: &[&str] = &[
    "reproducib",
    "deterministic",
    "determinism",
    "bitwise",
    "bit-exact",
    "bit exact",
    "bit-for-bit",
    "bit-identical",
    "run-to-run",
    "bfb",
];

/// Words that ask for the same bits across vendors or backends, not only run to run.
const ACROSS: &[&str] = &[
    "across vendor",
    "cross-vendor",
    "across backend",
    "across gpu",
    "between vendor",
    "between backend",
    "across platform",
    "across hardware",
    "cpu and gpu",
    "across devices",
    "every backend",
    "all backends",
];

pub fn reproducibility(cx: &Cx) -> Vec<Risk> {
    let Some(phrase) = quote(&cx.spec.intent, REPRODUCIBLE) else {
        return Vec::new();
    };
    let targets = gpu_names(cx, false);
    if targets.is_empty() {
        return Vec::new();
    }
    let mut evidence = vec![format!("the spec says: \"{phrase}\"")];
    // run to run on one machine, or the same bits across vendors as well
    let across = quote(&cx.spec.intent, ACROSS);
    if let Some(a) = &across {
        evidence.push(format!("the spec says: \"{a}\""));
    }
    let order = "reduce in a fixed order that does not depend on block scheduling (a fixed-shape tree or two passes with per-block partials; no float atomics in the result path); pin library versions and algorithms (vendor libraries choose kernels, and split-K, per device); CI runs each backend twice and compares the bits";
    let (severity, title, mitigation, fallback) = if across.is_some() {
        (
            "high",
            "the same bits on every backend are a stated requirement: the order of floating-point sums, float atomics and FMA contraction differ between runs, backends and vendors",
            format!("{order}; compile with the same contraction everywhere (nvcc `--fmad=false`, clang/hipcc `-ffp-contract=off`) and use the same math-library functions (no vendor fast intrinsics), and compare every backend to the CPU reference bit for bit"),
            "reproducible run to run on each backend only, with a tolerance between vendors: the fixed-order reduction costs one extra pass, about 10-30% on a memory-bound reduction",
        )
    } else {
        (
            "medium",
            "reproducible results run to run are a stated requirement: the order of floating-point sums and float atomics changes with block scheduling",
            order.to_string(),
            "accept last-bit differences between runs and compare with a tolerance: no extra pass",
        )
    };
    vec![
        Risk::builder("cross-vendor-reproducibility", "hazard", severity)
            .title(title)
            .targets(targets)
            .mitigation(mitigation)
            .fallback(fallback)
            .evidence(evidence)
            .build(),
    ]
}

const IRREGULAR: &[&str] = &[
    "imbalance",
    "imbalanced",
    "skew",
    "irregular",
    "variable-length",
    "variable length",
    "divergen",
    "long tail",
    "long-tail",
    "power-law",
    "power law",
    "data-dependent",
    "branchy",
];

pub fn irregular(cx: &Cx) -> Vec<Risk> {
    let Some(phrase) = quote(&cx.spec.intent, IRREGULAR) else {
        return Vec::new();
    };
    let targets = gpu_names(cx, true);
    if targets.is_empty() {
        return Vec::new();
    }
    let wide = cx.coded.iter().any(|t| t.arch.warp_sizes.contains(&64));
    vec![Risk::builder("irregular-work-divergence", "hazard", "medium")
        .title(if wide {
            "work per thread is irregular: lanes of a warp or wavefront wait for the longest item, and a 64-lane wavefront waits for more of them than a 32-lane warp"
        } else {
            "work per thread is irregular: lanes of a warp wait for the longest item of the warp"
        })
        .targets(targets)
        .mitigation("bin or sort the work items by size first (a segmented pass: short items one per lane, long ones one per warp or block); or a persistent kernel that takes items from an atomic counter; measure lane utilisation on each vendor (Nsight Compute warp execution efficiency, rocprof VALU utilisation), since wave64 loses twice the lanes to one long item")
        .fallback("two kernels, one for short and one for long items, chosen on the host by a size threshold: one extra launch and a partition pass")
        .evidence(vec![format!("the spec says: \"{phrase}\"")])
        .build()]
}

const UNIFIED: &[&str] = &[
    "unified memory",
    "managed memory",
    "zero-copy",
    "zero copy",
    "apu",
    "igpu",
    "integrated gpu",
    "jetson",
    "mi300a",
    "coherent memory",
];

/// Products whose memory is shared with the CPU: named alone, the risk concerns those targets.
const APU_PRODUCTS: &[&str] = &["mi300a", "jetson", "orin"];

pub fn unified_memory(cx: &Cx) -> Vec<Risk> {
    let generic: Vec<&str> = UNIFIED
        .iter()
        .copied()
        .filter(|w| !APU_PRODUCTS.contains(w))
        .collect();
    let (phrase, targets) = match quote(&cx.spec.intent, &generic) {
        Some(p) => (p, gpu_names(cx, false)),
        None => {
            let Some(p) = quote(&cx.spec.intent, APU_PRODUCTS) else {
                return Vec::new();
            };
            // only the targets that are those products
            let apu: Vec<String> = cx
                .gpu
                .iter()
                .filter(|t| {
                    let n = t.name.to_ascii_lowercase();
                    APU_PRODUCTS.iter().any(|a| n.contains(a))
                })
                .map(|t| t.name.to_string())
                .collect();
            (p, apu)
        }
    };
    if targets.is_empty() {
        return Vec::new();
    }
    vec![Risk::builder("unified-memory", "hazard", "medium")
        .title("host and device share memory (APU, integrated GPU or managed memory): allocation flags, page migration and CPU traffic decide the bandwidth, not only the kernel")
        .targets(targets)
        .mitigation("allocate once where both sides read without copies (`hipMalloc` device memory the CPU reaches on an APU, or `hipHostMalloc`/`cudaHostAlloc` mapped and coherent; managed memory with XNACK enabled on MI300A, `HSA_XNACK=1`), drop explicit copies the hardware does not need, and measure the kernel with the CPU side of the pipeline running, since both share the memory bandwidth")
        .fallback("explicit device buffers and copies as on a discrete GPU: correct everywhere, a copy per frame or batch where the memory is shared")
        .evidence(vec![format!("the spec says: \"{phrase}\"")])
        .build()]
}

const ACCURACY: &[&str] = &[
    "precision",
    "ulp",
    "tolerance",
    "rtol",
    "atol",
    "parity",
    "drift",
    "accuracy",
    "accurate",
    "relative error",
    "numerical",
];

pub fn accumulation(cx: &Cx) -> Vec<Risk> {
    let narrow = |d: Dtype| d.bytes() < 4;
    let spec = cx.spec;
    // ops that move or convert values without summing them accumulate nothing
    if matches!(
        spec.op,
        crate::spec::Op::Elementwise
            | crate::spec::Op::Gather
            | crate::spec::Op::Quantize
            | crate::spec::Op::Dequantize
            | crate::spec::Op::Sort
            | crate::spec::Op::Topk
    ) {
        return Vec::new();
    }
    if !(narrow(spec.storage) || spec.all_dtypes().into_iter().any(narrow)) {
        return Vec::new();
    }
    let Some(phrase) = quote(&spec.intent, ACCURACY) else {
        return Vec::new();
    };
    let targets = gpu_names(cx, true);
    if targets.is_empty() {
        return Vec::new();
    }
    vec![Risk::builder("low-precision-accumulation", "hazard", "medium")
        .title("accuracy is a stated requirement and the data is 16-bit or narrower: where and in what order the kernel accumulates decides whether every backend meets it")
        .targets(targets)
        .mitigation("accumulate in fp32 (keep 16-bit or 8-bit values only for storage and matrix-unit inputs), convert once at the end, and follow the reference's order where parity is asked (per-row, then across rows); matrix units round differently between vendors and generations (tensor cores and MFMA/WMMA accumulate in fp32, but the input rounding and the order within a k-block differ), so test each backend against the CPU reference with a tolerance derived from the dtype's ulp and the reduction length")
        .fallback("compensated (Kahan) or fp64 accumulation for the sums that fail the tolerance: more registers, and slower where the fp64 rate is low")
        .evidence(vec![format!("the spec says: \"{phrase}\"")])
        .build()]
}

/// Fixtures of `cross-vendor-reproducibility`.
pub(super) const FIXTURES_REPRO: Fixtures = Fixtures {
    probe: "cross-vendor-reproducibility",
    fires: &[ELEMENTWISE
        .op("reduction")
        .kernel(&["description = \"sum of losses; must be bitwise reproducible across runs\""])],
    silent: &[ELEMENTWISE.op("reduction")],
};

/// Fixtures of `irregular-work-divergence`.
pub(super) const FIXTURES_IRREGULAR: Fixtures = Fixtures {
    probe: "irregular-work-divergence",
    fires: &[ELEMENTWISE
        .kernel(&["description = \"per-read chaining; read lengths are power-law distributed\""])],
    silent: &[
        ELEMENTWISE,
        // a library call writes no kernel code
        ELEMENTWISE
            .op("gemm")
            .dtypes(&["fp16", "fp32"])
            .problem("m = 4096, n = 4096, k = 4096")
            .kernel(&["description = \"expert sizes are skewed\""])
            .allowed(&["vendor-blas"]),
    ],
};

/// Fixtures of `unified-memory`.
pub(super) const FIXTURES_UNIFIED: Fixtures = Fixtures {
    probe: "unified-memory",
    fires: &[
        ELEMENTWISE.kernel(&["description = \"runs on the MI300A APU with zero-copy buffers\""])
    ],
    silent: &[ELEMENTWISE.kernel(&["description = \"plain device buffers\""])],
};

/// Fixtures of `low-precision-accumulation`.
pub(super) const FIXTURES_ACCUM: Fixtures = Fixtures {
    probe: "low-precision-accumulation",
    fires: &[ELEMENTWISE
        .op("reduction")
        .dtypes(&["bf16", "fp32"])
        .kernel(&["description = \"gradients must match torch within 1e-3 relative tolerance\""])],
    silent: &[
        ELEMENTWISE.op("reduction").kernel(&[
            "description = \"gradients must match torch within 1e-3 relative tolerance\"",
        ]),
        ELEMENTWISE.op("reduction").dtypes(&["bf16", "fp32"]),
        // an elementwise op sums nothing
        ELEMENTWISE.dtypes(&["bf16", "fp32"]).kernel(&[
            "description = \"gradients must match torch within 1e-3 relative tolerance\"",
        ]),
    ],
};
