//! `device-qualifier-nvidia-only`: a macro that gives functions their `__host__ __device__`
//! qualifiers is defined so only under a CUDA compiler test (`#ifdef __CUDACC__`), with no HIP
//! branch: the HIP compiler does not define `__CUDACC__`, so on AMD the functions are host-only.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Platform;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::arch_list_partial_family::cond_idents;

pub static META: RuleMeta = RuleMeta {
    id: "device-qualifier-nvidia-only",
    summary: "`__host__ __device__` qualifier macro defined only under `#ifdef __CUDACC__`: host-only functions under HIP",
    what: "Finds an object-like `#define` whose body holds `__device__` or `__host__` (a qualifier macro such as \
`HOST_DEVICE`, `DEVICE_INLINE`) inside a branch selected by a CUDA compiler macro (`__CUDACC__`, `__NVCC__`, \
`__CUDA_ARCH__`), when no condition of the same `#if` chain names HIP or AMD (`__HIPCC__`, `__HIP__`, \
`__HIP_PLATFORM_AMD__`, `USE_ROCM`, ...) and the file defines the macro with device qualifiers in no other branch. \
The condition is reported once per chain.",
    why: "clang in HIP mode (hipcc, `-x hip`) defines `__HIPCC__` and `__HIP__` but not `__CUDACC__` or `__NVCC__` \
(checked with `clang-19 -x hip -E -dM`), and no HIP pass defines `__CUDA_ARCH__`. Under HIP the macro takes its \
`#else` definition, usually empty, so every function declared with it is a host function: kernels that call it fail \
to compile for AMD (\"reference to __host__ function in __global__ function\"), or, where the code also branches on \
the same macro inside the function, the host branch (`std::sort`, `assert`) is the one compiled.",
    example: "#ifdef __CUDACC__\n#define HOST_DEVICE __host__ __device__\n#else\n#define HOST_DEVICE\n#endif\n\nHOST_DEVICE inline float area(float w, float h) { return w * h; }",
    use_instead: "#if defined(__CUDACC__) || defined(__HIPCC__)\n#define HOST_DEVICE __host__ __device__\n#else\n#define HOST_DEVICE\n#endif\n\nHOST_DEVICE inline float area(float w, float h) { return w * h; }",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Compiler macros that HIP never defines.
fn cuda_compiler_macro(w: &str) -> bool {
    matches!(w, "__CUDACC__" | "__NVCC__" | "__CUDA_ARCH__")
}

/// A condition word that names HIP or AMD: the chain has a branch for them.
fn names_hip(w: &str) -> bool {
    let u = w.to_ascii_uppercase();
    u.contains("HIP") || u.contains("AMD") || u.contains("ROCM") || u.contains("HCC")
}

/// Whether `body` holds `__device__` or `__host__` as a word.
fn has_qualifier(body: &str) -> bool {
    cond_idents(body)
        .iter()
        .any(|&(_, w, _)| w == "__device__" || w == "__host__")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__device__") || cx.has("__host__")) || !cx.has("#") {
        return;
    }
    let src = cx.src;
    let text = src.text;
    let cond_of = |b: &crate::lex::Branch| -> &str {
        text.get(b.cond.0 as usize..b.cond.1 as usize).unwrap_or("")
    };
    // groups with a condition that names HIP or AMD
    let mut hip_group = vec![false; src.groups.len()];
    for br in src.branches.iter().skip(1) {
        // a HIP word counts only where it is tested positively (`!defined(__HIPCC__)` in
        // `defined(__CUDACC__) && !defined(__HIPCC__)` keeps HIP out)
        if cond_idents(cond_of(br))
            .iter()
            .any(|&(_, w, neg)| names_hip(w) && !neg)
        {
            if let Some(h) = hip_group.get_mut(br.group as usize) {
                *h = true;
            }
        }
    }
    let name_of = |d: &crate::lex::Define| -> &str {
        text.get(d.name_start as usize..d.name_end as usize)
            .unwrap_or("")
    };
    // the body's text, from its first token's start to its last token's end
    let body_of = |d: &crate::lex::Define| -> &str {
        if d.body.1 <= d.body.0 || d.body.1 as usize > src.toks.len() {
            return "";
        }
        let (s, _) = src.span(d.body.0 as usize);
        let (_, e) = src.span(d.body.1 as usize - 1);
        text.get(s..e).unwrap_or("")
    };
    let mut reported: Vec<u32> = Vec::new();
    for d in &src.defines {
        if d.function_like || !has_qualifier(body_of(d)) {
            continue;
        }
        let Some(br) = src.branches.get(d.branch as usize) else {
            continue;
        };
        if d.branch == 0 || br.is_alternative || br.dead || br.platform != Platform::Nvidia {
            continue;
        }
        let cond = cond_of(br);
        let idents = cond_idents(cond);
        // the test must be a CUDA compiler macro, taken when it is defined
        if !idents
            .iter()
            .any(|&(_, w, negated)| cuda_compiler_macro(w) && !negated && !cond.contains("ifndef"))
        {
            continue;
        }
        if hip_group.get(br.group as usize).copied().unwrap_or(true) {
            continue;
        }
        // the enclosing code is NVIDIA-only already: AMD never reads the chain
        if src.branch_platform(br.parent) == Platform::Nvidia {
            continue;
        }
        // the same macro given device qualifiers elsewhere in the file (another chain for HIP)
        let name = name_of(d);
        let elsewhere = src.defines.iter().any(|e| {
            e.branch != d.branch
                && name_of(e) == name
                && has_qualifier(body_of(e))
                && src.branch_platform(e.branch) != Platform::Nvidia
        });
        if elsewhere || reported.contains(&br.group) {
            continue;
        }
        reported.push(br.group);
        let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
            return;
        };
        let test = idents
            .iter()
            .find(|&&(_, w, _)| cuda_compiler_macro(w))
            .map(|&(_, w, _)| w)
            .unwrap_or("__CUDACC__");
        // a file that defines the CUDA macro itself for HIP (a shim) decides its own value
        if src.defines_macro(test) {
            continue;
        }
        // with no other definition of the name the macro is simply undefined under HIP
        let defined_otherwise = src
            .defines
            .iter()
            .any(|e| e.branch != d.branch && name_of(e) == name);
        let what = if defined_otherwise {
            format!("under HIP the functions declared with `{name}` are host-only, and device code calling them does not compile for AMD")
        } else {
            format!("under HIP `{name}` is not defined at all, so every declaration that uses it fails to compile for AMD")
        };
        let msg = format!(
            "`{name}` gets its `{}` qualifiers only when `{test}` is defined, which the HIP compiler never defines: {what}",
            body_of(d).split_whitespace().collect::<Vec<_>>().join(" ")
        );
        cx.report_span(
            &META,
            sev,
            targets,
            br.cond.0 as usize,
            br.cond.1 as usize,
            msg,
            "test `defined(__CUDACC__) || defined(__HIPCC__)` (or give HIP its own branch)",
        );
    }
}
