//! `platform-branch-api-mismatch`: the HIP branch of a per-platform choice names a different
//! runtime constant than the CUDA branch it mirrors (`cudaLimitStackSize` against
//! `hipLimitMallocHeapSize`).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use std::collections::{BTreeMap, BTreeSet};

pub static META: RuleMeta = RuleMeta {
    id: "platform-branch-api-mismatch",
    summary: "the HIP branch names a different runtime constant than the CUDA branch it mirrors",
    what: "Reads each `#if`/`#elif`/`#else` chain that has a CUDA-only branch (`__CUDACC__`, \
`KOKKOS_ENABLE_CUDA`, `!defined(USE_ROCM)`, ...) and another branch that uses HIP runtime names. Among the \
runtime constants used as values (`cudaLimitStackSize`, `hipMemcpyDeviceToHost`: names not called), it \
pairs each CUDA name with no HIP counterpart in the other branch with a HIP name with no CUDA counterpart \
in the first, when both belong to the same family (the first word after the prefix: `Limit`, `Memcpy`, \
`FuncAttribute`) and differ by more than a systematic rename (`HostAlloc` against `HostMalloc`).",
    why: "Per-platform branches are written to do the same thing on both vendors, and HIP keeps CUDA's \
names with a `hip` prefix (`cudaLimitStackSize` is `hipLimitStackSize`). A HIP branch that names another \
constant of the family sets or reads something else on AMD: the heap size instead of the stack size, \
another copy direction, another attribute. It compiles, so only an AMD run that depends on the setting \
shows it (a stack overflow, a wrong copy).",
    example: "#if defined(__CUDACC__)\n  cudaDeviceSetLimit(cudaLimitStackSize, bytes);\n#elif defined(__HIPCC__)\n  hipDeviceSetLimit(hipLimitMallocHeapSize, bytes);\n#endif",
    use_instead: "#if defined(__CUDACC__)\n  cudaDeviceSetLimit(cudaLimitStackSize, bytes);\n#elif defined(__HIPCC__)\n  hipDeviceSetLimit(hipLimitStackSize, bytes);\n#endif",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// `cudaLimitStackSize` -> ("cuda", "LimitStackSize").
fn runtime_name(w: &str) -> Option<(&'static str, &str)> {
    for p in ["cuda", "hip"] {
        if let Some(r) = w.strip_prefix(p) {
            if r.starts_with(|c: char| c.is_ascii_uppercase()) && r.len() > 2 {
                return Some(if p == "cuda" { ("cuda", r) } else { ("hip", r) });
            }
        }
    }
    None
}

/// First camel-case word: `LimitStackSize` -> `Limit`.
fn first_word(r: &str) -> &str {
    let end = r
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c.is_ascii_uppercase() || c == '_')
        .map_or(r.len(), |(i, _)| i);
    &r[..end]
}

/// Levenshtein distance over bytes (names are short).
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Names a branch uses: every runtime name (for "has a counterpart") and the value uses
/// (not called) with their first token.
#[derive(Default)]
struct Uses<'a> {
    all: BTreeSet<(&'static str, &'a str)>,
    values: BTreeMap<(&'static str, &'a str), usize>,
}

pub fn check(cx: &mut Cx) {
    if !cx.has("cuda") || !cx.has("hip") {
        return;
    }
    let src = cx.src;
    // per branch, the runtime names of its tokens (nested branches count for every ancestor)
    let mut per: BTreeMap<u32, Uses> = BTreeMap::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Ident) {
            continue;
        }
        let Some((p, r)) = runtime_name(src.s(k)) else {
            continue;
        };
        let value = src.s(k + 1) != "(" && src.s(k.wrapping_sub(1)) != "#";
        for (b, _) in src.ancestors(src.toks[k].branch) {
            let u = per.entry(b).or_default();
            u.all.insert((p, r));
            if value {
                u.values.entry((p, r)).or_insert(k);
            }
        }
    }
    let mut sites: Vec<(usize, String, String)> = Vec::new();
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if br.platform != Platform::Nvidia || br.dead {
            continue;
        }
        let Some(nv) = per.get(&(bi as u32)) else {
            continue;
        };
        // the other branches of the same chain that use HIP names
        for (hi, hb) in src.branches.iter().enumerate().skip(1) {
            if hi == bi || hb.group != br.group || hb.platform == Platform::Nvidia || hb.dead {
                continue;
            }
            let Some(amd) = per.get(&(hi as u32)) else {
                continue;
            };
            let lone_cuda: Vec<&str> = nv
                .values
                .keys()
                .filter(|(p, r)| *p == "cuda" && !amd.all.contains(&("hip", *r)))
                .map(|(_, r)| *r)
                .collect();
            for (&(p, y), &tok) in &amd.values {
                if p != "hip" || nv.all.contains(&("cuda", y)) {
                    continue;
                }
                let family: Vec<&str> = lone_cuda
                    .iter()
                    .copied()
                    .filter(|x| first_word(x) == first_word(y))
                    .collect();
                // one candidate, and not a systematic rename of it
                if let [x] = family.as_slice() {
                    if distance(x, y) > 3.max(x.len().min(y.len()) / 4) {
                        sites.push((tok, format!("cuda{x}"), format!("hip{y}")));
                    }
                }
            }
        }
    }
    sites.sort();
    sites.dedup();
    for (tok, cuda, hip) in sites {
        let msg = format!(
            "the HIP branch uses `{hip}` where the CUDA branch uses `{cuda}`; HIP's name for that is `hip{}`, so AMD builds {} something else",
            &cuda[4..],
            if cuda.contains("Limit") || cuda.contains("Attribute") || cuda.contains("Attr") {
                "set or read"
            } else {
                "use"
            }
        );
        cx.report(
            &META,
            tok,
            tok,
            msg,
            "use the HIP name of the CUDA constant (`cudaX` is `hipX`), or say why the platforms differ",
        );
    }
}
