//! `shared-memory-optin-on-amd`: the opt-in shared-memory size (`sharedMemPerBlockOptin` and
//! its attribute spellings) read in code compiled for AMD, where there is no opt-in.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "shared-memory-optin-on-amd",
    summary: "opt-in shared-memory size (`sharedMemPerBlockOptin`) read where AMD has no opt-in",
    what: "Finds reads of the opt-in shared-memory limit in code that is compiled for AMD (outside branches \
that only NVIDIA compiles): the `sharedMemPerBlockOptin` device property, the \
`cudaDevAttrMaxSharedMemoryPerBlockOptin` / `hipDeviceAttributeSharedMemPerBlockOptin` attributes and the \
driver API's `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, in CUDA spelling or hipified.",
    why: "On NVIDIA the opt-in size (227 KiB on Hopper) is what a block gets after \
`cudaFuncSetAttribute(..., MaxDynamicSharedMemorySize, ...)`, far above the 48 KiB default, so tile \
choices and launch checks are made against it. AMD GPUs have no opt-in: a workgroup gets the LDS size (64 KiB \
on CDNA2/3 and RDNA, 160 KiB on gfx950) and nothing more. HIP reported `sharedMemPerBlockOptin` as 0 until \
mid-2024 ROCm releases and reports the plain per-block size since: a check against it rejects every launch \
on older ROCm, and a configuration chosen from it on NVIDIA's terms does not fit.",
    example: "cudaDeviceProp prop;\ncudaGetDeviceProperties(&prop, dev);\nconst size_t limit = prop.sharedMemPerBlockOptin;\nTORCH_CHECK(smem <= limit, \"tile needs too much shared memory\");",
    use_instead: "cudaDeviceProp prop;\ncudaGetDeviceProperties(&prop, dev);\n#if defined(USE_ROCM)\nconst size_t limit = prop.sharedMemPerBlock;  // LDS per workgroup, no opt-in on AMD\n#else\nconst size_t limit = prop.sharedMemPerBlockOptin;\n#endif\nTORCH_CHECK(smem <= limit, \"tile needs too much shared memory\");",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The opt-in limit's spellings (property, runtime attribute, driver attribute).
fn optin_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("sharedmemperblockoptin")
        || l.contains("sharedmemoryperblockoptin")
        || l.contains("shared_memory_per_block_optin")
}

/// The plain per-block limit's spellings (no opt-in).
fn plain_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    !optin_name(s)
        && (l == "sharedmemperblock"
            || l.ends_with("maxsharedmemoryperblock")
            || l.ends_with("max_shared_memory_per_block"))
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("ptin") || cx.has("PTIN")) {
        return;
    }
    let src = cx.src;
    let amd = cx.ctx.vendor_targets(Vendor::Amd);
    if amd.is_empty() {
        return;
    }
    let lds = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .filter_map(|t| t.shared_max().map(|b| (b, t.id().to_string())))
        .min();
    let lds_by_arch: Vec<(u64, String)> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .filter_map(|t| t.shared_max().map(|b| (b, t.id().to_string())))
        .collect();
    let lds_all: Vec<u64> = lds_by_arch.iter().map(|(b, _)| *b).collect();
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) || !optin_name(src.s(i)) || cx.nv_only(i) {
            continue;
        }
        // a declaration of the field or the enumerator itself (a HIP or CUDA header)
        if i > 0
            && (src.kind(i - 1) == Some(Tk::Ident) && !matches!(src.s(i - 1), "return" | "case"))
            || src.is(i + 1, "=") && !src.is(i + 2, "=")
        {
            continue;
        }
        // a fallback in the same statement (`std::max(optin, sharedMemPerBlock)`,
        // `optin ? optin : sharedMemPerBlock`) is right on every ROCm
        let start = (i.saturating_sub(200)..i)
            .rev()
            .find(|&j| matches!(src.s(j), ";" | "{" | "}"))
            .map_or(0, |j| j + 1);
        let stop = (i..src.toks.len().min(i + 200))
            .find(|&j| src.is(j, ";"))
            .unwrap_or(i);
        if (start..stop).any(|j| j != i && src.kind(j) == Some(Tk::Ident) && plain_name(src.s(j))) {
            continue;
        }
        let limit = match &lds {
            Some((b, _)) if lds_all.iter().all(|x| x == b) => {
                format!(" ({} KiB on every AMD target in scope)", b / 1024)
            }
            Some(_) => format!(
                " ({})",
                lds_by_arch
                    .iter()
                    .map(|(b, a)| format!("{a}: {} KiB", b / 1024))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        };
        let msg = format!(
            "`{}` is NVIDIA's opt-in shared-memory size; AMD has no opt-in: a workgroup gets the LDS size{limit}, and HIP reports this value as 0 on older ROCm",
            src.s(i)
        );
        cx.report(
            &META,
            i,
            i,
            msg,
            "on AMD use `sharedMemPerBlock` (the LDS per workgroup) as the limit",
        );
    }
}
