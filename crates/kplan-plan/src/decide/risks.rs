//! Section 4: the portability risk register. One entry per (feature or hazard) x the targets it
//! affects, with mitigation, the KB's fallback (and its penalty) where a feature is missing, and
//! the evidence (KB facts with source keys, or source-scan locations).

use super::Target;
use crate::model::Risk;
use crate::spec::Spec;
use kplan_kb::{Availability, Dtype, Vendor};
use std::collections::BTreeMap;

/// A portability hazard found in existing source (from `kplan plan --source`).
#[derive(Debug, Clone)]
pub struct SourceFinding {
    /// KB feature id or scanner rule id.
    pub feature: String,
    pub rule: String,
    pub count: usize,
    /// `path:line:col`
    pub locations: Vec<String>,
}

/// The register: every rule of [`super::hazards::RULES`] in order, then the hazards found in
/// existing source.
pub fn register(
    cx: &super::Context,
    strategy: &super::strategy::Decided,
    findings: &[SourceFinding],
) -> Vec<Risk> {
    let kb = cx.kb;
    let hx = super::hazards::Cx::new(cx, strategy);
    let gpu = &hx.gpu;
    let mut risks = super::hazards::run(&hx);

    // Findings from existing source.
    let mut by_feature: BTreeMap<&str, Vec<&SourceFinding>> = BTreeMap::new();
    for s in findings {
        by_feature.entry(s.feature.as_str()).or_default().push(s);
    }
    for (feature, items) in by_feature {
        let count: usize = items.iter().map(|i| i.count).sum();
        let mut locs: Vec<String> = items
            .iter()
            .flat_map(|i| i.locations.iter().cloned())
            .collect();
        locs.sort();
        locs.dedup();
        let non_nv = || {
            gpu.iter()
                .filter(|t| t.vendor() != Vendor::Nvidia)
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        let mut affected: Vec<String> = match kb.feature(feature) {
            Some(_) => gpu
                .iter()
                .filter(|t| kb.availability(feature, &t.arch.id) != Availability::Yes)
                .map(|t| t.name.clone())
                .collect(),
            None => non_nv(),
        };
        // Available everywhere, but written in NVIDIA's API: the translation is the risk.
        let translated_only = affected.is_empty();
        if translated_only && kb.feature(feature).is_some_and(|f| f.origin == "nvidia") {
            affected = non_nv();
        }
        let fallback = kb.feature(feature).and_then(|f| f.fallback.clone());
        let rules: Vec<&str> = items
            .iter()
            .map(|i| i.rule.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut evidence: Vec<String> = locs.iter().take(20).cloned().collect();
        if locs.len() > 20 {
            evidence.push(format!("... and {} more locations", locs.len() - 20));
        }
        risks.push(Risk {
            id: format!("source-{feature}"),
            title: format!("existing source uses `{feature}` ({count} site{}; rule {})", if count == 1 { "" } else { "s" }, rules.join(", ")),
            kind: "source".into(),
            targets: affected,
            severity: if translated_only { "low".into() } else if fallback.is_some() { "medium".into() } else { "high".into() },
            mitigation: if translated_only {
                "available on every target through a translation: port each site through the header's portable name and check mask widths; `kplan scan` lists the fix per rule".into()
            } else {
                "port each site through the header or guard it per vendor, with the fallback where the feature is missing; `kplan scan` lists the fix per rule".into()
            },
            fallback,
            evidence,
            sources: vec![],
        });
    }

    risks
}

/// What an op risk's `when` condition can read (see [`super::when`]): the problem's sizes
/// (every key the spec gave and the sizes of its normalised shape), the modifiers and dtypes,
/// the vendors and families in scope and whether any GPU target gets hand-written code.
pub fn facts(spec: &Spec, targets: &[Target], coded: &[&Target]) -> super::when::Facts {
    use crate::spec::Problem;
    let mut f = super::when::Facts::default();
    for (k, v) in &spec.dims {
        f.nums.insert(k.clone(), *v as f64);
    }
    let mut put = |k: &str, v: u64| {
        f.nums.entry(k.to_string()).or_insert(v as f64);
    };
    match &spec.problem {
        Problem::Flat { n } => put("n", *n),
        Problem::Rows { rows, cols } => {
            put("rows", *rows);
            put("cols", *cols);
        }
        Problem::Gemm { batch, m, n, k } => {
            put("batch", *batch);
            put("m", *m);
            put("n", *n);
            put("k", *k);
        }
        Problem::Attention {
            batch,
            heads,
            kv_heads,
            seq_q,
            seq_kv,
            head_dim,
            ..
        } => {
            put("batch", *batch);
            put("heads", *heads);
            put("kv_heads", *kv_heads);
            put("seq_q", *seq_q);
            put("seq_kv", *seq_kv);
            put("head_dim", *head_dim);
        }
        Problem::Custom { .. } => {}
    }
    f.nums.insert("elements".into(), largest_tensor(spec));
    // The length one scan / sort / top-k / softmax row runs over: `cols` of a row problem,
    // `n` of a flat one.
    match &spec.problem {
        Problem::Rows { cols, .. } => {
            f.nums.insert("row_len".into(), *cols as f64);
        }
        Problem::Flat { n } => {
            f.nums.insert("row_len".into(), *n as f64);
        }
        _ => {}
    }
    f.nums
        .insert("storage_bytes".into(), spec.storage_size().max(0.125));
    f.nums
        .insert("out_bytes".into(), spec.output.size().max(0.125));
    if let Some(w) = spec.weight_size() {
        f.nums.insert("weight_bytes".into(), w.max(0.125));
    }
    if let Some(b) = spec.dim("bins") {
        let counter = if spec.output.is_integer() && spec.output.bytes() >= 8 {
            8
        } else {
            4
        };
        f.nums.insert("counter_bytes".into(), (b * counter) as f64);
    }
    let gpu: Vec<&Target> = targets.iter().filter(|t| t.is_gpu()).collect();
    if let Some(l) = gpu
        .iter()
        .filter_map(|t| t.arch.shared_per_block_bytes.value)
        .min()
    {
        f.nums.insert("lds_bytes".into(), l as f64);
    }
    f.nums.insert("gpu_targets".into(), gpu.len() as f64);
    // The GEMV tile plans the coded targets: its split-K, not the library tile count, decides.
    let gemv_split = super::tiles::gemv_split_k(spec, coded);
    if let Some(s) = gemv_split {
        f.nums.insert("gemv_split_k".into(), s as f64);
    }
    let m = &spec.modifiers;
    let attn = matches!(spec.problem, Problem::Attention { .. });
    let decode = match &spec.problem {
        Problem::Attention { seq_q, .. } => *seq_q <= 8,
        _ => false,
    };
    let gqa =
        matches!(&spec.problem, Problem::Attention { heads, kv_heads, .. } if kv_heads < heads);
    let vendor = |v: Vendor| targets.iter().any(|t| t.vendor() == v);
    for (k, v) in [
        ("backward", spec.is_backward()),
        ("forward", !spec.is_backward()),
        ("decode", decode),
        ("prefill", attn && !decode),
        ("deterministic", m.deterministic),
        (
            "causal",
            m.causal || matches!(spec.problem, Problem::Attention { causal: true, .. }),
        ),
        ("varlen", m.varlen),
        ("ragged", m.ragged),
        ("stable", m.stable),
        ("exclusive", m.exclusive),
        ("values", m.values),
        ("fp8", spec.uses_fp8()),
        ("fp8_output", spec.output == Dtype::Fp8),
        // a dtype narrower than a byte (int4, int2, fp4): values packed several to a byte
        ("sub_byte", spec.all_dtypes().iter().any(|d| d.size() < 1.0)),
        (
            "integer",
            spec.storage.is_integer() || spec.output.is_integer(),
        ),
        ("block_scaled", spec.block_scale.is_some()),
        ("amd", vendor(Vendor::Amd)),
        ("nvidia", vendor(Vendor::Nvidia)),
        ("cpu", vendor(Vendor::Cpu)),
        ("cdna", targets.iter().any(|t| t.is_cdna())),
        ("rdna", targets.iter().any(|t| t.is_rdna())),
        ("multi_die", targets.iter().any(|t| t.is_multi_die())),
        (
            "atomics",
            spec.features.iter().any(|x| x.contains("atomic")),
        ),
        ("library", !gpu.is_empty() && coded.is_empty()),
        ("latency_budget", spec.latency_us.is_some()),
        ("paged", spec.dim("page_size").is_some()),
        ("gqa", gqa),
        ("epilogue", m.epilogue.is_some()),
        ("masked", m.mask.as_deref().is_some_and(|x| x != "none")),
        (
            "weight_quant",
            spec.weight_quant.is_some()
                || m.weight_dtype
                    .is_some_and(|w| w.size() < spec.storage.size()),
        ),
        (
            "block_quant",
            spec.storage_quant.is_some()
                || spec.weight_quant.is_some()
                || spec.block_scale.is_some(),
        ),
        ("unknown_work", spec.work_unknown.is_some()),
        ("gemv", gemv_split.is_some()),
        (
            "gguf",
            [&spec.storage_quant, &spec.weight_quant]
                .into_iter()
                .flatten()
                .any(is_gguf),
        ),
    ] {
        f.flags.insert(k.into(), v);
    }
    for (k, v) in [
        ("kind", &m.kind),
        ("reduce", &m.reduce),
        ("granularity", &m.granularity),
        ("format", &m.format),
        ("layout", &m.layout),
        ("mask", &m.mask),
        ("epilogue", &m.epilogue),
    ] {
        if let Some(v) = v {
            f.texts.insert(k.into(), v.clone());
        }
    }
    f.texts
        .insert("storage".into(), spec.storage.as_str().into());
    f.texts.insert("output".into(), spec.output.as_str().into());
    if let Some(w) = m.weight_dtype {
        f.texts.insert("weight".into(), w.as_str().into());
    }
    if let Some(l) = spec.latency_us {
        f.nums.insert("latency_us".into(), l);
    }
    f
}

/// A GGUF (llama.cpp/ggml) block format: the 32-value `q4_0` .. `q8_0` blocks or a k-quant.
fn is_gguf(q: &crate::spec::QuantFormat) -> bool {
    let n = q.name.trim().to_ascii_lowercase().replace('-', "_");
    q.is_gguf_k_quant() || matches!(n.as_str(), "q4_0" | "q4_1" | "q5_0" | "q5_1" | "q8_0")
}

/// Elements of the largest tensor the op touches (from the problem's dims), for the 32-bit
/// index check.
pub(crate) fn largest_tensor(spec: &Spec) -> f64 {
    use crate::spec::Problem;
    let d = |k: &str| spec.dim(k).unwrap_or(0) as f64;
    let shape = match &spec.problem {
        Problem::Flat { n } => *n as f64,
        Problem::Rows { rows, cols } => *rows as f64 * *cols as f64,
        Problem::Gemm { batch, m, n, k } => {
            let (b, m, n, k) = (*batch as f64, *m as f64, *n as f64, *k as f64);
            (b * m * k).max(b * k * n).max(b * m * n)
        }
        Problem::Attention {
            batch,
            heads,
            kv_heads,
            seq_q,
            seq_kv,
            head_dim,
            ..
        } => {
            let q = *batch as f64 * *heads as f64 * *seq_q as f64 * *head_dim as f64;
            let kv = *batch as f64 * *kv_heads as f64 * *seq_kv as f64 * *head_dim as f64;
            q.max(kv)
        }
        // No work model: any one size the spec gives counts (`items = 1e10` items are
        // indexed like a tensor of that length).
        Problem::Custom { .. } => spec.dims.values().copied().max().unwrap_or(0) as f64,
    };
    // Tables and sparse arrays beyond the launch shape.
    shape
        .max(d("vocab") * d("dim"))
        .max(d("rows") * d("dim"))
        .max(d("nnz"))
        .max(d("n") * spec.dim("dim").unwrap_or(1) as f64)
        .max(d("num_pages") * d("page_size") * d("kv_heads") * d("head_dim"))
        // MoE permute / unpermute: one hidden row per (token, expert) assignment
        .max(if matches!(spec.kind(), Some("permute" | "unpermute")) {
            d("tokens") * d("top_k") * d("hidden")
        } else {
            0.0
        })
}
