//! `cuda-header-in-hip-build`: a CUDA toolkit header (`<cooperative_groups.h>`, `<cuda_fp16.h>`)
//! included where the HIP compiler reads it, in a file that is compiled for AMD as written.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{pass, Platform};
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "cuda-header-in-hip-build",
    summary: "a CUDA toolkit header included on the HIP compile path of a file written for both",
    what: "In a file that only HIP compiles (a `.hip` file, or one that the include graph makes HIP-only: it \
includes HIP headers and no CUDA header, or only HIP-only files include it), finds `#include`s of CUDA toolkit \
headers that the HIP compiler reaches (outside every CUDA-only branch): `<cooperative_groups.h>`, `<mma.h>`, \
`<cuda_runtime.h>`, `<cuda_fp16.h>`, `<cuda_bf16.h>`, `<cuda_fp8.h>`, `<cuda_pipeline.h>`, `<cub/...>`, \
`<curand_kernel.h>`, the `cu*` library headers, cuDNN and NVTX. Files written for both vendors are left alone, \
since a build that runs hipify over them rewrites the includes and the source does not say which build it goes \
through; so are headers the project ships itself and files in a folder for the NVIDIA side of a per-platform \
tree (`backend/cub/`, `cuda/`).",
    why: "ROCm ships none of these headers under the CUDA names (checked with clang-19 in HIP mode and \
Debian's HIP headers: each `#include` fails with \"file not found\"); HIP's are `hip/hip_cooperative_groups.h`, \
`hip/hip_runtime.h`, `hip/hip_fp16.h`, `hipcub/...`, `hiprand/...`. A file that already branches on HIP \
is compiled by the HIP toolchain as written, so the include breaks the AMD build, or, where a CUDA \
installation is on the include path, pulls NVIDIA's device headers into an AMD compile.",
    example: "#include <hip/hip_runtime.h>\n#include <cooperative_groups.h>",
    use_instead: "#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>",
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
        "mma.h" => "rocwmma/rocwmma.hpp (a port: rocWMMA is not source-compatible)",
        "nvrtc.h" => "hip/hiprtc.h",
        "cuda_pipeline.h"
        | "cuda_pipeline_primitives.h"
        | "cuda_awbarrier.h"
        | "cuda_awbarrier_primitives.h" => "",
        "cudnn.h" => "miopen/miopen.h (a port: MIOpen's API differs)",
        "nvToolsExt.h" => "roctracer/roctx.h",
        _ => {
            return if h.starts_with("cooperative_groups/") {
                Some("hip/hip_cooperative_groups.h")
            } else if h.starts_with("cub/") {
                Some("hipcub/hipcub.hpp")
            } else if h.starts_with("nvtx3/") {
                Some("roctracer/roctx.h")
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
    // only a file HIP alone compiles (a `.hip` file, or one whose includes or includers make
    // it HIP-only): a file a build runs hipify over has its includes rewritten first, and the
    // source does not say which build it goes through
    let unconditional_hip_include = src.includes.iter().any(|inc| {
        src.text
            .get(inc.start as usize..inc.end as usize)
            .is_some_and(|h| h.starts_with("hip/"))
            && src.ancestors(inc.branch).all(|(_, br)| {
                src.groups
                    .get(br.group as usize)
                    .is_some_and(|g| g.include_guard)
            })
    });
    if !(cx.hip_file() || unconditional_hip_include) || nvidia_backend_path(cx.path) {
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
                match instead.split_once(" (") {
                    Some((h, note)) => format!("ROCm's counterpart is `<{h}>` ({note}"),
                    None => format!("ROCm's counterpart is `<{instead}>`"),
                }
            };
            (
                s,
                e,
                format!(
                    "`<{h}>` is a CUDA toolkit header, included outside any CUDA-only branch of a file only HIP compiles; {alt}"
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
