//! `cuda-header-in-hip-build`: a CUDA toolkit header (`<cooperative_groups.h>`, `<cuda_fp16.h>`)
//! included where the HIP compiler reads it, in a file that is compiled for AMD as written.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{pass, Platform};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "cuda-header-in-hip-build",
    summary: "a CUDA toolkit header included on the HIP compile path of a file written for both",
    what: "In a file compiled for AMD as it is written (it tests a HIP platform macro, includes a `hip/` \
header, or is HIP-only by its includes), finds `#include`s of CUDA toolkit headers that the HIP compiler \
reaches (outside every CUDA-only branch): `<cooperative_groups.h>`, `<mma.h>`, `<cuda_runtime.h>`, \
`<cuda_fp16.h>`, `<cuda_bf16.h>`, `<cuda_fp8.h>`, `<cuda_pipeline.h>`, `<cuda/...>`, `<cub/...>`, \
`<curand_kernel.h>`, the `cu*` library headers and NVTX. A file counts as compiled as written when it is HIP-only, \
includes a `hip/` header itself, or tests for HIP in a project that maps CUDA runtime names to HIP ones with \
macros (`#define cudaMalloc hipMalloc`); files a build runs hipify over have their includes rewritten and are \
left alone, and so are files in a folder for the NVIDIA side of a per-platform tree (`backend/cub/`, `cuda/`).",
    why: "ROCm ships none of these headers under the CUDA names (checked with clang-19 in HIP mode and \
Debian's HIP headers: each `#include` fails with \"file not found\"); HIP's are `hip/hip_cooperative_groups.h`, \
`hip/hip_runtime.h`, `hip/hip_fp16.h`, `hipcub/...`, `hiprand/...`. A file that already branches on HIP \
is compiled by the HIP toolchain as written, so the include breaks the AMD build, or, where a CUDA \
installation is on the include path, pulls NVIDIA's device headers into an AMD compile.",
    example: "#if defined(__HIPCC__)\n#include <hip/hip_runtime.h>\n#endif\n#include <cooperative_groups.h>",
    use_instead: "#if defined(__HIPCC__)\n#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n#else\n#include <cooperative_groups.h>\n#endif",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The HIP header to use instead of CUDA toolkit header `h`, or `None` when `h` is no CUDA
/// toolkit header (`Some("")`: a CUDA header with no HIP header of its own).
pub fn hip_replacement(h: &str) -> Option<&'static str> {
    let exact = match h {
        "cooperative_groups.h" => "hip/hip_cooperative_groups.h",
        "cuda_runtime.h" | "cuda_runtime_api.h" | "cuda.h" | "device_launch_parameters.h" => {
            "hip/hip_runtime.h"
        }
        "cuda_fp16.h" | "cuda_fp16.hpp" => "hip/hip_fp16.h",
        "cuda_bf16.h" | "cuda_bf16.hpp" => "hip/hip_bf16.h",
        "cuda_fp8.h" | "cuda_fp8.hpp" => "hip/hip_fp8.h",
        "curand_kernel.h" | "curand.h" => "hiprand/hiprand_kernel.h",
        "cublas_v2.h" | "cublas.h" | "cublasLt.h" => "hipblas/hipblas.h or hipblaslt/hipblaslt.h",
        "cusparse.h" => "hipsparse/hipsparse.h",
        "cufft.h" => "hipfft/hipfft.h",
        "mma.h" => "rocwmma/rocwmma.hpp",
        "nvrtc.h" => "hip/hiprtc.h",
        "cuda_pipeline.h"
        | "cuda_pipeline_primitives.h"
        | "cuda_awbarrier.h"
        | "cuda_awbarrier_primitives.h"
        | "nvToolsExt.h"
        | "cudnn.h" => "",
        _ => {
            return if h.starts_with("cooperative_groups/") {
                Some("hip/hip_cooperative_groups.h")
            } else if h.starts_with("cub/") {
                Some("hipcub/hipcub.hpp")
            } else if h.starts_with("cuda/") || h.starts_with("nvtx3/") {
                Some("")
            } else {
                None
            };
        }
    };
    Some(exact)
}

/// A file kept in a folder for the NVIDIA side of a per-platform tree (`backend/cub/`,
/// `cuda/`, `nvidia/`): the platform's own headers are what it is for.
fn nvidia_backend_path(path: &std::path::Path) -> bool {
    path.parent().is_some_and(|p| {
        p.components().any(|c| {
            let n = c.as_os_str().to_string_lossy().to_ascii_lowercase();
            matches!(n.as_str(), "cub" | "cuda" | "nvidia" | "nvcc" | "nv")
        })
    })
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    if src.includes.is_empty() {
        return;
    }
    // the file is compiled for AMD as written, not rewritten by hipify first: it is HIP-only, it
    // includes HIP headers itself, or it tests for HIP in a project that maps CUDA runtime names
    // to HIP ones with macros (`#define cudaMalloc hipMalloc`)
    let tests_hip = src
        .branches
        .iter()
        .skip(1)
        .any(|b| b.platform == Platform::Amd)
        || src
            .cond_macros()
            .iter()
            .any(|m| crate::lex::classify_macro(m.name) == Platform::Amd);
    let hip_aware = cx.hip_file()
        || (tests_hip && cx.index.cuda_to_hip_shim)
        || src.includes.iter().any(|inc| {
            src.text
                .get(inc.start as usize..inc.end as usize)
                .is_some_and(|h| h.starts_with("hip/"))
        });
    if !hip_aware || nvidia_backend_path(cx.path) {
        return;
    }
    let mut sites = Vec::new();
    for inc in &src.includes {
        let Some(h) = src.text.get(inc.start as usize..inc.end as usize) else {
            continue;
        };
        let Some(instead) = hip_replacement(h) else {
            continue;
        };
        // the project ships a header of that name itself
        if cx.index.header_tails.contains(h) {
            continue;
        }
        if src.branch_platform(inc.branch) == Platform::Nvidia {
            continue;
        }
        let reach = src
            .branches
            .get(inc.branch as usize)
            .map_or(pass::ALL, |b| b.reach);
        if reach & pass::AMD == 0 {
            continue;
        }
        sites.push((inc.start as usize, inc.end as usize, h.to_string(), instead));
    }
    let Some((sev, targets)) = cx.ctx.scope_severity(&META) else {
        return;
    };
    let hits = sites
        .into_iter()
        .map(|(s, e, h, instead)| {
            let alt = if instead.is_empty() {
                "ROCm has no header of that name or content".to_string()
            } else {
                format!("HIP's is `<{instead}>`")
            };
            (
                s,
                e,
                format!(
                    "`<{h}>` is a CUDA toolkit header and this file is compiled by HIP as written, outside any CUDA-only branch; {alt}"
                ),
            )
        })
        .collect();
    cx.report_spans(
        &META,
        sev,
        &targets,
        hits,
        "include it under a CUDA-only condition and the HIP header under the HIP one",
    );
}
