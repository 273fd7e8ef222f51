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
in scope has a different capacity.",
    why: "The capacity differs by GPU: 64 KiB of LDS on gfx942 and RDNA3, 160 KiB on gfx950, 227 KiB on H100/H200, \
99 KiB on consumer NVIDIA parts. Tile sizes or `num_stages` derived from a hard-coded limit either fail to launch \
(out of resources) or leave most of the memory unused on the other GPUs.",
    example: "MAX_SMEM = 232448  # H100\nnum_stages = MAX_SMEM // stage_bytes",
    use_instead: "props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())\nnum_stages = props[\"max_shared_mem\"] // stage_bytes",
    severity: Severity::Warning,
    scope: Scope::PerFinding,
    lang: Lang::Python,
    features: &["shared-memory", "large-shared-memory"],
};

const LIMITS: &[u64] = &[49152, 65536, 98304, 101376, 163840, 166912, 232448, 233472];

pub fn check(cx: &mut Cx) {
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
            .filter(|t| t.vendor != Vendor::Cpu && (!amd_only || t.vendor == Vendor::Amd))
            .filter(|t| arch_words.is_empty() || named(&t.arch))
            .filter_map(|t| {
                t.shared_max
                    .filter(|&m| m != value)
                    .map(|m| (t.arch.clone(), m))
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
        Some(rest) if rest.len() == 3 && rest[..2].chars().all(|c| c.is_ascii_digit()) => {
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
