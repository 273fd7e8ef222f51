//! Work and traffic of the operation: FLOPs, minimum DRAM bytes, arithmetic intensity, and the
//! roofline arithmetic used by the plan. Pure functions, unit-tested below.

use crate::spec::{Op, Problem, Spec};
use serde::Serialize;

/// FLOPs and minimum DRAM traffic for one call, with the formula used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Work {
    pub flops: f64,
    pub bytes: f64,
    /// FLOPs per byte; `None` when bytes is zero.
    pub intensity: Option<f64>,
    pub flops_formula: String,
    pub bytes_formula: String,
    /// Why the work is unknown (no work model for the op, an incomplete problem): then `flops`
    /// and `bytes` are 0 and no roofline is computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

/// Default FLOPs per element for the memory-bound classes (counted as in the docs: one
/// operation per add/mul/max/exp/rsqrt).
pub fn default_flops_per_element(op: Op) -> f64 {
    match op {
        Op::Elementwise => 1.0,
        Op::Reduction => 1.0,
        Op::Scan => 1.0,
        // max, subtract, exp, sum, divide
        Op::Softmax => 5.0,
        // square, accumulate, scale by rsqrt, multiply by weight
        Op::Norm => 4.0,
        _ => 0.0,
    }
}

/// Work of the spec's operation. Bytes are the minimum traffic: every input read once, every
/// output written once, in the storage dtype (outputs in the output dtype, the third entry of
/// `dtypes`, when the spec gives one).
pub fn work(spec: &Spec) -> Work {
    if let Some(why) = &spec.work_unknown {
        return Work {
            flops: 0.0,
            bytes: 0.0,
            intensity: None,
            flops_formula: "unknown".into(),
            bytes_formula: "unknown".into(),
            unknown: Some(why.clone()),
        };
    }
    if let Some((flops, bytes, ff, bf)) = op_work(spec) {
        return Work {
            flops,
            bytes,
            intensity: (bytes > 0.0).then(|| flops / bytes),
            flops_formula: ff,
            bytes_formula: bf,
            unknown: None,
        };
    }
    let s = spec.storage_size();
    let fpe = spec
        .knobs
        .flops_per_element
        .unwrap_or_else(|| default_flops_per_element(spec.op));
    let (flops, bytes, ff, bf) = match (&spec.problem, spec.op) {
        (Problem::Flat { n }, Op::Elementwise) => {
            let n = *n as f64;
            let io = (spec.knobs.inputs + spec.knobs.outputs) as f64;
            (
                fpe * n,
                io * n * s,
                format!("{fpe} x n ({n})"),
                format!(
                    "(inputs {} + outputs {}) x n x {s} B",
                    spec.knobs.inputs, spec.knobs.outputs
                ),
            )
        }
        (Problem::Flat { n }, Op::Scan) => {
            let n = *n as f64;
            (
                fpe * n,
                2.0 * n * s,
                format!("{fpe} x n"),
                format!("read n + write n, x {s} B"),
            )
        }
        (Problem::Flat { n }, _) => {
            let n = *n as f64;
            (
                fpe * n,
                (n + 1.0) * s,
                format!("{fpe} x n"),
                format!("read n + write 1, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, Op::Reduction) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                (r * c + r) * s,
                format!("{fpe} x rows x cols"),
                format!("read rows x cols + write rows, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, Op::Norm) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                (2.0 * r * c + c) * s,
                format!("{fpe} x rows x cols"),
                format!("(read + write rows x cols) + weight cols, x {s} B"),
            )
        }
        (Problem::Rows { rows, cols }, _) => {
            let (r, c) = (*rows as f64, *cols as f64);
            (
                fpe * r * c,
                2.0 * r * c * s,
                format!("{fpe} x rows x cols"),
                format!("read + write rows x cols, x {s} B"),
            )
        }
        (Problem::Gemm { batch, m, n, k }, _) => {
            let (b, m, n, k) = (*batch as f64, *m as f64, *n as f64, *k as f64);
            match spec.weight_size().filter(|w| *w != s) {
                // Weight-only quantisation: B (k x n) in the weight dtype, scales included.
                Some(w) => (
                    2.0 * b * m * n * k,
                    b * ((m * k + m * n) * s + k * n * w),
                    "2 x batch x m x n x k".to_string(),
                    format!(
                        "batch x ((m x k + m x n) x {s} B + weights k x n x {} B{})",
                        tidy(w),
                        if spec.weight_quant.is_some() {
                            ", block scales included"
                        } else {
                            ""
                        }
                    ),
                ),
                None => (
                    2.0 * b * m * n * k,
                    b * (m * k + k * n + m * n) * s,
                    "2 x batch x m x n x k".to_string(),
                    format!("batch x (m x k + k x n + m x n) x {s} B"),
                ),
            }
        }
        (
            Problem::Attention {
                batch,
                heads,
                kv_heads,
                seq_q,
                seq_kv,
                head_dim,
                causal,
            },
            _,
        ) => {
            let (b, h, hk, sq, sk, d) = (
                *batch as f64,
                *heads as f64,
                *kv_heads as f64,
                *seq_q as f64,
                *seq_kv as f64,
                *head_dim as f64,
            );
            let full = 4.0 * b * h * sq * sk * d;
            let flops = if *causal { full / 2.0 } else { full };
            (
                flops,
                (b * h * sq * d * 2.0 + b * hk * sk * d * 2.0) * s,
                format!("4 x batch x heads x seq_q x seq_kv x head_dim{}", if *causal { " / 2 (causal)" } else { "" }),
                format!("(Q + O: batch x heads x seq_q x head_dim x 2) + (K + V: batch x kv_heads x seq_kv x head_dim x 2), x {s} B"),
            )
        }
        (Problem::Custom { flops, bytes }, _) => (
            flops.unwrap_or(0.0),
            bytes.unwrap_or(0.0),
            if flops.is_some() {
                "given by the spec".into()
            } else {
                "unknown (not given; the roofline counts the bytes only)".into()
            },
            spec.notes
                .iter()
                .find(|n| n.message.starts_with("bytes of op"))
                .map(|n| n.message.clone())
                .unwrap_or_else(|| "given by the spec".into()),
        ),
    };
    // Outputs written in a dtype other than the storage dtype (the spec's third dtype).
    let o = spec.output_size();
    let (bytes, bf) = match output_elements(spec) {
        Some((elems, what)) if o != s => (
            bytes + elems * (o - s),
            format!(
                "{bf}, but the output ({what}) in {} at {o} B",
                spec.output.as_str()
            ),
        ),
        _ => (bytes, bf),
    };
    Work {
        flops,
        bytes,
        intensity: if bytes > 0.0 {
            Some(flops / bytes)
        } else {
            None
        },
        flops_formula: ff,
        bytes_formula: bf,
        unknown: None,
    }
}

/// The work model of the ops beyond the first classes, and of every backward pass, and of
/// attention with paging, a separate KV or V dtype/width, or variable lengths. `None`: the
/// forward model of the first classes below applies (kept as it was, formulas included).
fn op_work(spec: &Spec) -> Option<(f64, f64, String, String)> {
    use crate::spec::Direction::Backward;
    let s = spec.storage_size();
    let c = spec.compute.size();
    let o = spec.output_size();
    let d = |k: &str| spec.dim(k).unwrap_or(0) as f64;
    let dor = |k: &str, v: f64| spec.dim(k).map(|x| x as f64).unwrap_or(v);
    let idx = if spec.output.is_integer() { o } else { 4.0 };
    let bwd = spec.direction == Backward;
    let fpe = spec.knobs.flops_per_element;
    let (rows, cols) = match spec.problem {
        Problem::Rows { rows, cols } => (rows as f64, cols as f64),
        Problem::Flat { n } => (1.0, n as f64),
        _ => (0.0, 0.0),
    };
    let elems = rows * cols;
    Some(match spec.op {
        Op::Topk => {
            let k = d("k");
            (
                fpe.unwrap_or(1.0) * elems,
                elems * s + rows * k * (s + idx),
                format!("{} x rows x cols (one compare per element)", fpe.unwrap_or(1.0)),
                format!("read rows x cols x {s} B + write rows x k values ({s} B) and indices ({idx} B)"),
            )
        }
        Op::Histogram => (
            fpe.unwrap_or(1.0) * d("n"),
            d("n") * s + d("bins") * o,
            "n (one bin update per element)".into(),
            format!("read n x {s} B + write bins x {o} B"),
        ),
        Op::Spmv => (
            2.0 * d("nnz"),
            d("nnz") * (s + 4.0) + (d("rows") + 1.0) * 4.0 + d("cols") * s + d("rows") * o,
            "2 x nnz".into(),
            format!("CSR values + column indices nnz x ({s} + 4) B + row pointers (rows + 1) x 4 B + x read once cols x {s} B + y rows x {o} B (x reuse from cache is the ideal case)"),
        ),
        Op::Spmm => (
            2.0 * d("nnz") * d("n"),
            d("nnz") * (s + 4.0) + (d("m") + 1.0) * 4.0 + d("k") * d("n") * s + d("m") * d("n") * o,
            "2 x nnz x n".into(),
            format!("CSR nnz x ({s} + 4) B + row pointers + dense B k x n x {s} B (read once) + C m x n x {o} B"),
        ),
        Op::Stencil => {
            let cells = d("nx") * dor("ny", 1.0) * dor("nz", 1.0);
            let steps = dor("steps", 1.0);
            (
                fpe.unwrap_or(2.0 * d("points")) * cells * steps,
                2.0 * cells * s * steps,
                format!("2 x points ({}) x cells x steps ({steps})", d("points")),
                format!("read + write the grid once per step: 2 x cells x {s} B x steps (temporal blocking divides this by the steps fused)"),
            )
        }
        Op::Conv => {
            let (b, so, si) = (dor("batch", 1.0), d("spatial_out"), d("spatial_in"));
            let (ci, co, taps, g) = (d("cin"), d("cout"), d("taps"), dor("groups", 1.0));
            let f = 2.0 * b * so * co * (ci / g) * taps;
            let inb = b * si * ci * s;
            let wb = co * (ci / g) * taps * s;
            let outb = b * so * co * o;
            let one_gradient = spec.modifiers.gradient.as_deref();
            if bwd && one_gradient.is_some() {
                let data = one_gradient == Some("data");
                (
                    f,
                    inb + wb + outb,
                    format!("the {} gradient only: as many FLOPs as the forward, 2 x batch x out positions x out_channels x in_channels/groups x taps", if data { "data" } else { "weight" }),
                    if data {
                        format!("read dy and the weights, write dx (storage {s} B)")
                    } else {
                        format!("read the input and dy, write dweights (storage {s} B)")
                    },
                )
            } else if bwd {
                (
                    2.0 * f,
                    inb + wb + outb + inb + wb,
                    "2 x forward (data gradient + weight gradient), forward = 2 x batch x out positions x out_channels x in_channels/groups x taps".into(),
                    format!("read input, weights and dy, write dx and dweights (storage {s} B)"),
                )
            } else {
                (
                    f,
                    inb + wb + outb,
                    "2 x batch x out positions x out_channels x in_channels/groups x taps".into(),
                    format!("input batch x positions x in_channels x {s} B + weights x {s} B + output batch x out positions x out_channels x {o} B"),
                )
            }
        }
        Op::GroupedGemm => {
            let (g, m, n, k) = (d("groups"), d("total_m"), d("n"), d("k"));
            let w = spec.weight_size().unwrap_or(s);
            let f = 2.0 * m * n * k;
            if bwd {
                (
                    2.0 * f,
                    2.0 * m * k * s + 2.0 * g * k * n * w + m * n * s,
                    "2 x forward (dA and dB), forward = 2 x total_m x n x k".into(),
                    format!("read A, B and dC, write dA and dB (storage {s} B, weights {w} B)"),
                )
            } else {
                (
                    f,
                    m * k * s + g * k * n * w + m * n * o,
                    "2 x total_m x n x k".into(),
                    format!("A total_m x k x {s} B + one B per group: groups x k x n x {w} B + C total_m x n x {o} B"),
                )
            }
        }
        Op::Moe => {
            let (t, e, k) = (d("tokens"), d("experts"), d("top_k"));
            let align = spec.kind() == Some("align")
                || (spec.kind().is_none() && spec.storage.is_integer());
            let h = d("hidden");
            if spec.kind() == Some("permute") {
                (
                    0.0,
                    t * h * s + t * k * h * s + 2.0 * t * k * 4.0,
                    "0 (data movement only)".into(),
                    format!("read tokens x hidden x {s} B + write tokens x top_k x hidden x {s} B (one row per assignment) + read the expert ids and write the row map (tokens x top_k x 4 B each)"),
                )
            } else if spec.kind() == Some("unpermute") {
                (
                    2.0 * t * k * h,
                    t * k * h * s + t * k * (4.0 + o.max(4.0)) + t * h * o,
                    "2 x tokens x top_k x hidden (weighted sum of each token's expert outputs)".into(),
                    format!("read tokens x top_k x hidden x {s} B + the row map and routing weights + write tokens x hidden x {o} B"),
                )
            } else if align {
                let bs = dor("block_size", 1.0);
                (
                    t * k,
                    t * k * s + (t * k + e * (bs - 1.0)) * 4.0 + e * 4.0,
                    "tokens x top_k (one count and one placement per assignment)".into(),
                    format!("read tokens x top_k expert ids x {s} B + write the block-padded sorted token ids (tokens x top_k + experts x (block_size - 1)) x 4 B + expert offsets"),
                )
            } else {
                (
                    fpe.unwrap_or(4.0) * t * e,
                    t * e * s + t * k * (4.0 + o.max(4.0)),
                    format!("{} x tokens x experts (score, normalise, compare)", fpe.unwrap_or(4.0)),
                    format!("read tokens x experts logits x {s} B + write tokens x top_k ids (4 B) and weights"),
                )
            }
        }
        Op::Embedding | Op::Gather => {
            let (n, dim) = if spec.op == Op::Embedding {
                (d("tokens"), d("dim"))
            } else {
                (d("indices"), dor("dim", 1.0))
            };
            if bwd {
                (
                    n * dim,
                    n * 4.0 + n * dim * s + 2.0 * n * dim * c,
                    "tokens x dim adds into the gradient table".into(),
                    format!("read ids (4 B) and dy tokens x dim x {s} B + read-modify-write of the touched gradient rows tokens x dim x 2 x {c} B"),
                )
            } else {
                (
                    0.0,
                    n * 4.0 + n * dim * s + n * dim * o,
                    "0 (data movement only)".into(),
                    format!("read indices x 4 B + gather indices x dim x {s} B + write indices x dim x {o} B"),
                )
            }
        }
        Op::Scatter => {
            let (r, l) = (d("rows_moved"), d("row_len"));
            let rmw = spec.modifiers.reduce.is_some();
            let t = dor("tensors", 1.0);
            (
                if rmw { r * l * t } else { 0.0 },
                t * (r * l * s + r * l * o * if rmw { 2.0 } else { 1.0 }) + r * 4.0,
                if rmw { "rows x dim combines".into() } else { "0 (data movement only)".into() },
                format!(
                    "read rows x dim x {s} B + indices 4 B/row + write{} rows x dim x {o} B{}",
                    if rmw { " (read-modify-write)" } else { "" },
                    if t > 1.0 { format!(", x {t} tensors") } else { String::new() }
                ),
            )
        }
        Op::Quantize | Op::Dequantize => {
            let n = elems;
            // A block-quantized input: its values at their own width, its scales counted below.
            let q = spec
                .storage_quant
                .as_ref()
                .filter(|_| spec.op == Op::Dequantize);
            let s = q.map(|q| q.value_bits / 8.0).unwrap_or(s);
            let block = spec
                .dim("block")
                .or(spec.dim("group_size"))
                .or(q.map(|q| q.block))
                .or(spec.block_scale.map(|b| b.block()));
            let per_row = matches!(
                spec.modifiers.granularity.as_deref(),
                Some("per-token" | "per-row" | "per-channel")
            );
            let (scales, what) = match (block, per_row) {
                (Some(b), _) => (n / b as f64, format!("one scale per {b} values")),
                (None, true) => (rows, "one scale per row".to_string()),
                (None, false) => (1.0, "one scale per tensor".to_string()),
            };
            let scale_b = match spec.block_scale {
                _ if q.is_some() => q.map(|q| q.scale_bytes_per_block).unwrap_or(2.0),
                Some(_) => 1.0,
                None if spec.op == Op::Dequantize => 2.0,
                None => 4.0,
            };
            if spec.op == Op::Quantize {
                (
                    fpe.unwrap_or(3.0) * n,
                    n * s + n * o + scales * scale_b,
                    format!("{} x elements (absmax, scale, convert)", fpe.unwrap_or(3.0)),
                    format!("read elements x {s} B + write elements x {o} B + scales ({what}, {scale_b} B each)"),
                )
            } else {
                (
                    fpe.unwrap_or(2.0) * n,
                    n * s + scales * scale_b + n * o,
                    format!("{} x elements (scale and offset)", fpe.unwrap_or(2.0)),
                    format!("read elements x {s} B + scales ({what}, {scale_b} B each) + write elements x {o} B"),
                )
            }
        }
        Op::Sort => {
            let v = if spec.modifiers.values { c } else { 0.0 };
            match spec.problem {
                Problem::Flat { n } => {
                    let n = n as f64;
                    let bits = dor("key_bits", spec.storage.bits() as f64);
                    let passes = (bits / 8.0).ceil().max(1.0);
                    (
                        n * passes,
                        passes * 2.0 * n * (s + v),
                        format!("n x passes ({passes}: {bits}-bit keys, 8-bit digits)"),
                        format!("per radix pass read + write keys{}: passes x 2 x n x ({s}{} B)", if v > 0.0 { " and values" } else { "" }, if v > 0.0 { format!(" + {v}") } else { String::new() }),
                    )
                }
                _ => (
                    elems * cols.log2().max(1.0),
                    elems * s + elems * o,
                    "segments x len x log2(len) compares (in-shared-memory sort per segment)".into(),
                    format!("read segments x len x {s} B + write segments x len x {o} B"),
                ),
            }
        }
        Op::Attention => {
            let Problem::Attention { batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal } = spec.problem else {
                return None;
            };
            let plain = !bwd
                && spec.modifiers.kv_dtype.is_none()
                && spec.dim("head_dim_v").is_none()
                && spec.dim("page_size").is_none()
                && spec.dim("total_tokens").is_none();
            if plain {
                return None;
            }
            let (b, h, hk, d_qk) = (batch as f64, heads as f64, kv_heads as f64, head_dim as f64);
            let d_v = dor("head_dim_v", d_qk);
            let (sq, sk, bb) = match spec.dim("total_tokens") {
                // Variable lengths: the mean sequence is total_tokens / batch.
                Some(t) => (t as f64 / b, t as f64 / b, b),
                None => (seq_q as f64, seq_kv as f64, b),
            };
            let kvs = spec.modifiers.kv_dtype.map(|x| x.size()).unwrap_or(s);
            let full = 2.0 * bb * h * sq * sk * (d_qk + d_v);
            let f = if causal { full / 2.0 } else { full };
            let pages = spec
                .dim("page_size")
                .map(|p| bb * (sk / p as f64).ceil() * 4.0)
                .unwrap_or(0.0);
            let ff = format!(
                "2 x batch x heads x seq_q x seq_kv x (head_dim + head_dim_v){}{}",
                if causal { " / 2 (causal)" } else { "" },
                if spec.dim("total_tokens").is_some() { ", seq = total_tokens / batch (varlen)" } else { "" }
            );
            if bwd {
                (
                    2.5 * f,
                    bb * h * sq * (2.0 * d_qk + 2.0 * d_v) * s
                        + bb * hk * sk * (2.0 * d_qk + 2.0 * d_v) * s
                        + bb * h * sq * 4.0,
                    format!("2.5 x forward (five matmuls, S/P recomputed), forward = {ff}"),
                    format!("read Q, O, dO, K, V and the row log-sum-exp, write dQ, dK, dV (x {s} B)"),
                )
            } else if hk == 1.0 && d_v < d_qk {
                // one latent cache row per token whose first head_dim_v columns are V (MLA):
                // K and V are the same bytes, read once
                (
                    f,
                    bb * h * sq * (d_qk + d_v) * s + bb * hk * sk * d_qk * kvs + pages,
                    ff,
                    format!(
                        "(Q + O: batch x heads x seq_q x (head_dim + head_dim_v)) x {s} B + (shared K/V latent cache, V its first head_dim_v columns: batch x seq_kv x head_dim) x {kvs} B{}",
                        if pages > 0.0 { " + page table batch x ceil(seq_kv / page_size) x 4 B" } else { "" }
                    ),
                )
            } else {
                (
                    f,
                    bb * h * sq * (d_qk + d_v) * s + bb * hk * sk * (d_qk + d_v) * kvs + pages,
                    ff,
                    format!(
                        "(Q + O: batch x heads x seq_q x (head_dim + head_dim_v)) x {s} B + (K + V: batch x kv_heads x seq_kv x (head_dim + head_dim_v)) x {kvs} B{}",
                        if pages > 0.0 { " + page table batch x ceil(seq_kv / page_size) x 4 B" } else { "" }
                    ),
                )
            }
        }
        Op::LinearAttention => {
            let Problem::Gemm { batch, m: l, n: p, k: n } = spec.problem else { return None };
            let (bhc, l, p, n) = (batch as f64, l as f64, p as f64, n as f64);
            let (t, h, g) = (d("tokens"), d("heads"), dor("groups", d("heads")));
            // Per (sequence, head, chunk): Q K^T (L x L x N), the masked product with V
            // (L x L x P), the state's contribution C S (L x N x P) and the state update
            // B^T X (N x L x P).
            let fwd = bhc * 2.0 * (l * l * n + l * l * p + 2.0 * l * n * p);
            let ff = format!(
                "(batch x heads x chunks) x 2 x (chunk^2 x d_state + chunk^2 x head_dim + 2 x chunk x d_state x head_dim), chunk = {l}"
            );
            let qk = if g < h { "groups" } else { "heads" };
            if bwd {
                (
                    2.5 * fwd,
                    t * (4.0 * g * n + 3.0 * h * p) * s + t * h * 8.0,
                    format!("2.5 x forward (dq, dk, dv and the state gradients; chunk states recomputed), forward = {ff}"),
                    format!("read q, k (tokens x {qk} x d_state each), v and dO (tokens x heads x head_dim each), write dq, dk, dv, x {s} B; gates read and written, 4 B per token and head"),
                )
            } else {
                (
                    fwd,
                    t * (2.0 * g * n + h * p) * s + t * h * p * o + t * h * 4.0,
                    ff,
                    format!("read q/C and k/B (tokens x {qk} x d_state each) and v/x (tokens x heads x head_dim) x {s} B + write the output tokens x heads x head_dim x {o} B + one fp32 gate per token and head (the inter-chunk state stays on chip)"),
                )
            }
        }
        Op::Sampling => {
            let f = fpe.unwrap_or(5.0);
            (
                f * elems,
                elems * s + rows * idx,
                format!("{f} x batch x vocab (max, exp, sum, scale, compare per logit)"),
                format!("read the logits batch x vocab x {s} B once + write one token id per row ({idx} B)"),
            )
        }
        Op::CrossEntropy => match spec.problem {
            Problem::Gemm { m: t, n: v, k: hd, .. } => {
                let (t, v, hd) = (t as f64, v as f64, hd as f64);
                if bwd {
                    (
                        3.0 * 2.0 * t * v * hd + 5.0 * t * v,
                        2.0 * (t * hd + v * hd) * s + t * 4.0,
                        "3 x 2 x tokens x vocab x hidden (logits recomputed, dX, dW) + 5 x tokens x vocab".into(),
                        format!("read hidden tokens x hidden and weight vocab x hidden, write their gradients, x {s} B + labels tokens x 4 B (logits never written)"),
                    )
                } else {
                    (
                        2.0 * t * v * hd + 5.0 * t * v,
                        (t * hd + v * hd) * s + t * 4.0 + t * o,
                        "2 x tokens x vocab x hidden (LM-head matmul) + 5 x tokens x vocab (log-sum-exp)".into(),
                        format!("read hidden tokens x hidden and weight vocab x hidden x {s} B + labels tokens x 4 B + write the loss tokens x {o} B (logits never written)"),
                    )
                }
            }
            _ => {
                let f = fpe.unwrap_or(5.0);
                if bwd {
                    (
                        f * elems,
                        elems * (s + o) + rows * 4.0,
                        format!("{f} x tokens x vocab"),
                        format!("read the logits tokens x vocab x {s} B and the labels, write dlogits tokens x vocab x {o} B"),
                    )
                } else {
                    (
                        f * elems,
                        elems * s + rows * 4.0 + rows * o,
                        format!("{f} x tokens x vocab (max, exp, sum, log, pick)"),
                        format!("read the logits tokens x vocab x {s} B + labels tokens x 4 B + write the loss tokens x {o} B"),
                    )
                }
            }
        },
        Op::Spgemm => {
            let (m, inner, nc) = (rows, d("inner"), d("out_cols"));
            let (na, nb) = (d("nnz_a"), d("nnz_b"));
            let (prod, prod_given) = match spec.dim("products") {
                Some(p) => (p as f64, true),
                None => (na * nb / inner.max(1.0), false),
            };
            let (nnzc, c_given) = match spec.dim("nnz_c") {
                Some(c) => (c as f64, true),
                None => (prod.min(m * nc), false),
            };
            (
                2.0 * prod,
                na * (s + 4.0) + nb * (s + 4.0) + nnzc * (o + 4.0) + (2.0 * m + inner + 3.0) * 4.0,
                format!(
                    "2 x intermediate products ({}{})",
                    tidy(prod),
                    if prod_given { ", given" } else { ": nnz_a x nnz_b / cols, rows of B of equal length assumed; give `products` for the real count" }
                ),
                format!(
                    "A and B in CSR (nnz x ({s} + 4) B + row pointers) + C nnz_c ({}{}) x ({o} + 4) B + its row pointers",
                    tidy(nnzc),
                    if c_given { ", given" } else { ": bounded by the products and rows x n; give `nnz_c` where known" }
                ),
            )
        }
        _ if !bwd => return None,
        Op::Norm => {
            let layer = spec.kind() == Some("layernorm");
            let (r, cc) = (rows, cols);
            (
                fpe.unwrap_or(if layer { 9.0 } else { 6.0 }) * r * cc,
                2.0 * r * cc * s + cc * s + r * 4.0 * if layer { 2.0 } else { 1.0 } + r * cc * o + cc * o * if layer { 2.0 } else { 1.0 },
                format!("{} x rows x cols", fpe.unwrap_or(if layer { 9.0 } else { 6.0 })),
                format!(
                    "read x and dy (rows x cols x {s} B each), gamma, saved {} per row; write dx (rows x cols x {o} B) and {} (cols x {o} B)",
                    if layer { "mean and rstd" } else { "rstd" },
                    if layer { "dgamma and dbeta" } else { "dgamma" }
                ),
            )
        }
        Op::Softmax => (
            fpe.unwrap_or(4.0) * elems,
            2.0 * elems * s + elems * o,
            format!("{} x rows x cols", fpe.unwrap_or(4.0)),
            format!("read y and dy, write dx: rows x cols x ({s} + {s} + {o}) B"),
        ),
        Op::Elementwise => {
            let n = elems;
            let (i, out) = (spec.knobs.inputs as f64, spec.knobs.outputs as f64);
            (
                2.0 * fpe.unwrap_or(1.0) * n,
                (i + out) * n * s + i * n * o,
                format!("2 x {} x n (recompute and chain rule)", fpe.unwrap_or(1.0)),
                format!("read inputs {i} + dy {out}, write d-inputs {i}: n x {s} B"),
            )
        }
        Op::Gemm => {
            let Problem::Gemm { batch, m, n, k } = spec.problem else { return None };
            let (b, m, n, k) = (batch as f64, m as f64, n as f64, k as f64);
            (
                4.0 * b * m * n * k,
                b * (2.0 * m * k + 2.0 * k * n + m * n) * s,
                "2 x forward (dA = dC B^T, dB = A^T dC), forward = 2 x batch x m x n x k".into(),
                format!("read A, B, dC and write dA, dB: batch x (2 m k + 2 k n + m n) x {s} B"),
            )
        }
        Op::Scan => (
            fpe.unwrap_or(1.0) * elems,
            elems * s + elems * o,
            format!("{} x n (a reverse scan)", fpe.unwrap_or(1.0)),
            format!("read dy n x {s} B + write dx n x {o} B"),
        ),
        Op::Reduction => (
            elems,
            rows * s + elems * o,
            "n (broadcast of the output gradient)".into(),
            format!("read dy (one per output) x {s} B + write dx n x {o} B"),
        ),
        _ => return None,
    })
}

/// Elements the operation writes, and how the bytes formula names them; `None` for a custom op
/// (its bytes are given).
fn output_elements(spec: &Spec) -> Option<(f64, &'static str)> {
    Some(match (&spec.problem, spec.op) {
        (Problem::Flat { n }, Op::Elementwise) => {
            (spec.knobs.outputs as f64 * *n as f64, "outputs x n")
        }
        (Problem::Flat { n }, Op::Scan) => (*n as f64, "n"),
        (Problem::Flat { .. }, _) => (1.0, "1"),
        (Problem::Rows { rows, .. }, Op::Reduction) => (*rows as f64, "rows"),
        (Problem::Rows { rows, cols }, _) => (*rows as f64 * *cols as f64, "rows x cols"),
        (Problem::Gemm { batch, m, n, .. }, _) => {
            (*batch as f64 * *m as f64 * *n as f64, "batch x m x n")
        }
        (
            Problem::Attention {
                batch,
                heads,
                seq_q,
                head_dim,
                ..
            },
            _,
        ) => (
            *batch as f64 * *heads as f64 * *seq_q as f64 * *head_dim as f64,
            "O: batch x heads x seq_q x head_dim",
        ),
        (Problem::Custom { .. }, _) => return None,
    })
}

/// Rounds a derived value to 4 significant digits (at least 3 decimals below 1) so that JSON
/// shows `2915` rather than `2915.0000000000005`.
pub fn tidy(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let digits = 4 - 1 - x.abs().log10().floor() as i32;
    let digits = digits.clamp(0, 12);
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Ridge point (FLOP/byte) of a machine: peak TFLOP/s over bandwidth GB/s.
pub fn ridge_point(peak_tflops: f64, bandwidth_gbs: f64) -> Option<f64> {
    (bandwidth_gbs > 0.0).then(|| peak_tflops * 1e12 / (bandwidth_gbs * 1e9))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

/// Roofline for one target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    pub bound: Bound,
    /// Attainable FLOP rate, TFLOP/s: min(peak, intensity x bandwidth).
    pub attainable_tflops: f64,
    /// The roofline in the plan's unit: GB/s when memory-bound, TFLOP/s when compute-bound.
    pub value: f64,
    /// Lower bound on run time, microseconds: max(flops / peak, bytes / bandwidth).
    pub time_us: f64,
}

/// min(peak, intensity x bandwidth). Memory-bound when intensity is below the ridge point.
pub fn roofline(w: &Work, peak_tflops: f64, bandwidth_gbs: f64) -> Option<Roofline> {
    if !(peak_tflops > 0.0 && bandwidth_gbs > 0.0) {
        return None;
    }
    let intensity = w.intensity.unwrap_or(f64::INFINITY);
    let mem_tflops = intensity * bandwidth_gbs * 1e9 / 1e12;
    let t_compute = w.flops / (peak_tflops * 1e12);
    let t_mem = w.bytes / (bandwidth_gbs * 1e9);
    if mem_tflops < peak_tflops {
        Some(Roofline {
            bound: Bound::Memory,
            attainable_tflops: mem_tflops,
            value: bandwidth_gbs,
            time_us: t_mem.max(t_compute) * 1e6,
        })
    } else {
        Some(Roofline {
            bound: Bound::Compute,
            attainable_tflops: peak_tflops,
            value: peak_tflops,
            time_us: t_mem.max(t_compute) * 1e6,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(flops: f64, bytes: f64) -> Work {
        Work {
            flops,
            bytes,
            intensity: Some(flops / bytes),
            flops_formula: String::new(),
            bytes_formula: String::new(),
            unknown: None,
        }
    }

    #[test]
    fn tidy_keeps_four_significant_digits() {
        assert_eq!(tidy(2915.0000000000005), 2915.0);
        assert_eq!(tidy(444.5160000000001), 444.5);
        assert_eq!(tidy(0.0123456), 0.01235);
        assert_eq!(tidy(1979.0), 1979.0);
        assert_eq!(tidy(123456.7), 123457.0);
    }

    #[test]
    fn ridge_point_is_peak_over_bandwidth() {
        // 989 TFLOP/s over 3350 GB/s = 295.2 FLOP/byte
        let r = ridge_point(989.0, 3350.0).unwrap();
        assert!((r - 295.22).abs() < 0.01, "{r}");
        assert_eq!(ridge_point(1.0, 0.0), None);
    }

    #[test]
    fn low_intensity_is_memory_bound_at_bandwidth() {
        // rmsnorm-like: 1 FLOP/byte on a 3350 GB/s, 60 TFLOP/s machine
        let r = roofline(&w(1e9, 1e9), 60.0, 3350.0).unwrap();
        assert_eq!(r.bound, Bound::Memory);
        assert_eq!(r.value, 3350.0);
        assert!((r.attainable_tflops - 3.35).abs() < 1e-9);
        assert!((r.time_us - 1e9 / 3350e9 * 1e6).abs() < 1e-6);
    }

    #[test]
    fn high_intensity_is_compute_bound_at_peak() {
        let r = roofline(
            &w(2.0 * 8192f64.powi(3), 3.0 * 8192f64.powi(2) * 2.0),
            989.0,
            3350.0,
        )
        .unwrap();
        assert_eq!(r.bound, Bound::Compute);
        assert_eq!(r.value, 989.0);
        assert_eq!(r.attainable_tflops, 989.0);
    }

    #[test]
    fn unknown_peak_or_bandwidth_gives_no_roofline() {
        assert!(roofline(&w(1.0, 1.0), 0.0, 100.0).is_none());
        assert!(roofline(&w(1.0, 1.0), 10.0, f64::NAN).is_none());
    }

    #[test]
    fn exactly_at_ridge_counts_as_compute_bound() {
        // intensity 10 FLOP/B x 100 GB/s = 1 TFLOP/s = peak
        let r = roofline(&w(10.0, 1.0), 1.0, 100.0).unwrap();
        assert_eq!(r.bound, Bound::Compute);
    }
}

#[cfg(test)]
mod work_tests {
    use super::*;
    use crate::spec::parse_spec;

    fn spec(op: &str, problem: &str, dtypes: &str) -> Spec {
        let t = format!("[kernel]\nname='x'\nop='{op}'\ndtypes=[{dtypes}]\nproblem={{ {problem} }}\n[backends]\ntargets=['sm_80']\n");
        parse_spec(&t, kplan_kb::Kb::builtin()).unwrap()
    }

    #[test]
    fn gemm_is_2mnk_over_three_matrices() {
        let w = work(&spec("gemm", "m=128, n=256, k=64", "'bf16','fp32'"));
        assert_eq!(w.flops, 2.0 * 128.0 * 256.0 * 64.0);
        assert_eq!(w.bytes, (128.0 * 64.0 + 64.0 * 256.0 + 128.0 * 256.0) * 2.0);
    }

    #[test]
    fn causal_attention_halves_the_flops() {
        let full = work(&spec(
            "attention",
            "batch=2, heads=4, seq=1024, head_dim=64",
            "'fp16'",
        ));
        let causal = work(&spec(
            "attention",
            "batch=2, heads=4, seq=1024, head_dim=64, causal=true",
            "'fp16'",
        ));
        assert_eq!(full.flops, 4.0 * 2.0 * 4.0 * 1024.0 * 1024.0 * 64.0);
        assert_eq!(causal.flops * 2.0, full.flops);
        assert_eq!(full.bytes, causal.bytes);
    }

    #[test]
    fn gqa_reads_fewer_kv_bytes() {
        let mha = work(&spec(
            "attention",
            "batch=1, heads=8, seq=128, head_dim=64",
            "'bf16'",
        ));
        let gqa = work(&spec(
            "attention",
            "batch=1, heads=8, kv_heads=2, seq=128, head_dim=64",
            "'bf16'",
        ));
        assert!(gqa.bytes < mha.bytes);
        assert_eq!(gqa.flops, mha.flops);
    }

    #[test]
    fn norm_reads_writes_and_reads_the_weight() {
        let w = work(&spec("norm", "rows=10, cols=100", "'bf16','fp32'"));
        assert_eq!(w.bytes, (2.0 * 10.0 * 100.0 + 100.0) * 2.0);
        assert_eq!(w.flops, 4.0 * 1000.0);
    }

    #[test]
    fn softmax_and_elementwise_bytes() {
        assert_eq!(
            work(&spec("softmax", "rows=2, cols=8", "'fp32'")).bytes,
            2.0 * 16.0 * 4.0
        );
        let e = work(&spec(
            "elementwise",
            "n=1000, inputs=3, outputs=2",
            "'fp16'",
        ));
        assert_eq!(e.bytes, 5.0 * 1000.0 * 2.0);
    }

    #[test]
    fn custom_takes_flops_and_bytes_as_given() {
        let w = work(&spec("custom", "flops=3e9, bytes=1e9", "'fp64'"));
        assert_eq!((w.flops, w.bytes, w.intensity), (3e9, 1e9, Some(3.0)));
    }
}
