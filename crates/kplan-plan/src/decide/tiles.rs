//! Section 6: tile strategy per target. Block sizes are whole warps of the target, tiles fit its
//! shared/LDS budget, and occupancy is estimated from the KB's per-SM/CU limits. Every shape is a
//! configuration (compile-time parameters plus autotune candidates), never one hard-coded shape.

use super::strategy::Decided;
use super::{kib, Abstraction, Target};
use crate::model::Tile;
use crate::spec::{Op, Problem, Spec};
use kplan_kb::Vendor;
use std::collections::BTreeMap;

fn round_up(x: u64, m: u64) -> u64 {
    x.div_ceil(m.max(1)).saturating_mul(m.max(1))
}

pub fn plan(cx: &super::Context, strategy: &Decided) -> Vec<Tile> {
    let spec = cx.spec;
    // A library or framework call chooses its own tiles: there is no kernel to tile.
    if strategy.gpu_all_library() {
        return Vec::new();
    }
    strategy
        .with_targets(&cx.targets)
        .map(|(t, choice)| {
            let abs = choice.abstraction;
            let mut tile = if t.is_gpu() { gpu_tile(spec, t, abs == Abstraction::Triton) } else { cpu_tile(spec, t) };
            match abs {
                a if a.is_library() => {
                    tile.configuration = format!(
                        "chosen inside the {} at run time; the shape here is the starting point if a custom path is ever needed ({})",
                        if abs == Abstraction::Framework { "framework" } else { "library" },
                        tile.configuration
                    );
                }
                Abstraction::Triton => {
                    tile.configuration = format!(
                        "`triton.autotune` configs: block sizes as tl.constexpr, num_warps{} and num_stages per config{}",
                        if t.warp() == Some(64) { " (counted in 64-lane waves here)" } else { "" },
                        if t.vendor() == Vendor::Amd { ", plus the AMD knobs waves_per_eu and matrix_instr_nonkdim (kpack for matrix ops)" } else { "" }
                    );
                }
                _ => {}
            }
            tile
        })
        .collect()
}

/// One autotune candidate before its budget and occupancy checks.
struct Cand {
    /// Named parameters in kernel terms: BLOCK_M, BLOCK_N, BLOCK_K, STAGES, BLOCK_THREADS, ...
    params: Vec<(&'static str, u64)>,
    block: u64,
    shared: u64,
}

fn next_pow2(x: u64) -> u64 {
    x.max(1).checked_next_power_of_two().unwrap_or(1 << 62)
}

fn prev_pow2(x: u64) -> u64 {
    if x <= 1 {
        1
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// The Triton parameters of a candidate: block sizes, num_warps (warps of the target: 64-lane
/// waves on CDNA), num_stages, and on AMD waves_per_eu and matrix_instr_nonkdim (and kpack for
/// matrix ops).
fn triton_label(t: &Target, c: &Cand, waves_per_eu: Option<u64>, matrix: bool) -> String {
    let warp = t.warp().unwrap_or(32).max(1) as u64;
    let mut v: Vec<String> = c
        .params
        .iter()
        .filter(|(k, _)| !matches!(*k, "STAGES" | "BLOCK_THREADS" | "VEC"))
        .map(|(k, x)| format!("{k}={x}"))
        .collect();
    v.push(format!("num_warps={}", (c.block / warp).max(1)));
    let stages = c
        .params
        .iter()
        .find(|(k, _)| *k == "STAGES")
        .map(|p| p.1)
        .unwrap_or(1);
    v.push(format!("num_stages={stages}"));
    if t.vendor() == Vendor::Amd {
        v.push(format!("waves_per_eu={}", waves_per_eu.unwrap_or(0)));
        if matrix {
            v.push("matrix_instr_nonkdim=16".into());
            v.push("kpack=2".into());
        } else {
            v.push("matrix_instr_nonkdim=0".into());
        }
    }
    v.join(", ")
}

fn kernel_label(c: &Cand) -> String {
    let mut v: Vec<String> = c.params.iter().map(|(k, x)| format!("{k}={x}")).collect();
    if !c.params.iter().any(|(k, _)| *k == "BLOCK_THREADS") {
        v.push(format!("({} threads)", c.block));
    }
    v.join(" ")
}

/// waves_per_eu for an AMD Triton config: the resident waves per SIMD the occupancy estimate
/// allows (0, no hint, when unknown).
fn waves_per_eu(t: &Target, o: Option<&kplan_kb::Occupancy>) -> Option<u64> {
    let simds = t.arch.simds_per_cu.as_ref().and_then(|f| f.value)? as u64;
    let o = o?;
    Some((o.warps_per_sm as u64 / simds.max(1)).max(1))
}

/// Checks every candidate against the budget (with its stages) and the occupancy model; the
/// kept ones, labelled in the target's terms, become the autotune list.
fn check_candidates(
    t: &Target,
    cands: Vec<Cand>,
    regs: u32,
    triton: bool,
    matrix: bool,
) -> Vec<crate::model::TileCandidate> {
    let budget = t.arch.shared_per_block_bytes.value;
    let mut out: Vec<crate::model::TileCandidate> = Vec::new();
    for c in cands {
        let occ = kplan_kb::occupancy(t.arch, c.block as u32, Some(regs), c.shared);
        let config = if triton {
            triton_label(t, &c, waves_per_eu(t, occ.as_ref().ok()), matrix)
        } else {
            kernel_label(&c)
        };
        if out.iter().any(|o| o.config == config) {
            continue;
        }
        let dropped = match (budget, &occ) {
            (Some(b), _) if c.shared > b => Some(format!(
                "needs {} of shared/LDS with its stages, over the {} budget of {}: cannot launch",
                kib(c.shared),
                kib(b),
                t.arch.id
            )),
            (_, Err(e @ kplan_kb::OccupancyError::DoesNotFit { .. })) => Some(e.to_string()),
            _ => None,
        };
        let o = occ.ok();
        out.push(crate::model::TileCandidate {
            config,
            block_threads: c.block as u32,
            shared_bytes: c.shared,
            occupancy: o.as_ref().map(|o| (o.fraction * 1000.0).round() / 1000.0),
            blocks_per_sm: o.as_ref().map(|o| o.blocks_per_sm),
            kept: dropped.is_none(),
            dropped,
        });
    }
    out
}

fn gpu_tile(spec: &Spec, t: &Target, triton: bool) -> Tile {
    let a = t.arch;
    // A user's KB may hold odd limits; keep them consistent so the arithmetic below cannot trap.
    let warp = t.warp().unwrap_or(32).max(1) as u64;
    let max_threads = (a.max_threads_per_block.value.unwrap_or(1024) as u64).max(warp * 2);
    let budget = a.shared_per_block_bytes.value;
    let default_budget = a
        .shared_per_block_default_bytes
        .as_ref()
        .and_then(|f| f.value);
    let s = spec.storage.bytes() as u64;
    let acc = spec.compute.bytes().max(4) as u64;
    // 16-byte vector loads
    let vec = (16 / s).max(1);
    let mut tile = BTreeMap::new();
    let mut sources = vec![
        a.warp_size.source.clone(),
        a.max_threads_per_block.source.clone(),
        a.shared_per_block_bytes.source.clone(),
    ];
    let mut matrix = false;
    let (block, shared, regs, configuration, candidates, why): (
        u64,
        u64,
        u32,
        String,
        Vec<Cand>,
        String,
    ) = match (&spec.problem, spec.op) {
        (Problem::Rows { rows, cols }, _) => {
            let cols = *cols;
            // Short rows: a vector width that keeps every lane of the warp busy (a 256-column
            // row on a 64-lane wave takes 4-element loads, not 8 with half the lanes idle), and
            // several rows per warp when a row is narrower than the warp.
            let short = cols <= warp * vec;
            let vec = if cols >= warp * vec {
                vec
            } else {
                prev_pow2((cols / warp).max(1)).min(vec)
            };
            let lanes_per_row = next_pow2(cols.div_ceil(vec)).min(warp);
            let rows_per_warp = (warp / lanes_per_row.max(1)).max(1);
            let per_thread = vec * 4;
            let want = cols.div_ceil(per_thread);
            // Rows that fit one warp's vector loads (`short`): one warp per row, several rows
            // per block, reductions stay inside the warp (no shared memory).
            let block = if short {
                (4 * warp).min(max_threads / warp * warp)
            } else {
                round_up(want.clamp(warp, max_threads), warp).min(max_threads / warp * warp)
            };
            let row_threads = if short { warp } else { block };
            let iters = cols.div_ceil(row_threads * vec);
            let rows_per_block = if short {
                (block / warp).max(1) * rows_per_warp
            } else {
                1
            };
            let partials = if spec.op == Op::Softmax { 2 } else { 1 };
            let shared_for = |b: u64| {
                if short {
                    0
                } else {
                    (b / warp).max(1) * acc * partials
                }
            };
            let shared = shared_for(block);
            tile.insert("rows_per_block".into(), rows_per_block.min(*rows));
            tile.insert("cols".into(), cols);
            tile.insert("vector_elems".into(), vec);
            tile.insert("col_iterations".into(), iters);
            if rows_per_warp > 1 {
                tile.insert("rows_per_warp".into(), rows_per_warp);
            }
            let regs = if iters <= 4 { 64 } else { 40 };
            let why = format!(
                "{}: {} threads ({} warps of {warp}) with {vec}-element ({} B) loads cover {cols} columns in {iters} pass(es){}",
                if rows_per_warp > 1 {
                    format!("{rows_per_warp} rows per warp ({lanes_per_row} lanes each), {rows_per_block} rows per block")
                } else if rows_per_block > 1 {
                    format!("one row per warp, {rows_per_block} rows per block")
                } else {
                    "one row per block".to_string()
                },
                block,
                block / warp,
                vec * s,
                if iters > 4 { "; rows this long stream through registers (online/two-pass)" } else { "; the row stays in registers" }
            );
            let block_n = next_pow2(cols).min(65536);
            let cands = [warp * 2, warp * 4, 256, 512, 1024]
                .into_iter()
                .filter(|b| *b % warp == 0 && *b <= max_threads && *b >= warp)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|b| Cand {
                    params: if triton {
                        vec![("BLOCK_N", block_n)]
                    } else {
                        vec![("BLOCK_THREADS", b), ("VEC", vec)]
                    },
                    block: b,
                    shared: shared_for(b),
                })
                .collect();
            (
                block,
                shared,
                regs,
                "BLOCK_THREADS, VEC (compile-time); ROWS_PER_BLOCK chosen at launch from cols"
                    .into(),
                cands,
                why,
            )
        }
        (Problem::Gemm { m, n, k, .. }, _) if is_gemv(spec) => {
            gemv_tile(spec, t, *m, *n, *k, &mut tile)
        }
        (Problem::Gemm { m, n, .. }, _) => {
            matrix = true;
            gemm_tile(spec, t, *m, *n, budget, &mut tile, triton)
        }
        (
            Problem::Attention {
                batch,
                heads,
                kv_heads,
                seq_q,
                head_dim,
                seq_kv,
                ..
            },
            _,
        ) if is_decode(*seq_q, *heads, *kv_heads) => {
            matrix = true;
            decode_tile(
                spec,
                t,
                [*batch, *heads, *kv_heads, *seq_q, *seq_kv, *head_dim],
                budget,
                &mut tile,
            )
        }
        (
            Problem::Attention {
                head_dim, seq_kv, ..
            },
            _,
        ) => {
            let d = *head_dim;
            // AMD attention kernels (CK, Triton on ROCm) keep the Q tile in registers and give
            // LDS to K/V; NVIDIA kernels stage Q through shared memory.
            let q_lds = t.vendor() != Vendor::Amd;
            let q_bytes = |bm: u64| if q_lds { bm * d * s } else { 0 };
            // Prefer tiles that leave room for two resident blocks (latency hiding between the
            // two GEMMs and the softmax), else the largest that fits.
            let mut chosen = None;
            for share in [2u64, 1] {
                for bm in [128u64, 64, 32] {
                    for bn in [128u64, 64, 32] {
                        if bn > round_up(*seq_kv, 16).max(32) {
                            continue;
                        }
                        let stages = 2;
                        let shared = q_bytes(bm) + 2 * bn * d * stages * s;
                        if budget.map_or(true, |b| shared * share <= b) {
                            chosen = Some((bm, bn, stages, shared));
                            break;
                        }
                    }
                    if chosen.is_some() {
                        break;
                    }
                }
                if chosen.is_some() {
                    break;
                }
            }
            matrix = true;
            let (bm, bn, stages, shared) =
                chosen.unwrap_or((16, 16, 1, q_bytes(16) + 2 * 16 * d * s));
            tile.insert("block_m".into(), bm);
            tile.insert("block_n".into(), bn);
            tile.insert("head_dim".into(), d);
            tile.insert("stages".into(), stages);
            let block = (4 * warp).min(max_threads);
            let why = format!(
                "prefill: {}, K/V tiles {bn}x{d} double-buffered: ({}2x{bn}x{d}x{stages}) x {s} B = {} of {} budget; {} warps of {warp}",
                if q_lds {
                    format!("Q tile {bm}x{d} stays resident in shared memory")
                } else {
                    format!("Q tile {bm}x{d} stays in registers (LDS holds only K/V)")
                },
                if q_lds { format!("{bm}x{d} + ") } else { String::new() },
                kib(shared),
                budget.map(kib).unwrap_or_else(|| "an unknown".into()),
                block / warp
            );
            (
                block,
                shared,
                128,
                "BLOCK_M, BLOCK_N, STAGES (compile-time template/constexpr); autotuned per target"
                    .into(),
                [(128u64, 128u64), (128, 64), (64, 64), (128, 32), (bm, bn)]
                    .into_iter()
                    .map(|(m_, n_)| Cand {
                        params: vec![
                            ("BLOCK_M", m_),
                            ("BLOCK_N", n_),
                            ("HEAD_DIM", d),
                            ("STAGES", stages),
                        ],
                        block,
                        shared: q_bytes(m_) + 2 * n_ * d * stages * s,
                    })
                    .collect(),
                why,
            )
        }
        _ => {
            // Flat: elementwise, flat reduction/scan, custom.
            let block = round_up(256.min(max_threads), warp).min(max_threads);
            let per_thread = vec * 4;
            let shared = if matches!(spec.op, Op::Reduction | Op::Scan) {
                (block / warp) * acc
            } else {
                0
            };
            tile.insert("elems_per_thread".into(), per_thread);
            tile.insert("elems_per_block".into(), block * per_thread);
            tile.insert("vector_elems".into(), vec);
            let why = format!(
                "{block} threads = {} warps of {warp}; each thread handles {per_thread} elements as {vec}-element (16 B) vectors{}",
                block / warp,
                if shared > 0 { format!("; {} B of shared memory holds one partial per warp", shared) } else { String::new() }
            );
            let reduce = matches!(spec.op, Op::Reduction | Op::Scan);
            let cands = [128u64, 256, 512]
                .into_iter()
                .filter(|b| *b % warp == 0 && *b <= max_threads)
                .map(|b| Cand {
                    params: if triton {
                        vec![("BLOCK_SIZE", b * per_thread)]
                    } else {
                        vec![("BLOCK_THREADS", b), ("ELEMS_PER_THREAD", per_thread)]
                    },
                    block: b,
                    shared: if reduce { (b / warp) * acc } else { 0 },
                })
                .collect();
            (
                block,
                shared,
                32,
                "BLOCK_THREADS, ELEMS_PER_THREAD (compile-time); grid from n at launch".into(),
                cands,
                why,
            )
        }
    };
    let checks = check_candidates(t, candidates, regs, triton, matrix);
    let candidates: Vec<String> = checks
        .iter()
        .filter(|c| c.kept)
        .map(|c| c.config.clone())
        .collect();
    let occ = kplan_kb::occupancy(a, block as u32, Some(regs), shared);
    if triton {
        tile.insert("num_warps".into(), (block / warp).max(1));
        if let Some(st) = tile.get("stages").copied() {
            tile.insert("num_stages".into(), st);
        } else {
            tile.insert("num_stages".into(), 1);
        }
        if t.vendor() == Vendor::Amd {
            tile.insert(
                "waves_per_eu".into(),
                waves_per_eu(t, occ.as_ref().ok()).unwrap_or(0),
            );
            tile.insert("matrix_instr_nonkdim".into(), if matrix { 16 } else { 0 });
        }
    }
    let occ_note = match &occ {
        Ok(o) if !o.unknown_limits.is_empty() => Some(format!(
            "upper bound: {} unknown in the KB",
            o.unknown_limits.join(", ")
        )),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    let occ = occ.ok();
    for f in [&a.max_threads_per_sm, &a.max_blocks_per_sm] {
        sources.push(f.source.clone());
    }
    sources.push(a.registers_per_sm.source.clone());
    sources.push(a.shared_per_sm_bytes.source.clone());
    sources.sort();
    sources.dedup();
    let mut why = why;
    if let (Some(d), Some(_)) = (default_budget, budget) {
        if shared > d {
            why.push_str(&format!(
                "; needs the shared-memory opt-in above {} on {}",
                kib(d),
                a.id
            ));
        }
    }
    Tile {
        target: t.name.clone(),
        block_threads: block as u32,
        tile,
        shared_bytes: shared,
        shared_budget_bytes: budget,
        occupancy: occ.as_ref().map(|o| (o.fraction * 1000.0).round() / 1000.0),
        blocks_per_sm: occ.as_ref().map(|o| o.blocks_per_sm),
        limiter: occ.as_ref().map(|o| o.limiter.to_string()),
        occupancy_unit: occ.as_ref().map(|o| o.unit.to_string()),
        occupancy_note: occ_note,
        registers_assumed: regs,
        configuration,
        candidates,
        candidate_checks: checks,
        why,
        sources,
    }
}

/// A decode-shaped attention: the query rows of one KV head (seq_q x the GQA group) fit one
/// small tile, so the KV sequence, not the queries, is what the grid must spread.
pub(crate) fn is_decode(seq_q: u64, heads: u64, kv_heads: u64) -> bool {
    seq_q.saturating_mul(gqa_group(heads, kv_heads)) <= 64
}

/// Query heads per KV head.
pub(crate) fn gqa_group(heads: u64, kv_heads: u64) -> u64 {
    (heads / kv_heads.max(1)).max(1)
}

/// The split-KV count of FlashAttention-2's dispatch (csrc/flash_attn/flash_api.cpp,
/// `num_splits_heuristic`): none when the (batch, head, query-block) tiles already fill 80% of
/// the block slots; else the fewest splits whose last wave is at least 85% as full as the best
/// split count's (at most min(128, slots, KV tiles) splits).
pub(crate) fn num_splits(items: u64, slots: u64, kv_tiles: u64) -> u64 {
    let slots = slots.max(1);
    if items as f64 >= 0.8 * slots as f64 {
        return 1;
    }
    let max_splits = 128.min(slots).min(kv_tiles.max(1));
    let eligible = |s: u64| s == 1 || kv_tiles.div_ceil(s) != kv_tiles.div_ceil(s - 1);
    let eff = |s: u64| {
        let waves = items.saturating_mul(s) as f64 / slots as f64;
        waves / waves.ceil()
    };
    let best = (1..=max_splits)
        .filter(|s| eligible(*s))
        .map(eff)
        .fold(0.0f64, f64::max);
    (1..=max_splits)
        .filter(|s| eligible(*s))
        .find(|s| eff(*s) >= 0.85 * best)
        .unwrap_or(1)
}

/// Decode attention: the GQA group packed into BLOCK_M, K/V tiles a multiple (or divisor) of the
/// page size, and the KV sequence split across the GPU (split-KV, flash-decoding) when the
/// (batch, KV head) tiles alone leave SMs/CUs idle.
fn decode_tile(
    spec: &Spec,
    t: &Target,
    [batch, heads, kv_heads, seq_q, seq_kv, d]: [u64; 6],
    budget: Option<u64>,
    tile: &mut BTreeMap<String, u64>,
) -> TileChoice {
    let warp = t.warp().unwrap_or(32).max(1) as u64;
    let max_threads = (t.arch.max_threads_per_block.value.unwrap_or(1024) as u64).max(warp * 2);
    let s = spec.storage.bytes() as u64;
    let kvs = spec
        .modifiers
        .kv_dtype
        .map(|x| x.bytes() as u64)
        .unwrap_or(s)
        .max(1);
    let amd = t.vendor() == Vendor::Amd;
    let g = gqa_group(heads, kv_heads);
    let rows = seq_q.saturating_mul(g).max(1);
    // the smallest MMA tile height (16 rows on NVIDIA mma and AMD MFMA) that holds every
    // query row of one KV head
    let bm = next_pow2(rows).max(16);
    let page = spec.dims.get("page_size").copied().filter(|p| *p > 0);
    let page_ok = |bn: u64| page.map_or(true, |p| bn % p == 0 || p % bn == 0);
    let stages = 2u64;
    // Q is one small tile: registers on AMD, shared memory on NVIDIA
    let q_bytes = if amd { 0 } else { bm * d * s };
    let shared_for = |bn: u64| q_bytes + 2 * bn * d * stages * kvs;
    let mut chosen = None;
    'outer: for share in [2u64, 1] {
        for bn in [128u64, 64, 32, 16] {
            if !page_ok(bn) || bn > round_up(seq_kv, 16).max(16) {
                continue;
            }
            if budget.map_or(true, |b| shared_for(bn) * share <= b) {
                chosen = Some(bn);
                break 'outer;
            }
        }
    }
    let bn = chosen.unwrap_or(16);
    let shared = shared_for(bn);
    let block = (4 * warp).min(max_threads / warp * warp).max(warp);
    tile.insert("block_m".into(), bm);
    tile.insert("block_n".into(), bn);
    tile.insert("head_dim".into(), d);
    tile.insert("stages".into(), stages);
    tile.insert("query_rows".into(), rows);
    let items = batch
        .saturating_mul(kv_heads.max(1))
        .saturating_mul(rows.div_ceil(bm));
    let cus = t
        .device
        .as_deref()
        .and_then(|dv| dv.compute_units.value)
        .map(u64::from);
    let occ = kplan_kb::occupancy(t.arch, block as u32, Some(128), shared).ok();
    let per_cu = occ
        .as_ref()
        .map(|o| o.blocks_per_sm as u64)
        .unwrap_or(1)
        .max(1);
    let kv_tiles = seq_kv.div_ceil(bn);
    let split = cus.map(|c| {
        let slots = c * per_cu;
        (num_splits(items, slots, kv_tiles), slots)
    });
    if let Some((n, _)) = split {
        tile.insert("kv_splits".into(), n);
    }
    let unit = if amd { "CU" } else { "SM" };
    let why = format!(
        "decode (seq_q = {seq_q}): the {g} query head(s) sharing a KV head are packed into the M dimension ({rows} row(s) in BLOCK_M = {bm}, the smallest MMA tile), so each K/V tile is read once per group; K/V tiles {bn}x{d}{} double-buffered, {}: {} of {} budget; {}",
        match page {
            Some(p) if bn >= p => format!(" ({} page(s) of {p} tokens)", bn / p),
            Some(p) => format!(" ({} tiles per {p}-token page)", p / bn),
            None => String::new(),
        },
        if amd { "Q in registers (LDS holds only K/V)".to_string() } else { format!("Q {bm}x{d} in shared memory") },
        kib(shared),
        budget.map(kib).unwrap_or_else(|| "an unknown".into()),
        match (split, cus) {
            (Some((n, slots)), Some(c)) => format!(
                "split-KV: {items} (batch x KV head) tile(s) for {c} {unit}s x {per_cu} resident = {slots} slots ({:.2} waves) -> {n} split(s) of the {seq_kv}-token sequence ({} KV tiles each; FlashAttention-2's split heuristic), partials merged with their log-sum-exp",
                items as f64 / slots as f64,
                kv_tiles.div_ceil(n)
            ),
            _ => format!("split-KV: {items} (batch x KV head) tile(s); the split count comes from the {unit} count at launch (unknown in the KB)"),
        }
    );
    let cands = [128u64, 64, 32]
        .into_iter()
        .filter(|bn| page_ok(*bn) && *bn <= round_up(seq_kv, 16).max(16))
        .map(|bn| Cand {
            params: vec![
                ("BLOCK_M", bm),
                ("BLOCK_N", bn),
                ("HEAD_DIM", d),
                ("STAGES", stages),
            ],
            block,
            shared: shared_for(bn),
        })
        .collect();
    (
        block,
        shared,
        128,
        "BLOCK_N, STAGES (compile-time template/constexpr); BLOCK_M from the GQA group; KV_SPLITS at launch from the SM/CU count and seq_kv".into(),
        cands,
        why,
    )
}

type TileChoice = (u64, u64, u32, String, Vec<Cand>, String);

/// Rows of the activation matrix at or below which a GEMM is a matrix-vector product: each
/// weight is used by at most this many rows, so the kernel streams the weights once (memory
/// bound) instead of tiling them through shared memory for reuse it does not have. Above it
/// the activation rows no longer sit in a warp's registers (16 rows of a 4096-long k are
/// 128 KiB of bf16 per warp, re-read by every column warp), so the GEMM path with split-K
/// plans it.
pub const GEMV_MAX_M: u64 = 8;

/// A GEMM whose `m` is at most [`GEMV_MAX_M`]: planned with a weight-streaming GEMV tile (no
/// shared-memory B tile, no matrix instructions).
pub fn is_gemv(spec: &Spec) -> bool {
    spec.op == Op::Gemm && matches!(spec.problem, Problem::Gemm { m, .. } if m <= GEMV_MAX_M)
}

/// The launch geometry of the GEMV tile on one target: the warp, the weight bytes per row and
/// per warp pass, the columns per block and the split-K that gives two blocks per SM/CU.
pub(crate) struct GemvGeometry {
    warp: u64,
    max_threads: u64,
    wbytes: f64,
    row_bytes: u64,
    pass_bytes: u64,
    warps: u64,
    block: u64,
    blocks: u64,
    cus: Option<u64>,
    max_split: u64,
    /// Split-K of the tile (1: the columns alone fill the GPU).
    pub split: u64,
}

pub(crate) fn gemv_geometry(spec: &Spec, t: &Target, n: u64, k: u64) -> GemvGeometry {
    let warp = t.warp().unwrap_or(32).max(1) as u64;
    let max_threads = (t.arch.max_threads_per_block.value.unwrap_or(1024) as u64).max(warp);
    let wbytes = spec.weight_size().unwrap_or_else(|| spec.storage_size());
    let wbytes = if wbytes > 0.0 { wbytes } else { 1.0 };
    // Bytes of one weight row (one output column's K weights) and of one warp-wide pass.
    let row_bytes = (k as f64 * wbytes).ceil().max(1.0) as u64;
    let pass_bytes = warp * 16;
    let warps = (4 * warp).min(max_threads) / warp;
    let block = warps * warp;
    let blocks = n.div_ceil(warps.max(1));
    let cus = t
        .device
        .as_deref()
        .and_then(|d| d.compute_units.value)
        .map(u64::from);
    // Split-K until the launch has two blocks per SM/CU, never below one warp pass per split.
    let max_split = (row_bytes / pass_bytes).max(1);
    let split = match cus {
        Some(c) if blocks < 2 * c => (2 * c).div_ceil(blocks.max(1)).min(max_split).max(1),
        _ => 1,
    };
    GemvGeometry {
        warp,
        max_threads,
        wbytes,
        row_bytes,
        pass_bytes,
        warps,
        block,
        blocks,
        cus,
        max_split,
        split,
    }
}

/// The largest split-K of the GEMV tiles of `coded` targets (`None` when the GEMV tile does
/// not plan this spec on any of them).
pub(crate) fn gemv_split_k(spec: &Spec, coded: &[&Target]) -> Option<u64> {
    let Problem::Gemm { n, k, .. } = spec.problem else {
        return None;
    };
    if !is_gemv(spec) {
        return None;
    }
    coded
        .iter()
        .filter(|t| t.is_gpu())
        .map(|t| gemv_geometry(spec, t, n, k).split)
        .max()
}

/// A weight-streaming GEMV tile: one warp per output column, every lane issuing 16-byte loads
/// of the weights in their storage format (sub-byte and block-scaled formats at their real
/// bytes per weight), dequantised in registers, the `m` activation rows kept in registers;
/// split-K where the columns alone launch too few blocks to keep every SM/CU streaming.
fn gemv_tile(
    spec: &Spec,
    t: &Target,
    m: u64,
    n: u64,
    k: u64,
    tile: &mut BTreeMap<String, u64>,
) -> TileChoice {
    let g = gemv_geometry(spec, t, n, k);
    let (warps, block, blocks, split) = (g.warps, g.block, g.blocks, g.split);
    tile.insert("m".into(), m);
    tile.insert("n".into(), warps);
    tile.insert("k".into(), k.div_ceil(split));
    tile.insert("split_k".into(), split);
    tile.insert("vector_bytes".into(), 16);
    let why = format!(
        "GEMV (m = {m} <= {GEMV_MAX_M}): each weight is read once, so there is no shared/LDS B tile and no matrix instruction; one warp per output column, {warps} columns per {block}-thread block, each lane issuing 16-B loads of {} B/weight weights ({} B per warp pass over a {} B row), dequantised in registers, the {m} activation row(s) held in registers; {blocks} block(s){}",
        crate::analysis::tidy(g.wbytes),
        g.pass_bytes,
        g.row_bytes,
        match (g.cus, split) {
            (Some(c), s) if s > 1 => format!(" for {c} SMs/CUs: split-K {s} (partial sums reduced by a second pass or fp32 atomics) gives {} blocks, two per SM/CU", blocks * s),
            (Some(c), _) => format!(" fill {c} SMs/CUs without split-K"),
            (None, _) => " (SM/CU count unknown: autotune SPLIT_K)".to_string(),
        }
    );
    let mut cands = Vec::new();
    for w in [2u64, 4, 8] {
        let b = w * g.warp;
        if b > g.max_threads {
            continue;
        }
        for s in [1u64, split, (split * 2).min(g.max_split)] {
            cands.push(Cand {
                params: vec![("COLS_PER_BLOCK", w), ("SPLIT_K", s)],
                block: b,
                shared: 0,
            });
        }
    }
    (
        block,
        0,
        64,
        "COLS_PER_BLOCK, SPLIT_K (template/constexpr), 16-B weight loads dequantised in registers; autotune SPLIT_K per target".into(),
        cands,
        why,
    )
}

fn gemm_tile(
    spec: &Spec,
    t: &Target,
    m: u64,
    n: u64,
    budget: Option<u64>,
    tile: &mut BTreeMap<String, u64>,
    triton: bool,
) -> TileChoice {
    let warp = t.warp().unwrap_or(32).max(1) as u64;
    let max_threads = (t.arch.max_threads_per_block.value.unwrap_or(1024) as u64).max(warp * 2);
    let s = spec.storage.bytes() as u64;
    let amd = t.vendor() == Vendor::Amd;
    // About 64 fp32 accumulators per thread keeps the C tile in registers on every vendor.
    let acc_per_thread = 64;
    let shapes: [(u64, u64, u64); 6] = [
        (256, 128, 64),
        (128, 256, 64),
        (128, 128, 64),
        (128, 128, 32),
        (128, 64, 32),
        (64, 64, 32),
    ];
    // NVIDIA kernels multi-buffer shared memory (cp.async / TMA pipelines, 2-4 stages). AMD
    // kernels written by hand keep one LDS buffer and prefetch the next K tile into registers;
    // Triton's AMD pipeliner is counted with num_stages buffers (an upper bound). On AMD the
    // tile must leave room for two workgroups per CU, so one wave's stall is hidden by another.
    let stage_options: &[u64] = match (amd, triton) {
        (false, _) => &[4, 3, 2],
        (true, true) => &[2, 1],
        (true, false) => &[1],
    };
    let residency = if amd { 2 } else { 1 };
    let threads_for = |bm: u64, bn: u64| {
        round_up(
            (bm * bn / acc_per_thread).clamp(warp * 2, max_threads),
            warp,
        )
        .min(max_threads)
    };
    let fits_problem =
        |bm: u64, bn: u64| bm <= round_up(m, 64).max(64) && bn <= round_up(n, 64).max(64);
    let mut chosen = None;
    'outer: for (bm, bn, bk) in shapes {
        // Do not tile past the problem: skinny problems take the small shapes.
        if !fits_problem(bm, bn) {
            continue;
        }
        for &stages in stage_options {
            let shared = stages * (bm * bk + bk * bn) * s;
            if budget.map_or(true, |b| shared * residency <= b) {
                chosen = Some((bm, bn, bk, stages, shared));
                break 'outer;
            }
        }
    }
    let (bm, bn, bk, stages, shared) = chosen.unwrap_or((64, 64, 16, 1, (64 * 16 * 2) * s));
    let block = threads_for(bm, bn);
    tile.insert("m".into(), bm);
    tile.insert("n".into(), bn);
    tile.insert("k".into(), bk);
    tile.insert("stages".into(), stages);
    let why = format!(
        "{bm}x{bn}x{bk} with {stages} stage(s){}: {stages} x ({bm}x{bk} + {bk}x{bn}) x {s} B = {} of {} budget{}; {block} threads ({} warps of {warp}) hold {acc_per_thread} fp32 accumulators each",
        if amd && !triton { " (one LDS buffer, the next K tile prefetched into registers)" } else { "" },
        kib(shared),
        budget.map(kib).unwrap_or_else(|| "an unknown".into()),
        if amd { ", leaving room for two workgroups per CU" } else { "" },
        block / warp
    );
    // Autotune candidates: the chosen tile and its neighbours, each with every stage option;
    // those over the budget are dropped with the reason (check_candidates).
    let mut cands = Vec::new();
    for (cm, cn, ck) in [
        (bm, bn, bk),
        (128, 128, 64),
        (128, 256, 64),
        (256, 128, 64),
        (64, 64, 32),
    ] {
        if !fits_problem(cm, cn) {
            continue;
        }
        for &st in stage_options {
            cands.push(Cand {
                params: vec![
                    ("BLOCK_M", cm),
                    ("BLOCK_N", cn),
                    ("BLOCK_K", ck),
                    ("STAGES", st),
                ],
                block: threads_for(cm, cn),
                shared: st * (cm * ck + ck * cn) * s,
            });
        }
    }
    (
        block,
        shared,
        if t.is_cdna() { 192 } else { 128 },
        if amd && !triton {
            "BLOCK_M, BLOCK_N, BLOCK_K (template/constexpr), one LDS buffer with register prefetch; autotune list per target (CK/hipBLASLt-style)".into()
        } else {
            "BLOCK_M, BLOCK_N, BLOCK_K, STAGES (template/constexpr); autotune list per target"
                .into()
        },
        cands,
        why,
    )
}

fn cpu_tile(spec: &Spec, t: &Target) -> Tile {
    let simd = t
        .arch
        .simd_bits
        .as_ref()
        .and_then(|f| f.value)
        .unwrap_or(128) as u64;
    let lanes = (simd / (8 * spec.compute.bytes().max(1) as u64)).max(1);
    let mut tile = BTreeMap::new();
    tile.insert("simd_lanes".into(), lanes);
    let why = match (&spec.problem, spec.op) {
        (Problem::Gemm { .. }, _) => {
            tile.insert("m".into(), 64);
            tile.insert("n".into(), 256);
            tile.insert("k".into(), 256);
            format!("cache-blocked 64x256x256 panels (L2-sized) with a {lanes}-lane micro-kernel; prefer the CPU BLAS, whose blocking is tuned")
        }
        (Problem::Rows { cols, .. }, _) => {
            tile.insert("rows_per_task".into(), 1);
            tile.insert("cols".into(), *cols);
            format!("one row per task across threads, {lanes}-lane SIMD along the row, fp32 accumulation")
        }
        (Problem::Attention { head_dim, .. }, _) => {
            tile.insert("block_m".into(), 64);
            tile.insert("block_n".into(), 64);
            tile.insert("head_dim".into(), *head_dim);
            format!("64x64 query/key blocks per task with online softmax, {lanes}-lane SIMD along head_dim")
        }
        _ => {
            tile.insert("elems_per_task".into(), 16384);
            format!("16384-element chunks per task (L1/L2-sized), {lanes}-lane SIMD")
        }
    };
    let mut sources = vec![t.arch.warp_size.source.clone()];
    if let Some(f) = &t.arch.simd_bits {
        sources.push(f.source.clone());
    }
    sources.dedup();
    Tile {
        target: t.name.clone(),
        block_threads: 1,
        tile,
        shared_bytes: 0,
        shared_budget_bytes: None,
        occupancy: None,
        blocks_per_sm: None,
        limiter: None,
        occupancy_unit: None,
        occupancy_note: Some("no occupancy model for CPUs".into()),
        registers_assumed: 0,
        configuration:
            "chunk/panel sizes as runtime parameters; one OS thread per task (rayon/OpenMP)".into(),
        candidates: vec![],
        candidate_checks: vec![],
        why: if t.vendor() == Vendor::Cpu {
            why
        } else {
            String::new()
        },
        sources,
    }
}

/// Library and framework verdicts write no kernel, but the dispatch function still picks launch
/// parameters per target: for decode attention the split-KV partitions (as FlashAttention-2's
/// heuristic would at this shape), the GQA group the call must pack and the page size the cache
/// writer uses; for GEMM whether the output tiles fill the GPU or split-K is needed.
pub fn dispatch(
    cx: &super::Context,
    ops: &[crate::model::OpTarget],
    strategy: &Decided,
) -> Vec<crate::model::DispatchTarget> {
    let (spec, targets) = (cx.spec, &cx.targets[..]);
    use crate::model::{DispatchParam, DispatchTarget};
    let p = |name: &str, value: String, why: String| DispatchParam {
        name: name.into(),
        value,
        why,
    };
    let mut out = Vec::new();
    for t in targets.iter().filter(|t| t.is_gpu()) {
        let imp = strategy
            .per_target
            .get(t.index)
            .map(|x| x.implementation.clone())
            .unwrap_or_default();
        let cus = t
            .device
            .as_deref()
            .and_then(|d| d.compute_units.value)
            .map(u64::from);
        let unit = if t.vendor() == Vendor::Amd {
            "CU"
        } else {
            "SM"
        };
        let mut params = Vec::new();
        match &spec.problem {
            Problem::Attention {
                batch,
                heads,
                kv_heads,
                seq_q,
                seq_kv,
                head_dim,
                ..
            } if is_decode(*seq_q, *heads, *kv_heads) => {
                let g = gqa_group(*heads, *kv_heads);
                let rows = seq_q.saturating_mul(g);
                let items = batch
                    .saturating_mul((*kv_heads).max(1))
                    .saturating_mul(rows.div_ceil(next_pow2(rows).max(16)));
                // FlashAttention-2's split-KV KV tile: 256 tokens up to head_dim 64, 128 up to
                // 128, else 64; two 128-thread blocks per SM
                let kv_block: u64 = match *head_dim {
                    0..=64 => 256,
                    65..=128 => 128,
                    _ => 64,
                };
                let kv_tiles = seq_kv.div_ceil(kv_block);
                params.push(match cus {
                    Some(c) => {
                        let n = num_splits(items, 2 * c, kv_tiles);
                        p(
                            "kv_splits",
                            n.to_string(),
                            format!(
                                "{items} (batch x KV head) tile(s) over {c} {unit}s x 2 = {:.2} waves; FlashAttention-2's heuristic picks {n} split(s) of the {seq_kv}-token sequence ({kv_block}-token KV tiles); a library with its own heuristic (FlashInfer's plan(), CK/AITER) must be checked at this shape, and the split partials need a workspace of batch x heads x splits x head_dim fp32",
                                items as f64 / (2 * c) as f64
                            ),
                        )
                    }
                    None => p(
                        "kv_splits",
                        "from the SM/CU count".into(),
                        format!("{items} (batch x KV head) tile(s); the device's SM/CU count is unknown in the KB"),
                    ),
                });
                params.push(p(
                    "gqa_group",
                    g.to_string(),
                    format!(
                        "{heads} query heads over {kv_heads} KV heads: a decode call that packs the {g} heads of a group into one tile reads each K/V page once per group{}",
                        if t.vendor() == Vendor::Nvidia {
                            " (FlashInfer: `use_tensor_cores=True` runs grouped heads on tensor cores; measure both)"
                        } else {
                            ""
                        }
                    ),
                ));
                if let Some(ps) = spec.dims.get("page_size") {
                    params.push(p(
                        "page_size",
                        ps.to_string(),
                        "tokens per KV page: the cache writer and every library called must agree on the page size and the page layout, which is the library's (FlashInfer NHD/HND, vLLM and CK/AITER their own); check each library's supported page sizes before choosing it".into(),
                    ));
                }
            }
            Problem::Attention {
                seq_q,
                heads,
                kv_heads,
                causal,
                ..
            } => params.push(p(
                "schedule",
                "the library's".into(),
                if *seq_q <= 16 {
                    // a few query tokens against a long cache, but more packed query rows per
                    // KV head (a large GQA group or MLA's shared latent head) than a small tile
                    format!(
                        "decode with {} packed query rows per KV head (seq_q x {} query heads per KV head): the library's tiles and split-KV schedule",
                        seq_q.saturating_mul(gqa_group(*heads, *kv_heads)),
                        gqa_group(*heads, *kv_heads)
                    )
                } else {
                    format!(
                        "prefill-shaped attention: the library's tiles and persistent schedule{}",
                        if *causal || spec.dim("total_tokens").is_some() {
                            "; pass the causal/varlen metadata as it expects"
                        } else {
                            ""
                        }
                    )
                },
            )),
            Problem::Gemm { batch, m, n, k } => {
                let tiles = batch
                    .saturating_mul(m.div_ceil(128))
                    .saturating_mul(n.div_ceil(128));
                let memory = ops.get(t.index).and_then(|o| o.bound)
                    == Some(crate::analysis::Bound::Memory);
                let mut split = match cus {
                    Some(c) if memory => split_k_by_bytes(tiles, *k, c, unit),
                    Some(c) if tiles < c => p(
                        "split_k",
                        "needed".into(),
                        format!("{tiles} output tile(s) of 128x128 for {c} {unit}s: without split-K / stream-K most of the GPU idles; check that the library's heuristic picks it at this shape (and give it its workspace)"),
                    ),
                    Some(c) => p(
                        "split_k",
                        "not needed".into(),
                        format!("{tiles} output tile(s) of 128x128 fill {c} {unit}s ({:.1} waves)", tiles as f64 / c as f64),
                    ),
                    None => p(
                        "split_k",
                        "check".into(),
                        format!("{tiles} output tile(s) of 128x128; the SM/CU count is unknown in the KB"),
                    ),
                };
                // The tile count is the library's, which kplan does not know: say what it assumed.
                split.why.push_str(&format!(
                    "; assumes 128x128 output tiles, a common library tile{}",
                    if (*m).min(*n) < 128 {
                        ": for a skinny shape the library may pick a narrow tile (64 or fewer rows), which gives more tiles and can make split-K unnecessary, so the heuristic's choice decides"
                    } else {
                        ""
                    }
                ));
                params.push(split);
            }
            _ => {}
        }
        // Deterministic results: each library this target calls needs its own switch (KB data).
        if spec.modifiers.deterministic {
            if let Some(info) = cx.op {
                let libs: Vec<&kplan_kb::OpLibrary> = info
                    .library
                    .iter()
                    .filter(|l| {
                        l.vendor == t.vendor().as_str()
                            && l.role == "reuse"
                            && super::verdict::library_allowed(spec, l)
                            && super::verdict::library_covers(spec, targets, l)
                    })
                    .collect();
                if !libs.is_empty() {
                    let with: Vec<String> = libs
                        .iter()
                        .filter_map(|l| {
                            l.deterministic.as_ref().map(|d| {
                                format!(
                                    "{}: {d} [{}]",
                                    l.name,
                                    l.deterministic_source.as_deref().unwrap_or(&l.source)
                                )
                            })
                        })
                        .collect();
                    let without: Vec<&str> = libs
                        .iter()
                        .filter(|l| l.deterministic.is_none())
                        .map(|l| l.name.as_str())
                        .collect();
                    params.push(p(
                        "deterministic",
                        if with.is_empty() { "no switch known".into() } else { "on".into() },
                        format!(
                            "the spec asks for deterministic results{}{}",
                            if with.is_empty() { String::new() } else { format!("; {}", with.join("; ")) },
                            if without.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    "; the KB knows no deterministic switch for {}: check its documentation, or do not call it for this spec",
                                    super::join_names(&without)
                                )
                            }
                        ),
                    ));
                }
            }
        }
        if !params.is_empty() {
            params.push(p(
                "implementation",
                if imp.is_empty() { "-".into() } else { imp },
                "what the dispatch calls on this target (section 3)".into(),
            ));
            out.push(DispatchTarget {
                target: t.name.clone(),
                params,
            });
        }
    }
    out
}

/// Split-K for a memory-bound GEMM: its time is set by the bytes the busiest SM/CU streams,
/// not by how many output tiles there are. `tiles` work units over `cus` SMs/CUs give the
/// busiest one ceil(tiles / cus) units against an average of tiles / cus; the smallest split
/// (at most 16, at least 256 of K per split) that brings that balance to 90% is chosen.
fn split_k_by_bytes(tiles: u64, k: u64, cus: u64, unit: &str) -> crate::model::DispatchParam {
    let cus = cus.max(1);
    let balance = |units: u64| {
        let w = units as f64 / cus as f64;
        if w <= 0.0 {
            0.0
        } else {
            w / w.ceil()
        }
    };
    let max_split = (k / 256).clamp(1, 16);
    let enough = |s: u64| tiles.saturating_mul(s) >= cus && balance(tiles.saturating_mul(s)) >= 0.9;
    let split = (1..=max_split).find(|s| enough(*s)).unwrap_or_else(|| {
        (1..=max_split)
            .max_by(|a, b| {
                balance(tiles * a)
                    .total_cmp(&balance(tiles * b))
                    .then(b.cmp(a))
            })
            .unwrap_or(1)
    });
    let busiest = (tiles as f64 / cus as f64).ceil();
    let first = format!(
        "memory-bound at this shape: the time is the bytes the busiest {unit} streams, not the output-tile waves; {tiles} output tile(s) of 128x128 over {cus} {unit}s leave the busiest streaming {busiest} tile(s) against an average of {:.2} ({:.0}% of the bandwidth in use)",
        tiles as f64 / cus as f64,
        balance(tiles) * 100.0
    );
    let name = "split_k".to_string();
    if split == 1 {
        crate::model::DispatchParam {
            name,
            value: "not needed".into(),
            why: format!("{first}: balanced enough without split-K"),
        }
    } else {
        crate::model::DispatchParam {
            name,
            value: format!("needed ({split})"),
            why: format!(
                "{first}; split-K {split} makes {} units ({:.0}%): check that the library's heuristic picks split-K / stream-K at this shape (and give it its workspace)",
                tiles * split,
                balance(tiles * split) * 100.0
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_k_of_a_memory_bound_gemm_balances_bytes_per_sm() {
        // 224 tiles on 132 SMs: 1.70 waves, the busiest SM streams 2 (85%): split 4 gives
        // 896 units, 6.79 of 7 (97%).
        let p = split_k_by_bytes(224, 4096, 132, "SM");
        assert_eq!(p.value, "needed (4)", "{}", p.why);
        // 264 tiles on 132 SMs: exactly 2 each.
        assert_eq!(split_k_by_bytes(264, 4096, 132, "SM").value, "not needed");
        // short K caps the split
        assert_eq!(split_k_by_bytes(1, 256, 132, "SM").value, "not needed");
    }

    #[test]
    fn split_heuristic_follows_flash_attention_2() {
        // enough tiles for 80% of the slots: no split
        assert_eq!(num_splits(512, 264, 256), 1);
        assert_eq!(num_splits(212, 264, 256), 1);
        // 8 tiles on 264 slots: 33 splits fill one wave exactly (efficiency 1.0); the fewest
        // with at least 85% of that is 29 (232 / 264 = 0.88; 28 gives 0.85 - 0.002)
        assert_eq!(num_splits(8, 264, 256), 29);
        // never more splits than KV tiles
        assert_eq!(num_splits(1, 264, 4), 4);
        assert_eq!(num_splits(1, 1, 1), 1);
    }

    #[test]
    fn decode_is_a_query_group_that_fits_one_small_tile() {
        assert!(is_decode(1, 32, 8));
        assert!(is_decode(4, 64, 8));
        assert!(!is_decode(128, 32, 8));
        assert_eq!(gqa_group(32, 0), 32);
    }
}
