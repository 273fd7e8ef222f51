//! `cuda-api-missing-in-hip`: a CUDA runtime, driver or library name (cuBLAS, cuSPARSE, cuRAND,
//! cuFFT, cuSOLVER, cuDNN, NVRTC) that has no HIP equivalent, used where the HIP compiler reads it.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use std::collections::HashMap;
use std::sync::OnceLock;

pub static META: RuleMeta = RuleMeta {
    id: "cuda-api-missing-in-hip",
    summary: "a CUDA runtime, driver or library API name that has no HIP equivalent",
    what: "Finds names of the CUDA runtime and driver APIs, NVRTC, cuBLAS/cuBLASLt, cuSPARSE, cuRAND, cuFFT, \
cuSOLVER and cuDNN (functions, types, enumerators, macros) that ROCm's HIPIFY support tables list without a \
HIP equivalent and that no ROCm library table (rocBLAS, rocSPARSE, rocRAND, rocSOLVER, MIOpen) maps either, \
outside CUDA-only branches and macro bodies, unless the project defines or declares the name itself (a shim \
macro, a `typedef`, `struct`, `enum` or function of that name): `cudaDeviceFlushGPUDirectRDMAWrites`, the \
EGL/D3D/VDPAU interop, cuDNN calls MIOpen does not map, the cuSOLVER and cuBLASLt names no ROCm library \
maps, and about 3,000 more. The first use of each name in a file is reported, with the number of uses. A \
warning: the tables are of 2024-10, and a newer ROCm may have added some. Device functions are `cuda-intrinsic-missing-in-hip`'s; names of \
NVIDIA-only hardware features (clusters, TMA) are `nvidia-only-feature`'s.",
    why: "hipify translates a CUDA name only when HIP has one for it; these it leaves as they are (hipify-perl \
warns, hipify-clang reports them unsupported) and the AMD build fails at the line, or, for a name a project \
declares itself, silently does something else. The list is every name with an empty HIP column in ROCm/HIPIFY's \
`docs/tables/*_supported_by_HIP.md` at 014177bc (2024-10-24), less the names its ROC and MIOpen tables map and \
the names CUDA removed \
(`crates/kplan-scan/data/cuda-api-without-hip.tsv`, derived by `scripts/derive-cuda-api-without-hip.py`). A \
newer ROCm may have added some.",
    example: "void flush_rdma() {\n    cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice, cudaFlushGPUDirectRDMAWritesToOwner);\n}",
    use_instead: "void flush_rdma() {\n#if !defined(__HIP_PLATFORM_AMD__)\n    // NVIDIA only: on AMD the device-scope fence of the producer kernel orders the writes\n    cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice, cudaFlushGPUDirectRDMAWritesToOwner);\n#endif\n}",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

const DATA: &str = include_str!("../../data/cuda-api-without-hip.tsv");

/// Name -> (library, CUDA version that added it).
fn table() -> &'static HashMap<&'static str, (&'static str, &'static str)> {
    static T: OnceLock<HashMap<&'static str, (&'static str, &'static str)>> = OnceLock::new();
    T.get_or_init(|| {
        DATA.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| {
                let mut it = l.split('\t');
                Some((it.next()?, (it.next()?, it.next().unwrap_or(""))))
            })
            .collect()
    })
}

/// Whether `name` is a CUDA API name HIP has no equivalent for.
pub fn missing_in_hip(name: &str) -> bool {
    // the table's prefixes, checked before the hash look-up: `cute::`/`cutlass::` and other
    // words that merely start with `cu` are most identifiers of an NVIDIA tree
    let b = name.as_bytes();
    let prefix = name.starts_with("cuda")
        || name.starts_with("cublas")
        || name.starts_with("cusparse")
        || name.starts_with("cusolver")
        || name.starts_with("curand")
        || name.starts_with("cufft")
        || name.starts_with("cudnn")
        || name.starts_with("CU")
        || name.starts_with("nvrtc")
        || name.starts_with("CIG")
        || (b.len() > 2 && b[0] == b'c' && b[1] == b'u' && b[2].is_ascii_uppercase());
    prefix && table().contains_key(name)
}

fn library_label(lib: &str) -> &'static str {
    match lib {
        "runtime" => "CUDA runtime",
        "driver" => "CUDA driver API",
        "nvrtc" => "NVRTC",
        "cublas" => "cuBLAS",
        "cusparse" => "cuSPARSE",
        "curand" => "cuRAND",
        "cufft" => "cuFFT",
        "cusolver" => "cuSOLVER",
        "cudnn" => "cuDNN",
        _ => "CUDA",
    }
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("cu") || cx.has("CU") || cx.has("nvrtc")) {
        return;
    }
    let src = cx.src;
    let mut first: Vec<(usize, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    // per name: whether the file defines it as a macro (one look-up per name, not per use)
    let mut own_macro: HashMap<&str, bool> = HashMap::new();
    for k in 0..src.toks.len() {
        if src.kind(k) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(k);
        if !missing_in_hip(w) {
            continue;
        }
        // a macro body (`#define CU_A CU_B`, a compatibility name) is read where it is used
        if src.toks[k].flags & crate::lex::IN_DEFINE != 0 {
            continue;
        }
        let prev = if k > 0 { src.s(k - 1) } else { "" };
        // a definition or declaration of the name as a function (`inline CUresult
        // cuMemcpyPeer(...)`, a polyfill): the project's own
        let declares = k > 0
            && src.kind(k - 1) == Some(Tk::Ident)
            && !super::hip_api_removed::NON_TYPE_WORDS.contains(&prev)
            && src.s(k + 1) == "(";
        if declares
            || matches!(prev, "." | "->" | "define" | "ifdef" | "ifndef" | "defined")
            || *own_macro.entry(w).or_insert_with(|| src.defines_macro(w))
            || cx.index.intrinsic_shims.contains(w)
            || super::nvidia_only_feature::names_feature(w, src.s(k + 1))
        {
            continue;
        }
        if src.platform(k) == Platform::Nvidia {
            continue;
        }
        match index.get(w) {
            Some(&n) => first[n].1 += 1,
            None => {
                index.insert(w, first.len());
                first.push((k, 1));
            }
        }
    }
    for (k, count) in first {
        let w = src.s(k);
        let lib = table()
            .get(w)
            .map(|(l, _)| library_label(l))
            .unwrap_or("CUDA");
        let more = if count > 1 {
            format!(" ({count} uses in this file)")
        } else {
            String::new()
        };
        let msg = format!(
            "`{w}` ({lib}) has no HIP or ROCm-library equivalent in HIPIFY's tables (2024-10): hipify leaves it and the AMD build fails here unless a newer ROCm added it{more}"
        );
        cx.report(
            &META,
            k,
            k,
            msg,
            "keep it in the NVIDIA branch of a platform test (`#if !defined(__HIP_PLATFORM_AMD__)`) and give AMD its own path or none, or use an API both vendors have",
        );
    }
}
