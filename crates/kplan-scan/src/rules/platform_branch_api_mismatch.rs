//! `platform-branch-api-mismatch`: the HIP branch of a per-platform choice names a different
//! runtime constant than the CUDA branch it mirrors (`cudaLimitStackSize` against
//! `hipLimitMallocHeapSize`).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "platform-branch-api-mismatch",
    summary: "the HIP branch names a different runtime constant than the CUDA branch it mirrors",
    what: "Reads each `#if`/`#elif`/`#else` chain that has a CUDA-only branch (`__CUDACC__`, \
`KOKKOS_ENABLE_CUDA`, `!defined(USE_ROCM)`, ...) and another branch that calls the HIP runtime. When both \
branches make the same call (`cudaDeviceSetLimit` and `hipDeviceSetLimit`, the same number of arguments) and \
pass a runtime constant at the same position, it reports a HIP constant that is not the CUDA one's HIP name \
(`hipLimitMallocHeapSize` where the CUDA branch passes `cudaLimitStackSize`), when both are of the same family \
and differ by more than HIP's systematic renames (`cudaDevAttr*` is `hipDeviceAttribute*`, `cudaHostAlloc*` \
is `hipHostMalloc*`). Calls of different functions \
(`hipMalloc` against `cudaMallocManaged`) and constants with no counterpart call are left alone: those are \
choices.",
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

/// Whether HIP's `y` can be a rename of CUDA's `x` rather than another constant: HIP renamed
/// some families (`cudaDevAttr*` is `hipDeviceAttribute*`, `cudaHostAlloc*` is
/// `hipHostMalloc*`), so only constants of the same family (first word) that differ by more
/// than a few letters are another constant.
fn other_constant(x: &str, y: &str) -> bool {
    first_word(x) == first_word(y) && distance(x, y) > 3.max(x.len().min(y.len()) / 4)
}

/// A runtime call in a branch: the function's name after its prefix (`DeviceSetLimit`) and,
/// per argument, the runtime constant it is when it is one identifier (`LimitStackSize`).
struct Call<'a> {
    func: &'a str,
    args: Vec<Option<(&'a str, usize)>>,
}

pub fn check(cx: &mut Cx) {
    if !cx.has("cuda") || !cx.has("hip") {
        return;
    }
    let src = cx.src;
    // runtime calls per branch (a call counts for its own branch only: nested choices are
    // compared at their own level)
    let mut calls: std::collections::HashMap<u32, Vec<(&'static str, Call)>> =
        std::collections::HashMap::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Ident) || src.s(k + 1) != "(" {
            continue;
        }
        let Some((p, func)) = runtime_name(src.s(k)) else {
            continue;
        };
        let args = cx
            .call_args(k + 1)
            .into_iter()
            .map(|(a, b)| {
                (a == b && src.kind(a) == Some(Tk::Ident))
                    .then(|| {
                        runtime_name(src.s(a))
                            .filter(|(q, _)| *q == p)
                            .map(|(_, r)| (r, a))
                    })
                    .flatten()
            })
            .collect();
        calls
            .entry(src.toks[k].branch)
            .or_default()
            .push((p, Call { func, args }));
    }
    let mut sites: Vec<(usize, String, String)> = Vec::new();
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if br.platform != Platform::Nvidia || br.dead {
            continue;
        }
        let Some(nv) = calls.get(&(bi as u32)) else {
            continue;
        };
        for (hi, hb) in src.branches.iter().enumerate().skip(1) {
            if hi == bi || hb.group != br.group || hb.platform == Platform::Nvidia || hb.dead {
                continue;
            }
            let Some(amd) = calls.get(&(hi as u32)) else {
                continue;
            };
            // the same call in both branches (`cudaDeviceSetLimit` / `hipDeviceSetLimit`), one
            // runtime constant per argument position, spelled differently
            for (hp, hc) in amd.iter().filter(|(p, _)| *p == "hip") {
                let twins: Vec<&Call> = nv
                    .iter()
                    .filter(|(p, c)| {
                        *p == "cuda" && c.func == hc.func && c.args.len() == hc.args.len()
                    })
                    .map(|(_, c)| c)
                    .collect();
                let _ = hp;
                if twins.is_empty() {
                    continue;
                }
                for (i, arg) in hc.args.iter().enumerate() {
                    let Some((y, tok)) = arg else { continue };
                    // every twin passes a constant there, none passes this one
                    let theirs: Vec<&str> = twins
                        .iter()
                        .filter_map(|c| c.args[i].map(|(x, _)| x))
                        .collect();
                    if theirs.len() == twins.len()
                        && !theirs.contains(y)
                        && theirs.iter().all(|x| other_constant(x, y))
                    {
                        if let Some(x) = theirs.first() {
                            sites.push((*tok, format!("cuda{x}"), format!("hip{y}")));
                        }
                    }
                }
            }
        }
    }
    sites.sort();
    sites.dedup();
    for (tok, cuda, hip) in sites {
        let msg = format!(
            "the HIP branch passes `{hip}` where the CUDA branch's same call passes `{cuda}`; HIP's name for that is `hip{}`",
            &cuda[4..],
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
