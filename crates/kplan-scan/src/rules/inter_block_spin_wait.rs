//! `inter-block-spin-wait`: a kernel spins on a flag another block sets, with blocks ordered by
//! `blockIdx`: nothing makes the other block run first (or at all, until this one ends), and
//! no vendor guarantees that blocks start in `blockIdx` order.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use std::collections::HashSet;

pub static META: RuleMeta = RuleMeta {
    id: "inter-block-spin-wait",
    summary: "spin loop waiting for another block's flag, with blocks ordered by `blockIdx` (no atomic ticket)",
    what: "Finds `while` loops in device code whose condition reads memory atomically (`atomicCAS`, `atomicAdd(p, 0)`, \
`atomicOr(p, 0)`, `__hip_atomic_load`, `cuda::atomic_ref::load`, a `volatile` read) and whose body does \
nothing but wait (empty, or a sleep or fence), in a function that numbers blocks by `blockIdx` (or is given a block number: `block_id`, `tile_idx`), when the file \
takes no atomic ticket (`id = atomicAdd(&counter, 1)`) to order the blocks by when they started.",
    why: "CUDA and HIP require thread blocks to be executable in any order, in parallel or in series (the CUDA \
C++ Programming Guide, \"Thread Hierarchy\"): neither vendor guarantees that blocks start in `blockIdx` order \
or that a block waited for is resident. A block that spins on a flag set by another block can deadlock when that \
block has not been dispatched and waits for a compute unit the spinning blocks hold; the pattern is outside the \
programming model on both vendors and works only as far as the hardware happens to dispatch in index order. \
AMD's own scan library orders its look-back by an atomic ticket taken when each block starts (rocPRIM's \
ordered block id) rather than by `blockIdx`, which waits only for blocks already running.",
    example: "__global__ void scan(unsigned* flags, int* partial) {\n    int b = blockIdx.x;\n    if (b > 0 && threadIdx.x == 0) {\n        while (atomicAdd(&flags[b - 1], 0) == 0);\n    }\n    /* ... */\n}",
    use_instead: "__global__ void scan(unsigned* flags, int* partial, unsigned* ticket) {\n    __shared__ int b;\n    if (threadIdx.x == 0) b = atomicAdd(ticket, 1);  // order by start, not blockIdx\n    __syncthreads();\n    if (b > 0 && threadIdx.x == 0) {\n        while (atomicAdd(&flags[b - 1], 0) == 0);\n    }\n    /* ... */\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

fn atomic_read(s: &str) -> bool {
    s.starts_with("atomic")
        || s.starts_with("__hip_atomic_load")
        || s.starts_with("__atomic_load")
        || s == "load"
        || s == "volatile"
}

/// Body of a waiting loop: nothing, or only sleeps and fences.
fn idle(s: &str) -> bool {
    matches!(
        s,
        "__nanosleep"
            | "__builtin_amdgcn_s_sleep"
            | "__threadfence"
            | "__threadfence_block"
            | "__syncwarp"
    ) || s.contains("sleep")
        || s.contains("yield")
        || s.contains("pause")
}

/// A name that holds a block's number (`block_id`, `blockIdx`, `bid`, `tile_idx`): a function
/// given its block number as a parameter numbers blocks the same way.
fn block_number_name(s: &str) -> bool {
    let l: String = s
        .chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    matches!(
        l.as_str(),
        "blockid"
            | "blockidx"
            | "blockindex"
            | "bid"
            | "tileid"
            | "tileidx"
            | "tileindex"
            | "ctaid"
    )
}

pub fn check(cx: &mut Cx) {
    if !cx.has("while") || !(cx.has("atomic") || cx.has("volatile")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // an atomic ticket: `b = atomicAdd(&counter, 1)` / `atomicInc(...)` with the result kept
    // (a read, `atomicAdd(p, 0)`, is no ticket)
    let ticket = (1..n).any(|k| {
        src.is(k - 1, "=")
            && matches!(src.s(k), "atomicAdd" | "atomicInc" | "atomicAdd_system")
            && src.is(k + 1, "(")
            && {
                let args = cx.call_args(k + 1);
                src.s(k) == "atomicInc"
                    || args
                        .get(1)
                        .is_some_and(|&(a, b)| a == b && src.int(a) == Some(1))
            }
    });
    if ticket {
        return;
    }
    // names declared `volatile` (a flag array passed as `volatile unsigned* flags`)
    let volatiles: HashSet<&str> = (0..n)
        .filter(|&k| src.is(k, "volatile"))
        .filter_map(|k| {
            (k + 1..n.min(k + 8))
                .find(|&j| {
                    src.kind(j) == Some(Tk::Ident)
                        && matches!(src.s(j + 1), "," | ")" | "=" | ";" | "[")
                })
                .map(|j| src.s(j))
        })
        .collect();
    // functions that number blocks by `blockIdx`
    let mut by_block: Vec<bool> = vec![false; src.funcs.len() + 1];
    for k in 0..n {
        if src.is(k, "blockIdx") || block_number_name(src.s(k)) {
            if let Some(slot) = src
                .toks
                .get(k)
                .and_then(|t| by_block.get_mut(t.func as usize))
            {
                *slot = true;
            }
        }
    }
    let mut hits: Vec<(usize, usize)> = Vec::new();
    for k in 0..n {
        if !src.is(k, "while") || !src.in_device(k) || !src.is(k + 1, "(") {
            continue;
        }
        let f = src.toks[k].func as usize;
        if !by_block.get(f).copied().unwrap_or(false) {
            continue;
        }
        // `} while (...)` of a do-loop: the body decides, not read here
        if k > 0 && src.is(k - 1, "}") {
            continue;
        }
        let Some(close) = src.mate(k + 1) else {
            continue;
        };
        let reads = (k + 2..close).any(|j| {
            src.kind(j) == Some(Tk::Ident)
                && (atomic_read(src.s(j)) || volatiles.contains(src.s(j)))
        });
        // waiting on the block's own flag (`flags[bid]`, set by another warp of the block) is
        // an intra-block wait, not this rule's
        let own_slot = (k + 2..close)
            .any(|j| src.is(j, "[") && block_number_name(src.s(j + 1)) && src.is(j + 2, "]"));
        if own_slot {
            continue;
        }
        if !reads {
            continue;
        }
        let waits = if src.is(close + 1, ";") {
            true
        } else if src.is(close + 1, "{") {
            let Some(end) = src.mate(close + 1) else {
                continue;
            };
            (close + 2..end).all(|j| src.kind(j) != Some(Tk::Ident) || idle(src.s(j)))
        } else {
            false
        };
        if waits {
            hits.push((k, close));
        }
    }
    for (k, close) in hits {
        let msg = "spin-waits for a flag another block sets, with blocks numbered by `blockIdx` or a block number: no vendor guarantees that blocks start in index order or stay resident, so a block waiting for one not yet running can deadlock".to_string();
        cx.report(&META, k, close, msg, "order the blocks by an atomic ticket taken when each starts (`b = atomicAdd(&counter, 1)`), or use a cooperative launch and a grid-wide sync");
    }
}
