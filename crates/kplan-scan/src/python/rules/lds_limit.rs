//! `triton-lds-limit`: a shared-memory / LDS size hard-coded for one GPU.

use crate::diag::Severity;
use crate::python::lex::Kind;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub const META: RuleMeta = RuleMeta {
    id: "triton-lds-limit",
    summary: "shared memory / LDS capacity hard-coded (64 KiB, 160 KiB, 227 KiB, ...) where targets differ",
    what: "Finds per-block shared-memory capacities written as literals (65536, `64 * 1024`, 163840, `160 * 1024`, \
232448, `227 * 1024`, 101376, 166912, 49152) on lines about shared memory (`smem`, `shared`, `lds`), when a target \
in scope has a different capacity. Constants named for one architecture (`GFX942_LDS_BYTES`) and per-architecture \
tables are compared with that architecture only. Also finds fixed GEMM tile configs (a dict literal or a launch's \
keywords with literal `BLOCK_SIZE_M/N/K` and `num_stages`, outside `triton.Config` and outside per-backend code) whose \
operand tiles cannot fit an AMD target's LDS, by a lower-bound estimate: max(num_stages - 1, 1) buffers of the A and B \
tiles, 1 byte per element in files that use fp8, 2 otherwise.",
    why: "The capacity differs by GPU: 64 KiB of LDS on gfx942 and RDNA3, 160 KiB on gfx950, 227 KiB on H100/H200, \
99 KiB on consumer NVIDIA parts. Tile sizes or `num_stages` derived from a hard-coded limit, or tuned on a GPU with \
more shared memory, either fail to launch on the smaller one (`OutOfResources: shared memory`) or leave most of the \
memory unused on the larger ones. Autotune candidates are exempt: the autotuner drops configs that do not fit.",
    example: "MAX_SMEM = 232448  # H100\nnum_stages = MAX_SMEM // stage_bytes",
    use_instead: "props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())\nnum_stages = props[\"max_shared_mem\"] // stage_bytes",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["shared-memory", "large-shared-memory"],
};

const LIMITS: &[u64] = &[49152, 65536, 98304, 101376, 163840, 166912, 232448, 233472];

pub fn check(cx: &mut Cx) {
    check_capacities(cx);
    check_tile_configs(cx);
}

/// Which GEMM tile dimension a constexpr name sets: `BLOCK_SIZE_M`, `BLOCK_M`, `BM`, `TILE_K`.
fn tile_dim(name: &str) -> Option<char> {
    let u = name.trim_matches(['"', '\'']).to_ascii_uppercase();
    for d in ['M', 'N', 'K'] {
        let hit = [
            format!("BLOCK_SIZE_{d}"),
            format!("BLOCK_{d}"),
            format!("B{d}"),
            format!("TILE_{d}"),
            format!("TILE_SIZE_{d}"),
        ]
        .contains(&u);
        if hit {
            return Some(d);
        }
    }
    None
}

/// A fixed GEMM tile config (a dict literal or a kernel launch's keywords, not an autotune
/// `triton.Config`, whose out-of-resource entries the autotuner drops) whose operand tiles
/// cannot fit an AMD target's LDS. The estimate is a lower bound: (num_stages - 1) LDS buffers
/// (at least one; Triton's AMD stream pipeliner keeps one stage in registers) of the A and B
/// tiles, at 1 byte per element in files that use fp8 and 2 bytes otherwise.
fn check_tile_configs(cx: &mut Cx) {
    let src = cx.src;
    let bytes: u64 = if cx.fp8_context { 1 } else { 2 };
    for open in 0..src.toks.len() {
        let is_dict = src.s(open) == "{";
        let is_launch = src.s(open) == "("
            && src.s(open.wrapping_sub(1)) == "]"
            && !src.is_name(open.wrapping_sub(2), "Config");
        if !is_dict && !is_launch {
            continue;
        }
        // skip `triton.Config({...}, ...)`: the dict is an autotune candidate
        if is_dict
            && src.s(open.wrapping_sub(1)) == "("
            && src.is_name(open.wrapping_sub(2), "Config")
        {
            continue;
        }
        let Some(close) = src.closing(open) else {
            continue;
        };
        let d = src.toks[open].depth + 1;
        let (mut m, mut n, mut k, mut stages) = (None, None, None, None);
        let mut stages_at = open;
        for i in open + 1..close {
            if src.toks[i].depth != d || !matches!(src.s(i + 1), ":" | "=") {
                continue;
            }
            let Some(v) = src.int(i + 2).filter(|v| *v > 0) else {
                continue;
            };
            if !matches!(src.s(i + 3), "," | "}" | ")") {
                continue;
            }
            let key = src.s(i).trim_matches(['"', '\'']);
            match tile_dim(key) {
                Some('M') => m = Some(v as u64),
                Some('N') => n = Some(v as u64),
                Some('K') => k = Some(v as u64),
                _ if key == "num_stages" => {
                    stages = Some(v as u64);
                    stages_at = i;
                }
                _ => {}
            }
        }
        let (Some(m), Some(n), Some(k), Some(stages)) = (m, n, k, stages) else {
            continue;
        };
        // a function that picks configs per backend has an AMD entry of its own
        if cx.guarded(open) || cx.scope_has_backend_check(open) {
            continue;
        }
        let need = stages.saturating_sub(1).max(1) * (m * k + k * n) * bytes;
        let over: Vec<(String, u64)> = cx
            .ctx
            .targets
            .iter()
            .filter(|t| t.vendor() == Vendor::Amd)
            .filter_map(|t| {
                t.shared_max()
                    .filter(|&c| need > c)
                    .map(|c| (t.id().to_string(), c))
            })
            .collect();
        if over.is_empty() {
            continue;
        }
        let list: Vec<String> = over
            .iter()
            .map(|(a, c)| format!("{a} has {} KiB", c / 1024))
            .collect();
        let msg = format!(
            "tiles {m}x{k} and {k}x{n} with num_stages={stages} need at least {} KiB of LDS ({} byte elements); {}",
            need / 1024,
            bytes,
            list.join(", ")
        );
        let targets = over.into_iter().map(|(a, _)| a).collect();
        let end = (stages_at + 2).min(close);
        cx.report_with(&META, META.severity, targets, stages_at, end, msg, "lower num_stages (AMD: 2 for one GEMM, 1 for fused GEMMs) or the block sizes on AMD, or let `triton.autotune` drop configs that do not fit");
    }
}

fn check_capacities(cx: &mut Cx) {
    let src = cx.src;
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Kind::Number) {
            continue;
        }
        let (value, end) = match (src.int(k), src.s(k + 1), src.int(k + 2)) {
            (Some(a), "*", Some(1024))
                if (32..=256).contains(&a) && src.s(k.wrapping_sub(1)) != "*" =>
            {
                ((a * 1024) as u64, k + 2)
            }
            (Some(v), _, _) if LIMITS.contains(&(v as u64)) && src.s(k + 1) != "*" => (v as u64, k),
            _ => continue,
        };
        if !LIMITS.contains(&value) {
            continue;
        }
        let Some(line) = src.line_of(k) else { continue };
        let about_smem = (line.first..line.end).any(|i| {
            matches!(src.kind(i), Some(Kind::Name) | Some(Kind::Str)) && {
                let l = src.s(i).to_ascii_lowercase();
                l.contains("smem")
                    || l.contains("shared")
                    || l.contains("lds")
                    || l.contains("shmem")
            }
        });
        if !about_smem {
            continue;
        }
        // A constant named for one architecture (`GFX942_LDS_BYTES = 64 * 1024`) is a fact about
        // that architecture: only the in-scope targets it names are compared with it.
        // In a per-architecture table (`{"gfx942": 65536, "gfx950": 163840}`) the entry's key
        // names the architecture its value is for.
        let key = (k >= 2 && src.s(k - 1) == ":" && src.kind(k - 2) == Some(Kind::Str))
            .then(|| norm_arch(src.s(k - 2)))
            .filter(|w| names_arch(w));
        let arch_words: Vec<String> = match key {
            Some(w) => vec![w],
            None => (line.first..line.end)
                .filter(|&i| matches!(src.kind(i), Some(Kind::Name) | Some(Kind::Str)))
                .map(|i| norm_arch(src.s(i)))
                .filter(|w| names_arch(w))
                .collect(),
        };
        let named = |arch: &str| {
            let a = norm_arch(arch);
            arch_words.iter().any(|w| w.contains(&a))
        };
        // Under a HIP branch only AMD targets matter; elsewhere every GPU target does.
        let amd_only = cx.guarded(k);
        let differing: Vec<(String, u64)> = cx
            .ctx
            .targets
            .iter()
            .filter(|t| t.vendor() != Vendor::Cpu && (!amd_only || t.vendor() == Vendor::Amd))
            .filter(|t| arch_words.is_empty() || named(t.id()))
            .filter_map(|t| {
                t.shared_max()
                    .filter(|&m| m != value)
                    .map(|m| (t.id().to_string(), m))
            })
            .collect();
        if differing.is_empty() {
            continue;
        }
        let list: Vec<String> = differing
            .iter()
            .map(|(a, m)| format!("{a} has {} KiB", m / 1024))
            .collect();
        let msg = format!(
            "`{}` hard-codes {} KiB of shared memory per block; {}",
            cx.code(k, end),
            value / 1024,
            list.join(", ")
        );
        let targets = differing.into_iter().map(|(a, _)| a).collect();
        cx.report_with(&META, META.severity, targets, k, end, msg, "query the device (`triton.runtime.driver.active.utils.get_device_properties(dev)[\"max_shared_mem\"]`)");
    }
}

/// Lower case without `_` and the `a`/`f` suffix of NVIDIA arch ids: `sm_90a` -> `sm90`.
fn norm_arch(s: &str) -> String {
    let l: String = s
        .to_ascii_lowercase()
        .chars()
        .filter(|&c| c != '_' && c != '"' && c != '\'')
        .collect();
    match l.strip_prefix("sm") {
        Some(rest)
            if rest.len() == 3
                && rest.is_char_boundary(2)
                && rest[..2].chars().all(|c| c.is_ascii_digit()) =>
        {
            format!("sm{}", &rest[..2])
        }
        _ => l,
    }
}

/// Whether a normalised word names a GPU architecture (`gfx942`, `sm90`, `SM80_SMEM`).
fn names_arch(w: &str) -> bool {
    let digits_after = |p: &str| {
        w.match_indices(p).any(|(i, _)| {
            w[i + p.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    };
    digits_after("gfx") || digits_after("sm")
}
