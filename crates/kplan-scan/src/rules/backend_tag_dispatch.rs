//! `backend-tag-dispatch`: a compile-time choice on backend types (`if constexpr
//! (std::is_same_v<Exec, Kokkos::Cuda>)`, alpaka's `accMatchesTags<Acc, TagGpuCudaRt>`) that
//! names the CUDA backend but not its HIP sibling, or that gives the HIP backend a 32-lane warp.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "backend-tag-dispatch",
    summary: "compile-time backend dispatch names the CUDA backend without its HIP sibling, or gives HIP 32 lanes",
    what: "Reads the conditions of `if constexpr (...)` and `if (...)` that test types (`std::is_same`, \
`is_same_v`, `is_base_of`, `accMatchesTags`) in files that also name a HIP backend (a type, tag or macro with `HIP` as a \
word: `Kokkos::HIP`, `TagGpuHipRt`, `KOKKOS_ENABLE_HIP`). (1) A condition that names a CUDA backend type \
(`Kokkos::Cuda`, `TagGpuCudaRt`, `CudaSpace`) and no HIP one, when no other condition of the file names the \
HIP sibling: the HIP backend takes the other branch, which was written for the remaining backends (often the \
CPU ones). Value tests (`CUDA_VERSION >= 12000`, `kUseCudaGraphs`) and namespaces (`cuda::std`) are no backend \
types, and a file that gives HIP a type test of its own anywhere is left alone. (2) A condition that names a HIP backend and whose branch returns or assigns 32 in a function or \
variable named for the warp size (`getWarpSize()`, `warp_size`): an error when a wave64 target is in scope, a \
note otherwise.",
    why: "Performance-portability layers (Kokkos, alpaka, RAJA, SYCL-style wrappers) select code per backend \
with types, not with the preprocessor. A branch keyed on the CUDA type alone sends HIP to the generic branch: \
a host-style work division (one thread per block), a serial algorithm, or a missing GPU tuning. A warp size \
of 32 keyed on a HIP type is the 32-lane assumption itself: CDNA wavefronts have 64 lanes.",
    example: "#ifdef ALPAKA_ACC_GPU_HIP_ENABLED\nusing Acc = alpaka::AccGpuHipRt<Dim, Idx>;\n#endif\ntemplate <typename Acc>\nWorkDiv makeWorkDiv(Idx blocks, Idx threads) {\n    if constexpr (alpaka::accMatchesTags<Acc, alpaka::TagGpuCudaRt>) {\n        return WorkDiv{blocks, threads, Idx{1}};\n    } else {\n        return WorkDiv{blocks, Idx{1}, threads};   // CPU: one thread, many elements\n    }\n}",
    use_instead: "#ifdef ALPAKA_ACC_GPU_HIP_ENABLED\nusing Acc = alpaka::AccGpuHipRt<Dim, Idx>;\n#endif\ntemplate <typename Acc>\nWorkDiv makeWorkDiv(Idx blocks, Idx threads) {\n    if constexpr (alpaka::accMatchesTags<Acc, alpaka::TagGpuCudaRt, alpaka::TagGpuHipRt>) {\n        return WorkDiv{blocks, threads, Idx{1}};\n    } else {\n        return WorkDiv{blocks, Idx{1}, threads};\n    }\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The words of an identifier: `TagGpuCudaRt` -> tag, gpu, cuda, rt; `KOKKOS_ENABLE_HIP` ->
/// kokkos, enable, hip; `HIPSpace` -> hip, space (an upper-case run ends before the capital that
/// starts the next word).
fn words(w: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in w.split('_').filter(|p| !p.is_empty()) {
        let cs: Vec<char> = part.chars().collect();
        let mut cur = String::new();
        for (i, &c) in cs.iter().enumerate() {
            let boundary = i > 0
                && c.is_ascii_uppercase()
                && (cs[i - 1].is_ascii_lowercase()
                    || cs[i - 1].is_ascii_digit()
                    || cs.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()));
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur).to_ascii_lowercase());
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur.to_ascii_lowercase());
        }
    }
    out
}

fn has_word(w: &str, word: &str) -> bool {
    words(w).iter().any(|x| x == word)
}

/// A HIP backend name: `Kokkos::HIP`, `TagGpuHipRt`, `HIPSpace`, `KOKKOS_ENABLE_HIP`, `Rocm`.
fn hip_name(w: &str) -> bool {
    has_word(w, "hip") || has_word(w, "rocm")
}

/// Whether the condition at tokens `a..b` is a test on types (`std::is_same_v<...>`,
/// `accMatchesTags<...>`), not on a value (`CUDA_VERSION >= 12000`, `kUseCudaGraphs`).
fn type_test(cx: &Cx, a: usize, b: usize) -> bool {
    cx.any_ident(a, b, |w| {
        matches!(
            w,
            "is_same" | "is_same_v" | "accMatchesTags" | "is_base_of" | "is_base_of_v"
        )
    })
}

/// A backend type in a type test: an identifier used as a type (not a namespace: `cuda::std`,
/// not a call, not an all-capitals macro: `CUDA_VERSION`) whose words name the backend.
fn backend_type(cx: &Cx, k: usize, word: &str) -> bool {
    let src = cx.src;
    let w = src.s(k);
    let macro_like = w.contains('_')
        && w.bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit());
    src.kind(k) == Some(Tk::Ident)
        && src.s(k + 1) != "::"
        && src.s(k + 1) != "("
        && !macro_like
        && (has_word(w, word) || (word == "hip" && has_word(w, "rocm")))
}

/// The function or variable the token `i` sits in, by name: the nearest enclosing `{` that
/// follows a parameter list `name(...)` whose name is not a keyword.
fn enclosing_function<'a>(cx: &Cx<'_, 'a, '_>, i: usize) -> Option<&'a str> {
    let src = cx.src;
    let mut k = i;
    for _ in 0..64 {
        let d = src.toks.get(k)?.depth;
        if d == 0 {
            return None;
        }
        // the `{` that opens the block holding `k`
        let open = (0..k)
            .rev()
            .find(|&j| src.s(j) == "{" && src.toks[j].depth == d - 1)?;
        let mut p = open.checked_sub(1)?;
        while matches!(
            src.s(p),
            "const" | "noexcept" | "override" | "final" | "mutable"
        ) {
            p = p.checked_sub(1)?;
        }
        if src.s(p) == ")" {
            let o = src.mate(p)?;
            let name = o.checked_sub(1)?;
            if src.kind(name) == Some(Tk::Ident)
                && !matches!(
                    src.s(name),
                    "if" | "for" | "while" | "switch" | "constexpr" | "catch"
                )
            {
                return Some(src.s(name));
            }
        }
        k = open;
    }
    None
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("constexpr") || cx.has("is_same") || cx.has("accMatchesTags")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // (start, end) of each type-test condition, and whether `if constexpr`
    let mut conds: Vec<(usize, usize)> = Vec::new();
    for k in 0..n {
        if !src.is(k, "if") {
            continue;
        }
        let open = if src.is(k + 1, "constexpr") {
            k + 2
        } else {
            k + 1
        };
        if src.s(open) != "(" {
            continue;
        }
        let Some(close) = src.mate(open) else {
            continue;
        };
        if type_test(cx, open, close) {
            conds.push((open, close));
        }
    }
    if conds.is_empty() {
        return;
    }
    // the file names a HIP backend somewhere (code or preprocessor conditions)
    let hip_in_file = (0..n).any(|k| src.kind(k) == Some(Tk::Ident) && hip_name(src.s(k)))
        || src.cond_macros().iter().any(|m| hip_name(m.name));
    if !hip_in_file {
        return;
    }
    let idents = |a: usize, b: usize| -> Vec<usize> {
        (a..=b)
            .filter(|&k| src.kind(k) == Some(Tk::Ident))
            .collect()
    };
    // per test: its CUDA backend types and whether it names a HIP one
    let tests: Vec<(usize, usize, Vec<usize>, bool)> = conds
        .iter()
        .map(|&(open, close)| {
            let ids = idents(open, close);
            let cuda: Vec<usize> = ids
                .iter()
                .copied()
                .filter(|&k| backend_type(cx, k, "cuda"))
                .collect();
            let hip = ids.iter().any(|&k| backend_type(cx, k, "hip"));
            (open, close, cuda, hip)
        })
        .collect();
    // HIP has a branch of its own somewhere: a type test that names a HIP backend and no CUDA
    // one (`CudaUVMSpace` and `HIPManagedSpace` need not be spelled alike)
    let hip_branch = tests
        .iter()
        .any(|(_, _, cuda, hip)| *hip && cuda.is_empty());
    let mut cuda_only: Vec<(usize, usize, String)> = Vec::new();
    let mut hip32: Vec<(usize, String)> = Vec::new();
    for &(open, close, ref cuda, hip) in &tests {
        if src.platform(open) == Platform::Nvidia {
            continue;
        }
        if let (Some(&c), false) = (cuda.first(), hip) {
            if !hip_branch {
                cuda_only.push((open, close, src.s(c).to_string()));
            }
        }
        if hip {
            // the branch: `{ ... }` after the condition, or one statement
            let body_end = if src.s(close + 1) == "{" {
                src.mate(close + 1).unwrap_or(close + 1)
            } else {
                (close + 1..n)
                    .find(|&j| src.s(j) == ";")
                    .unwrap_or(close + 1)
            };
            for j in close + 1..body_end {
                if src.int(j) != Some(32) {
                    continue;
                }
                let returned = src.s(j - 1) == "return" && src.s(j + 1) == ";";
                let assigned =
                    src.s(j - 1) == "=" && j >= 2 && crate::index::warp_word(src.s(j - 2));
                let in_warp_fn = enclosing_function(cx, j).is_some_and(|f| {
                    let l = f.to_ascii_lowercase();
                    (l.contains("warp") || l.contains("wave")) && l.contains("size")
                });
                if (returned && in_warp_fn) || assigned {
                    hip32.push((j, cx.snippet(open, close)));
                }
            }
        }
    }
    for (open, close, name) in cuda_only {
        let msg = format!(
            "`{}` selects the CUDA backend (`{name}`) and no HIP one, though this file builds for HIP: the HIP backend takes the other branch",
            cx.snippet(open, close)
        );
        cx.report(
            &META,
            open,
            close,
            msg,
            "name the HIP backend in the same test, or give it its own branch",
        );
    }
    for (j, cond) in hip32 {
        let Some((_, targets)) = cx.ctx.scope_severity(&META) else {
            continue;
        };
        let wave64 = cx.ctx.wave64_targets();
        let (sev, targets) = if wave64.is_empty() {
            (Severity::Note, targets)
        } else {
            (Severity::Error, wave64)
        };
        let msg = format!(
            "a warp size of 32 for a backend test that names HIP (`{cond}`): CDNA wavefronts have 64 lanes"
        );
        cx.report_with(
            &META,
            sev,
            targets,
            j,
            j,
            msg,
            "give HIP the device's width (`warpSize` at run time, or 64 for CDNA and 32 for RDNA)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn identifier_words() {
        assert_eq!(words("TagGpuCudaRt"), ["tag", "gpu", "cuda", "rt"]);
        assert_eq!(words("HIPSpace"), ["hip", "space"]);
        assert_eq!(words("KOKKOS_ENABLE_HIP"), ["kokkos", "enable", "hip"]);
        assert_eq!(words("Cuda"), ["cuda"]);
        assert!(!words("chip").contains(&"hip".to_string()));
    }
}
