//! The project index: names defined in one header are resolved in another file of the same
//! scan; a file scanned alone knows only its own definitions.

use kplan_kb::Kb;
use kplan_scan::index::ProjectIndex;
use kplan_scan::{scan_paths, scan_text, FileKind, ScanCtx};
use std::path::{Path, PathBuf};

fn tree(files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "kplan-index-{}-{}",
        std::process::id(),
        files.len()
    ));
    let _ = std::fs::remove_dir_all(&d);
    for (p, t) in files {
        let f = d.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    d
}

const HEADER: &str =
    "#pragma once\n#if defined(__GFX9__)\n#define WS 64\n#else\n#define WS 32\n#endif\n";
const LAUNCH: &str = "#include \"ws.h\"\n__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\nvoid go(float* x) {\n    dim3 block(WS, 4);\n    k<<<1, block>>>(x);\n}\n";

#[test]
fn device_only_constant_from_another_header_is_known_in_host_code() {
    let d = tree(&[("ws.h", HEADER), ("launch.cu", LAUNCH)]);
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    let hits: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "device-warp-size-in-host")
        .map(|f| {
            (
                f.path.file_name().unwrap().to_string_lossy().into_owned(),
                f.line,
            )
        })
        .collect();
    assert_eq!(hits, vec![("launch.cu".to_string(), 4)]);
    // alone, the launch file does not know what WS is
    let alone = scan_text(&ctx, &d.join("launch.cu"), FileKind::Cuda, LAUNCH);
    assert!(alone.iter().all(|f| f.rule != "device-warp-size-in-host"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn index_collects_constants_platform_macros_switches_and_ballot_wrappers() {
    let text = "#ifndef SHIM_HIP_H\n#define SHIM_HIP_H\n#ifdef __HIP_PLATFORM_AMD__\n#define HAS_WAVE64_PATH\n#endif\n#if defined(P_USE_CUDA)\n#elif defined(P_USE_HIP)\n#endif\nconstexpr int kTile = 32;\nenum { kLanes = 32, kOther = 7 };\n__device__ unsigned vote(bool p) {\n    return __ballot(p);\n}\n#define BALLOT(p) __ballot(p)\n#define WSZ warpSize\n#endif\n";
    let idx = ProjectIndex::of_text(Path::new("shim.h"), text);
    assert_eq!(idx.const_value("kTile"), Some(32));
    assert_eq!(idx.const_value("kLanes"), Some(32));
    assert_eq!(idx.const_value("kOther"), Some(7));
    use kplan_scan::lex::Platform;
    assert_eq!(idx.env.macros.get("HAS_WAVE64_PATH"), Some(&Platform::Amd));
    assert_eq!(idx.env.macros.get("P_USE_CUDA"), Some(&Platform::Nvidia));
    // the include guard is not a platform macro
    assert!(!idx.env.macros.contains_key("SHIM_HIP_H"));
    assert_eq!(idx.ballot_wrapper("vote"), Some(32));
    assert_eq!(idx.ballot_wrapper("BALLOT"), Some(0));
    assert!(idx.is_device_warp("WSZ"));
}

#[cfg(unix)]
#[test]
fn directory_symlink_into_the_tree_is_not_scanned_twice() {
    let d = tree(&[(
        "src/k.cu",
        "__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n",
    )]);
    std::os::unix::fs::symlink(d.join("src"), d.join("alias")).unwrap();
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["gfx942"]).unwrap();
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    assert_eq!(r.files_scanned, 1);
    let n = r
        .findings
        .iter()
        .filter(|f| f.rule == "warp-size-literal")
        .count();
    assert_eq!(n, 1);
    let _ = std::fs::remove_dir_all(&d);
}

const DISPATCH: &str = "#include \"common.h\"\nint pick(int cc) {\n    if (cc >= CC_TURING) {\n        return 8;\n    }\n    return 4;\n}\n";

/// A host-only dispatch file that includes a project header which includes the HIP runtime is
/// compiled by HIP: AMD capabilities reach its NVIDIA-generation test.
#[test]
fn include_graph_makes_a_file_hip_only() {
    let hip = "#pragma once\n#include <hip/hip_runtime.h>\n#define CC_TURING 750\n";
    // distinct file counts keep the temporary trees of parallel tests apart
    let pads = [("p1.h", ""), ("p2.h", ""), ("p3.h", ""), ("p4.h", "")];
    let mut files = vec![("common.h", hip), ("dispatch.cpp", DISPATCH)];
    files.extend(pads);
    let d = tree(&files);
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    let hits: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "capability-order-on-amd")
        .map(|f| (f.line, f.message.clone()))
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].0, 3);
    // the threshold is known (750): every AMD target in scope passes it
    assert!(hits[0].1.contains("gfx942 (940)"), "{}", hits[0].1);
    // the same header without HIP: nothing says AMD compiles the dispatch file
    let cuda = "#pragma once\n#include <cuda_runtime.h>\n#define CC_TURING 750\n";
    let mut files = vec![("common.h", cuda), ("dispatch.cpp", DISPATCH), ("x.h", "")];
    files.extend(pads);
    let d2 = tree(&files);
    let r = scan_paths(&ctx, std::slice::from_ref(&d2)).unwrap();
    assert!(r
        .findings
        .iter()
        .all(|f| f.rule != "capability-order-on-amd"));
    // a header only HIP-only files include is HIP-only too
    let idx = ProjectIndex::build(&[
        (d.join("common.h"), kplan_scan::FileKind::Cuda),
        (d.join("dispatch.cpp"), kplan_scan::FileKind::Cuda),
    ]);
    assert!(idx.is_hip_only(&d.join("dispatch.cpp")));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
}

/// The mask-free warp intrinsics are HIP's native form: in a header that is HIP-only by the
/// include graph they are not NVIDIA's removed legacy intrinsics.
#[test]
fn include_graph_hip_only_header_keeps_native_hip_intrinsics() {
    let util = "#pragma once\n#include \"config.hpp\"\n__device__ inline unsigned long long vote(int p) { return __ballot(p); }\n";
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    let count = |cfg: &str, n: usize| {
        let files: Vec<(String, &str)> = (0..n)
            .map(|i| (format!("pad{i}.h"), ""))
            .chain([
                ("config.hpp".to_string(), cfg),
                ("util.hpp".to_string(), util),
            ])
            .collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        let d = tree(&refs);
        let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        r.findings
            .iter()
            .filter(|f| f.rule == "implicit-warp-sync")
            .count()
    };
    assert_eq!(count("#pragma once\n#include <hip/hip_runtime.h>\n", 2), 0);
    // nothing says HIP compiles it: the legacy NVIDIA intrinsic
    assert_eq!(count("#pragma once\n#include <cuda_runtime.h>\n", 3), 1);
}

/// Macros that stand for warp intrinsics are known in every file of the scan, with the
/// intrinsic; a file scanned alone knows only its own.
#[test]
fn intrinsic_aliases_are_indexed_across_files() {
    let d = std::env::temp_dir().join(format!("kplan-index-alias-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("intrinsics.h"),
        "#if defined(__HIP_PLATFORM_AMD__)\n#define SHFL(v, l) __shfl(v, l)\n#define BALLOT(p) __ballot(p)\n#else\n#define SHFL(v, l) __shfl_sync(0xffffffffu, v, l)\n#endif\n#define SQUARE(x) ((x) * (x))\n",
    )
    .unwrap();
    std::fs::write(
        d.join("k.cu"),
        "#include \"intrinsics.h\"\n__global__ void k(int* x) { x[0] = SHFL(x[1], 0); }\n",
    )
    .unwrap();
    let idx = ProjectIndex::build(&[
        (d.join("intrinsics.h"), kplan_scan::FileKind::Cuda),
        (d.join("k.cu"), kplan_scan::FileKind::Cuda),
    ]);
    assert_eq!(idx.intrinsic_alias("SHFL"), Some("__shfl"));
    assert_eq!(idx.intrinsic_alias("BALLOT"), Some("__ballot"));
    assert_eq!(idx.intrinsic_alias("SQUARE"), None);
    let alone = ProjectIndex::of_text(
        &d.join("k.cu"),
        "__global__ void k(int* x) { x[0] = SHFL(x[1], 0); }\n",
    );
    assert_eq!(alone.intrinsic_alias("SHFL"), None);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fixed_32_warp_constant_from_a_header_is_reported_at_its_uses() {
    let header = "#pragma once\n#define WARP_SIZE 32\n";
    let kernel = "#include \"common.h\"\n__global__ void k(int* x) {\n    int lane = threadIdx.x % WARP_SIZE;\n    x[threadIdx.x] = lane;\n}\nvoid go(int* x) {\n    k<<<1, 4 * WARP_SIZE>>>(x);\n}\n";
    let d = tree(&[
        ("common.h", header),
        ("sub/kernel.cu", kernel),
        ("sub/empty.cu", "// nothing\n"),
    ]);
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    let mut hits: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "warp-width-constant-use" || f.rule == "warp-size-constant")
        .map(|f| {
            (
                f.rule.to_string(),
                f.path.file_name().unwrap().to_string_lossy().into_owned(),
                f.line,
            )
        })
        .collect();
    hits.sort();
    assert_eq!(
        hits,
        vec![
            ("warp-size-constant".to_string(), "common.h".to_string(), 2),
            (
                "warp-width-constant-use".to_string(),
                "kernel.cu".to_string(),
                3
            ),
            (
                "warp-width-constant-use".to_string(),
                "kernel.cu".to_string(),
                7
            ),
        ]
    );
    // alone, the kernel file does not know what WARP_SIZE is
    let alone = scan_text(&ctx, &d.join("sub/kernel.cu"), FileKind::Cuda, kernel);
    assert!(alone.iter().all(|f| f.rule != "warp-width-constant-use"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_function_returning_another_warp_width_function_is_a_device_warp_width() {
    let text = "__device__ int wave_width() {\n    return warpSize;\n}\n__device__ int lanes_per_warp() {\n    return wave_width();\n}\n";
    let idx = ProjectIndex::of_text(Path::new("w.h"), text);
    assert!(idx.is_device_warp("wave_width"));
    assert!(idx.is_device_warp("lanes_per_warp"));
}

#[test]
fn a_constant_with_a_trailing_comment_is_indexed() {
    let idx = ProjectIndex::of_text(
        Path::new("utils.h"),
        "static const int WS = 32;  // warp size\nconstexpr int kRows = 8; /* rows */\n",
    );
    assert_eq!(idx.const_value("WS"), Some(32));
}

#[test]
fn a_warp_width_declared_nowhere_in_the_scan_is_reported_on_the_host_and_one_declared_is_not() {
    let launch = "#include \"defs.cuh\"\n__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\nvoid go(float* x) {\n    dim3 block(kWarpSize * 4);\n    k<<<1, block>>>(x);\n}\n";
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap();
    let host = |f: &kplan_scan::Finding| f.rule == "device-warp-size-in-host";
    // scanned without the header that defines it: a compile-time width from outside the scan
    let alone = scan_text(&ctx, Path::new("launch.cu"), FileKind::Cuda, launch);
    let lines: Vec<u32> = alone.iter().filter(|f| host(f)).map(|f| f.line).collect();
    assert_eq!(lines, vec![4]);
    // with a header that declares it as a host-side variable, the name is the project's own
    let d = tree(&[
        (
            "defs.cuh",
            "#pragma once\nextern int kWarpSize;  // set from the device properties\n",
        ),
        ("launch.cu", launch),
        ("notes/a.cu", "// nothing\n"),
        ("notes/b.cu", "// nothing\n"),
    ]);
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    assert!(r.findings.iter().all(|f| !host(f)), "{:?}", r.findings);
    let _ = std::fs::remove_dir_all(&d);
}
