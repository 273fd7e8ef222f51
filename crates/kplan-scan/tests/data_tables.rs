//! The name tables the rules read from `data/`: well formed, and they say what their sources say.

const CUDA_WITHOUT_HIP: &str = include_str!("../data/cuda-api-without-hip.tsv");
const ROCM_REMOVED: &str = include_str!("../data/rocm-removed-api.tsv");

fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split('\t').collect())
        .collect()
}

#[test]
fn cuda_names_without_hip_are_sorted_unique_and_sourced() {
    assert!(CUDA_WITHOUT_HIP.starts_with(
        "# CUDA names with no HIP or ROCm-library equivalent in ROCm/HIPIFY's support tables at "
    ));
    let r = rows(CUDA_WITHOUT_HIP);
    assert!(r.len() > 2500, "{}", r.len());
    let names: Vec<&str> = r.iter().map(|x| x[0]).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "sorted and unique");
    for x in &r {
        assert_eq!(x.len(), 3, "{x:?}");
        assert!(
            x[0].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'),
            "{x:?}"
        );
        assert!(
            [
                "runtime", "driver", "nvrtc", "cublas", "cusparse", "curand", "cufft", "cusolver",
                "cudnn"
            ]
            .contains(&x[1]),
            "{x:?}"
        );
    }
    // names HIPIFY maps (HIP has them) are not in the table
    for mapped in [
        "cudaMalloc",
        "cudaMemcpyAsync",
        "cublasSgemm",
        "cudaFuncSetAttribute",
        "cusparseSpMV",
    ] {
        assert!(!names.contains(&mapped), "{mapped}");
    }
    // names MIOpen or a roc* library maps are not in it either
    for mapped in ["cudnnBackendExecute", "CUDNN_16BIT_INDICES"] {
        assert!(!names.contains(&mapped), "{mapped}");
    }
    for unmapped in [
        "cudaDeviceFlushGPUDirectRDMAWrites",
        "cudaGraphicsEGLRegisterImage",
    ] {
        assert!(names.contains(&unmapped), "{unmapped}");
    }
}

#[test]
fn rocm_removed_names_name_their_release_and_source() {
    let r = rows(ROCM_REMOVED);
    assert!(r.len() >= 50);
    for x in &r {
        assert_eq!(x.len(), 5, "{x:?}");
        assert!(x[2].starts_with("6.") || x[2].starts_with("7."), "{x:?}");
        assert!(!x[3].is_empty() && !x[4].is_empty(), "{x:?}");
    }
}
