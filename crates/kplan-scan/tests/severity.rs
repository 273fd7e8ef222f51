//! Severity and wording that follow the evidence in the code: a hazard that only wastes work is
//! a note, one that only may be wrong a warning, one that computes a wrong result an error; a
//! message names what the code or the knowledge base shows.

use kplan_kb::Kb;
use kplan_scan::{scan_paths, scan_text, FileKind, Finding, ScanCtx, Severity};
use std::path::{Path, PathBuf};

const SCOPE: &[&str] = &["sm_90a", "gfx942", "gfx1100"];

fn scan(scope: &[&str], name: &str, text: &str, rule: &str) -> Vec<Finding> {
    let ctx = ScanCtx::with_targets(Kb::builtin(), scope).unwrap();
    scan_text(&ctx, Path::new(name), FileKind::Cuda, text)
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect()
}

fn fixture(rule: &str, file: &str) -> (PathBuf, String) {
    let p = kplan_test_support::fixtures::dir().join(rule).join(file);
    let t = std::fs::read_to_string(&p).unwrap();
    (p, t)
}

#[test]
fn reduction_from_offset_32_is_an_error_for_sums_and_a_note_for_max() {
    let sum = "__device__ float s(float v) {\n    for (int o = 32; o > 0; o >>= 1) v += __shfl_down(v, o);\n    return v;\n}\n";
    let max = "__device__ float m(float v) {\n    for (int o = 32; o > 0; o >>= 1) v = fmaxf(v, __shfl_down(v, o));\n    return v;\n}\n";
    let xor = "__device__ unsigned x(unsigned v) {\n    for (int o = 32; o > 0; o >>= 1) v ^= __shfl_xor(v, o);\n    return v;\n}\n";
    let or = "__device__ unsigned b(unsigned v) {\n    for (int o = 32; o > 0; o >>= 1) v |= __shfl_xor(v, o);\n    return v;\n}\n";
    for (text, want) in [
        (sum, Severity::Error),
        (xor, Severity::Error),
        (max, Severity::Note),
        (or, Severity::Note),
    ] {
        let f = scan(SCOPE, "r.cu", text, "amd-wave-width-64");
        assert_eq!(f.len(), 1, "{text}: {f:?}");
        assert_eq!(f[0].severity, want, "{}", f[0].message);
        if want == Severity::Note {
            assert!(f[0].message.contains("wasted step"), "{}", f[0].message);
        }
    }
}

#[test]
fn per_platform_tile_constants_are_not_wave_widths() {
    let tile = "#if defined(__HIP_PLATFORM_AMD__)\nconstexpr int kRowsPerBlock = 64;\n#else\nconstexpr int kRowsPerBlock = 32;\n#endif\n#ifdef __HIP_PLATFORM_AMD__\n#define TILE_M 64\n#else\n#define TILE_M 32\n#endif\n__global__ void k(float* o, const float* a) {\n    __shared__ float s[kRowsPerBlock][TILE_M];\n    s[threadIdx.y][threadIdx.x] = a[threadIdx.x];\n    __syncthreads();\n    o[threadIdx.x] = s[0][threadIdx.x];\n}\n";
    assert!(scan(SCOPE, "t.cu", tile, "amd-wave-width-64").is_empty());
    // the same constant, used as the divisor of a thread id: a width
    let width = tile.replace(
        "o[threadIdx.x] = s[0][threadIdx.x];",
        "o[threadIdx.x / kRowsPerBlock] = s[0][threadIdx.x];",
    );
    let f = scan(SCOPE, "t.cu", &width, "amd-wave-width-64");
    assert_eq!(f.iter().map(|f| f.line).collect::<Vec<_>>(), vec![2]);
    assert_eq!(f[0].severity, Severity::Error);
}

#[test]
fn warp_width_constant_ids_are_warnings_unless_a_hardware_warp_operation_uses_them() {
    let (p, t) = fixture("warp-width-constant-use", "fire.cu");
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let f: Vec<_> = scan_text(&ctx, &p, FileKind::Cuda, &t)
        .into_iter()
        .filter(|f| f.rule == "warp-width-constant-use")
        .map(|f| (f.line, f.severity))
        .collect();
    assert_eq!(
        f,
        vec![
            (6, Severity::Warning),
            (7, Severity::Warning),
            (12, Severity::Warning),
            (17, Severity::Error),
            (18, Severity::Error),
        ]
    );
}

#[test]
fn index_arithmetic_with_a_shared_32_is_a_warning_and_a_ballot_makes_it_an_error() {
    let d = std::env::temp_dir().join(format!("kplan-severity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("common.h"), "#pragma once\n#define WARP_SIZE 32\n").unwrap();
    // 2-D index maths only
    std::fs::write(
        d.join("tile.cu"),
        "#include \"common.h\"\n__global__ void tile(float* o, const float* a) {\n    int lane = threadIdx.x % WARP_SIZE;\n    int row = threadIdx.x / WARP_SIZE;\n    o[row * 32 + lane] = a[row * 32 + lane] * 2.f;\n}\n",
    )
    .unwrap();
    // a 32-lane tree of xor shuffles up to 16: correct in each half of a wavefront
    std::fs::write(
        d.join("tree.cu"),
        "#include \"common.h\"\n__global__ void red(float* o, float v) {\n    int lane = threadIdx.x % WARP_SIZE;\n    int warp = threadIdx.x / WARP_SIZE;\n    for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(~0ull, v, s);\n    if (lane == 0) o[warp] = v;\n}\n",
    )
    .unwrap();
    // the warp id with a shuffle at offset 32: the groups are taken for hardware warps
    std::fs::write(
        d.join("wide.cu"),
        "#include \"common.h\"\n__global__ void red(float* o, float v) {\n    int lane = threadIdx.x % WARP_SIZE;\n    int warp = threadIdx.x / WARP_SIZE;\n    v += __shfl_xor(v, 32);\n    if (lane == 0) o[warp] = v;\n}\n",
    )
    .unwrap();
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let r = scan_paths(&ctx, std::slice::from_ref(&d)).unwrap();
    let mut hits: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "warp-width-constant-use")
        .map(|f| {
            (
                f.path.file_name().unwrap().to_string_lossy().into_owned(),
                f.line,
                f.severity,
            )
        })
        .collect();
    hits.sort();
    let _ = std::fs::remove_dir_all(&d);
    let w = Severity::Warning;
    let e = Severity::Error;
    assert_eq!(
        hits,
        vec![
            ("tile.cu".to_string(), 3, w),
            ("tile.cu".to_string(), 4, w),
            ("tree.cu".to_string(), 3, w),
            ("tree.cu".to_string(), 4, w),
            ("wide.cu".to_string(), 3, e),
            ("wide.cu".to_string(), 4, e),
        ]
    );
}

#[test]
fn hip_only_arch_test_is_called_dead_only_without_nvidia_targets_and_names_the_branch_amd_takes() {
    let (p, t) = fixture("cuda-arch-gate-no-amd-path", "fire.hip");
    let rule = "cuda-arch-gate-no-amd-path";
    let ctx = ScanCtx::with_targets(Kb::builtin(), &["gfx942", "gfx1100"]).unwrap();
    let f: Vec<_> = scan_text(&ctx, &p, FileKind::Cuda, &t)
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect();
    let lines: Vec<u32> = f.iter().map(|f| f.line).collect();
    assert_eq!(lines, vec![9, 19], "{f:?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains("`#else` (line 11)"),
        "{}",
        f[0].message
    );
    assert!(f[0].message.contains("dead code"), "{}", f[0].message);
    // with an NVIDIA target in scope the branch is live on HIP's NVIDIA platform: not dead
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let f: Vec<_> = scan_text(&ctx, &p, FileKind::Cuda, &t)
        .into_iter()
        .filter(|f| f.rule == rule && f.line == 9)
        .collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(!f[0].message.contains("dead"), "{}", f[0].message);
    assert!(
        f[0].message.contains("`#else` (line 11)"),
        "{}",
        f[0].message
    );
    // an explicit AMD alternative is AMD's path, with any scope
    let (p, t) = fixture(rule, "pass.hip");
    for scope in [&["gfx942", "gfx1100"][..], SCOPE] {
        let ctx = ScanCtx::with_targets(Kb::builtin(), scope).unwrap();
        let f: Vec<_> = scan_text(&ctx, &p, FileKind::Cuda, &t)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect();
        assert!(f.is_empty(), "{f:?}");
    }
}

#[test]
fn syncwarp_advice_is_hips_own_fenced_body_and_names_the_64_bit_mask() {
    let text = "__global__ void k(float* s) {\n    if (threadIdx.x / warpSize == 0) {\n        s[threadIdx.x] += 1.f;\n        __syncwarp();\n    }\n}\n";
    let f = scan(SCOPE, "w.cu", text, "nvidia-only-feature");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(f[0].message.contains("64-bit mask"), "{}", f[0].message);
    assert!(
        f[0].help
            .contains("__builtin_amdgcn_fence(__ATOMIC_RELEASE"),
        "{}",
        f[0].help
    );
    assert!(
        f[0].help.contains("__builtin_amdgcn_wave_barrier"),
        "{}",
        f[0].help
    );
    assert!(
        !f[0].help.contains("__syncthreads() for the whole block"),
        "{}",
        f[0].help
    );
    assert!(!f[0].help.contains("rely on lockstep"), "{}", f[0].help);
}

#[test]
fn missing_hip_intrinsics_quote_the_headers_read() {
    let text = "__device__ void spin(int* f) {\n    while (atomicCAS_block(f, 0, 1)) __nanosleep(100);\n}\n";
    let f = scan(SCOPE, "n.cu", text, "nvidia-only-feature");
    assert_eq!(f.len(), 2, "{f:?}");
    for x in &f {
        assert_eq!(x.severity, Severity::Error);
        assert!(
            x.message.contains("not declared by HIP's headers"),
            "{}",
            x.message
        );
        assert!(x.message.contains("rocm-systems"), "{}", x.message);
    }
}

#[test]
fn run_time_width_test_guards_its_32_lane_path() {
    let text = "__device__ int count3(bool p) {\n    if (warpSize == 32) return __popc((uint32_t)__ballot(p));\n    return __popcll(__ballot(p));\n}\n";
    for rule in ["ballot-narrowing", "lane-geometry-32", "warp-size-literal"] {
        assert!(scan(SCOPE, "e.hip", text, rule).is_empty(), "{rule}");
    }
    // the requirement form is still reported
    let req =
        "__device__ bool ok() {\n    if (warpSize != 32) return false;\n    return true;\n}\n";
    assert_eq!(scan(SCOPE, "r.hip", req, "lane-geometry-32").len(), 1);
}

#[test]
fn a_per_platform_value_whose_width_field_is_read_is_a_wave_width() {
    let text = "struct Consts {\n    constexpr Consts(int w, int b) : WARP_SIZE(w), MAX_BLOCK(b) {}\n    int WARP_SIZE, MAX_BLOCK;\n};\n#if defined(__HIP_PLATFORM_AMD__)\nconstexpr Consts consts(64, 1024);\n#else\nconstexpr Consts consts(32, 1024);\n#endif\nstatic_assert(consts.MAX_BLOCK % consts.WARP_SIZE == 0, \"\");\n";
    let f = scan(SCOPE, "c.hpp", text, "amd-wave-width-64");
    assert_eq!(
        f.iter().map(|f| f.line).collect::<Vec<_>>(),
        vec![6],
        "{f:?}"
    );
}
