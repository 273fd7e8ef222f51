//! Which preprocessor branches run on which compiler, as the rules see it: include guards are
//! not platform tests, AMD-only branches are scanned, `__CUDACC__` branches are NVIDIA-only,
//! `<P>_CUDA_*` switches with a `<P>_HIP_*` sibling are platform tests, and the macro sets the
//! scanner assumes match the real compilers (checked when they are installed).

use kplan_kb::Kb;
use kplan_scan::lex::{classify_condition, lex, Platform};
use kplan_scan::{scan_text, FileKind, ScanCtx};
use std::path::Path;
use std::process::Command;

const SCOPE: &[&str] = &["sm_90a", "gfx942", "gfx1100"];

fn rules_at(src: &str, name: &str) -> Vec<(String, u32)> {
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    scan_text(&ctx, Path::new(name), FileKind::Cuda, src)
        .into_iter()
        .map(|f| (f.rule.to_string(), f.line))
        .collect()
}

fn fires(src: &str, rule: &str) -> Vec<u32> {
    rules_at(src, "k.cu")
        .into_iter()
        .filter(|(r, _)| r == rule)
        .map(|(_, l)| l)
        .collect()
}

const LANE: &str =
    "__global__ void k(int* x) {\n    int lane = threadIdx.x % 32;\n    x[lane] = 1;\n}\n";

#[test]
fn include_guard_named_like_hip_is_not_a_platform_test() {
    for open in ["#ifndef UTILS_HIP_H", "#if !defined(UTILS_HIP_H)"] {
        let src = format!("{open}\n#define UTILS_HIP_H\n{LANE}#endif\n");
        assert_eq!(fires(&src, "warp-size-literal"), vec![4], "{open}");
        let s = lex(&src);
        let i = (0..s.toks.len()).find(|&i| s.is(i, "threadIdx")).unwrap();
        assert_eq!(s.platform(i), Platform::Any, "{open}");
    }
}

#[test]
fn amd_only_branches_are_scanned_for_wave64_hazards() {
    for cond in [
        "#ifdef __HIP_PLATFORM_AMD__",
        "#if defined(__GFX9__)",
        "#if defined(__gfx1030__) || defined(__gfx942__)",
        "#ifdef __HIP_DEVICE_COMPILE__",
        "#if defined(__AMDGCN__)",
        "#ifdef USE_ROCM",
    ] {
        let src = format!("{cond}\n{LANE}#endif\n");
        assert_eq!(fires(&src, "warp-size-literal"), vec![3], "{cond}");
    }
}

#[test]
fn wave32_only_amd_branches_and_nvidia_branches_stay_silent() {
    for cond in [
        "#if defined(__GFX11__) || defined(__GFX12__)",
        "#if __AMDGCN_WAVEFRONT_SIZE == 32",
        "#ifdef __CUDA_ARCH__",
        "#if defined(__CUDACC__)",
        "#ifndef __HIP_PLATFORM_AMD__",
    ] {
        let src = format!("{cond}\n{LANE}#endif\n");
        assert!(fires(&src, "warp-size-literal").is_empty(), "{cond}");
    }
}

#[test]
fn mfma_branch_fragment_arithmetic_is_exempt() {
    let src = "#if defined(__gfx90a__) || defined(__gfx942__)\n__device__ void frag(float* c) {\n    int lane = threadIdx.x % 32;\n    c[lane] = 0.f;\n}\n#endif\n";
    assert!(fires(src, "warp-size-literal").is_empty());
    // the mask rule still fires there: HIP's sync intrinsics need 64-bit masks everywhere
    let src = "#ifdef __gfx942__\n__device__ int s(int v) {\n    return __shfl_xor_sync(0xffffffff, v, 1);\n}\n#endif\n";
    assert_eq!(fires(src, "full-mask-literal"), vec![3]);
}

#[test]
fn cudacc_branch_masks_are_not_amd_errors() {
    let src = "#if defined(__CUDACC__)\n__device__ int s(int v) {\n    return __shfl_xor_sync(0xffffffff, v, 1);\n}\n#else\n__device__ int s(int v) {\n    return __shfl_xor(v, 1);\n}\n#endif\n";
    assert!(fires(src, "full-mask-literal").is_empty());
    assert_eq!(
        classify_condition("defined(__CUDACC__)").0,
        Platform::Nvidia
    );
    assert_eq!(
        classify_condition("defined(__CUDACC__) || defined(__HIPCC__)").0,
        Platform::Any
    );
}

#[test]
fn cuda_switch_with_hip_sibling_is_a_platform_test() {
    let body = "__device__ int s(int v) {\n    return __shfl_xor_sync(0xffffffff, v, 1);\n}\n";
    let src = format!("#if defined(PROJ_USE_CUDA)\n{body}#elif defined(PROJ_USE_HIP)\n__device__ int s(int v) {{ return __shfl_xor(v, 1); }}\n#endif\n");
    assert!(fires(&src, "full-mask-literal").is_empty());
    // without a HIP sibling the same name says nothing about the platform
    let src = format!("#if defined(PROJ_USE_CUDA)\n{body}#endif\n");
    assert_eq!(fires(&src, "full-mask-literal"), vec![3]);
}

#[test]
fn hip_includes_make_a_hip_only_file() {
    let s = lex("#include <hip/hip_runtime.h>\n__global__ void k() {}\n");
    assert!(s.hip_only);
    let s = lex(
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n",
    );
    assert!(!s.hip_only);
    let s = lex("#include <hip/hip_runtime.h>\n#include <cuda_runtime.h>\n");
    assert!(!s.hip_only);
}

fn defined_macros(args: &[&str]) -> Option<String> {
    let dir = tempfile_dir();
    let f = dir.join(if args.contains(&"hip") {
        "e.hip"
    } else {
        "e.cu"
    });
    std::fs::write(&f, "").ok()?;
    let out = Command::new("clang-19")
        .args(args)
        .args(["-nogpulib", "-E", "-dM"])
        .arg(&f)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kplan-structure-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn has(defs: &str, m: &str) -> bool {
    defs.lines().any(|l| l.split_whitespace().nth(1) == Some(m))
}

/// The classification above follows clang-19 in HIP mode: `__CUDACC__` never defined,
/// `__HIP_DEVICE_COMPILE__` and `__gfx*__` only in device passes, `__AMDGCN_WAVEFRONT_SIZE`
/// 64 in the host pass even for a wave32 target.
#[test]
fn compiler_macros_match_clang_hip() {
    let Some(dev) = defined_macros(&["-x", "hip", "--offload-arch=gfx942", "--cuda-device-only"])
    else {
        eprintln!(
            "skipped: clang-19 with HIP support not installed (scripts/install-test-deps.sh)"
        );
        return;
    };
    let host = defined_macros(&["-x", "hip", "--offload-arch=gfx1100", "--cuda-host-only"])
        .expect("clang-19 host pass");
    let dev32 = defined_macros(&["-x", "hip", "--offload-arch=gfx1100", "--cuda-device-only"])
        .expect("clang-19 gfx1100 device pass");
    for m in [
        "__HIP__",
        "__HIPCC__",
        "__HIP_DEVICE_COMPILE__",
        "__gfx942__",
        "__GFX9__",
    ] {
        assert!(has(&dev, m), "{m} missing from the gfx942 device pass");
    }
    for m in ["__CUDACC__", "__CUDA_ARCH__", "__NVCC__"] {
        assert!(!has(&dev, m) && !has(&host, m), "{m} defined in HIP mode");
    }
    for m in ["__HIP_DEVICE_COMPILE__", "__gfx1100__", "__GFX11__"] {
        assert!(!has(&host, m), "{m} defined in the host pass");
    }
    assert!(host.contains("#define __AMDGCN_WAVEFRONT_SIZE 64"));
    assert!(dev32.contains("#define __AMDGCN_WAVEFRONT_SIZE 32"));
    assert!(has(&dev32, "__GFX11__"));
    assert_eq!(classify_condition("defined(__HIP__)").0, Platform::Amd);
    assert_eq!(
        classify_condition("defined(__HIP_DEVICE_COMPILE__)").0,
        Platform::Amd
    );
    assert_eq!(
        classify_condition("defined(__CUDACC__)").0,
        Platform::Nvidia
    );
}

#[test]
fn cuda_in_python_strings_is_scanned_as_cuda() {
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/embedded-cuda");
    let fire = std::fs::read_to_string(dir.join("fire.py")).unwrap();
    let f = scan_text(&ctx, &dir.join("fire.py"), FileKind::Python, &fire);
    let got: Vec<(&str, u32)> = f.iter().map(|f| (f.rule, f.line)).collect();
    for want in [("full-mask-literal", 7), ("warp-size-literal", 8)] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    assert!(f.iter().all(|f| f.message.contains("Python string")));
    let pass = std::fs::read_to_string(dir.join("pass.py")).unwrap();
    let f = scan_text(&ctx, &dir.join("pass.py"), FileKind::Python, &pass);
    assert!(f.is_empty(), "{f:?}");
}

/// Conditions are evaluated per compilation pass (nvcc/clang-CUDA host and device, clang-HIP
/// host, wave64 and wave32 device): a macro only device passes define does not make its
/// negation an NVIDIA branch, and nested branches combine.
#[test]
fn conditions_follow_the_compilation_passes() {
    let plat_of = |src: &str, name: &str| {
        let s = lex(src);
        s.platform((0..s.toks.len()).find(|&i| s.is(i, name)).unwrap())
    };
    // the host pass of HIP and every CUDA pass: not NVIDIA-only
    assert_eq!(
        plat_of("#ifndef __HIP_DEVICE_COMPILE__\nint a;\n#endif\n", "a"),
        Platform::Any
    );
    // the HIP host pass only
    assert_eq!(
        plat_of(
            "#ifdef __HIP_PLATFORM_AMD__\n#ifndef __HIP_DEVICE_COMPILE__\nint a;\n#endif\n#endif\n",
            "a"
        ),
        Platform::Amd
    );
    // `__CUDA_ARCH__` is undefined (0) in HIP and in the CUDA host pass: this holds there
    assert_eq!(classify_condition("__CUDA_ARCH__ < 700").0, Platform::Any);
    assert_eq!(
        classify_condition("__CUDA_ARCH__ >= 700").0,
        Platform::Nvidia
    );
    // the version macros of one toolkit are 0 under the other
    assert_eq!(
        classify_condition("CUDA_VERSION >= 11000").0,
        Platform::Nvidia
    );
    // alternative tokens
    assert_eq!(
        classify_condition("defined(__HIP_PLATFORM_AMD__) and not defined(FOO)").0,
        Platform::Amd
    );
    // `#else` of a test AMD certainly passes is NVIDIA; of one it may fail, both
    assert_eq!(
        plat_of(
            "#if defined(USE_ROCM) || FOO\nint a;\n#else\nint b;\n#endif\n",
            "b"
        ),
        Platform::Nvidia
    );
    // nested in an AMD-only branch, the `#else` of an architecture list is AMD code
    assert_eq!(
        plat_of(
            "#ifdef __HIP_PLATFORM_AMD__\n#if defined(__gfx942__)\nint a;\n#else\nint b;\n#endif\n#endif\n",
            "b"
        ),
        Platform::Amd
    );
}

#[test]
fn branches_only_32_lane_device_passes_reach_are_silent() {
    // the `#else` of a wave64 test runs on NVIDIA and wave32 AMD: 32 lanes everywhere
    let src = format!("#if __AMDGCN_WAVEFRONT_SIZE == 64\n__global__ void k(int* x) {{ x[threadIdx.x % 64] = 1; }}\n#else\n{LANE}#endif\n");
    assert!(fires(&src, "warp-size-literal").is_empty());
    // the `#else` of a wave32 test is where wave64 AMD goes
    let src = format!("#if __AMDGCN_WAVEFRONT_SIZE == 32\n__global__ void k(int* x) {{ x[threadIdx.x % 32] = 1; }}\n#else\n{LANE}#endif\n");
    assert_eq!(fires(&src, "warp-size-literal"), vec![5]);
}

#[test]
fn capability_message_depends_on_the_threshold() {
    let src = "#include <hip/hip_runtime.h>\n#define CC_BLACKWELL 1000\nint pick(int cc) {\n    if (cc >= CC_BLACKWELL) {\n        return 8;\n    }\n    return 4;\n}\n";
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let f: Vec<_> = scan_text(&ctx, Path::new("pick.cpp"), FileKind::Cuda, src)
        .into_iter()
        .filter(|f| f.rule == "capability-order-on-amd")
        .collect();
    assert_eq!(f.len(), 1);
    let m = &f[0].message;
    assert!(m.contains("gfx1100 (1100) passes it"), "{m}");
    assert!(m.contains("gfx942 (940) does not"), "{m}");
    // the portable form: the vendor first
    let ok = src.replace("cc >= CC_BLACKWELL", "is_nvidia(cc) && cc >= CC_BLACKWELL");
    assert!(scan_text(&ctx, Path::new("pick.cpp"), FileKind::Cuda, &ok)
        .iter()
        .all(|f| f.rule != "capability-order-on-amd"));
}

#[test]
fn wavefront_size_macro_messages_say_where_the_value_is_wrong() {
    let src = "__global__ void k(int* x) { x[threadIdx.x % __AMDGCN_WAVEFRONT_SIZE] = 0; }\nint host_lanes() { return __AMDGCN_WAVEFRONT_SIZE; }\n";
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let f = scan_text(&ctx, Path::new("w.hip"), FileKind::Cuda, src);
    let msg = |line: u32| {
        f.iter()
            .find(|f| f.rule == "wavefront-size-macro" && f.line == line)
            .map(|f| f.message.clone())
            .unwrap_or_default()
    };
    assert!(
        msg(1).contains("deprecated") && !msg(1).contains("host"),
        "{}",
        msg(1)
    );
    assert!(msg(2).contains("64 in every host pass"), "{}", msg(2));
}

/// Following wave-size-arch-list's advice (families under `__HIP_DEVICE_COMPILE__`, the device
/// property on the host) raises nothing from the other warp-width rules.
#[test]
fn wave_size_advice_is_coherent_across_rules() {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wave-size-arch-list/pass.cu");
    let src = std::fs::read_to_string(&p).unwrap();
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let f: Vec<_> = scan_text(&ctx, &p, FileKind::Cuda, &src)
        .into_iter()
        .filter(|f| {
            matches!(
                f.rule,
                "wave-size-arch-list" | "wavefront-size-macro" | "device-warp-size-in-host"
            )
        })
        .map(|f| format!("{}:{} {}", f.rule, f.line, f.message))
        .collect();
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn hip_flags_wavefrontsize64_makes_rdna_wave64() {
    let with = |toml: &str| {
        let cfg = kplan_scan::Config::parse(Path::new("kplan.toml"), toml, &|_| None).unwrap();
        ScanCtx::new(Kb::builtin(), &["gfx1100".to_string()], cfg).unwrap()
    };
    let ctx = with("hip-flags = [\"-O3\", \"-mwavefrontsize64\"]\n");
    assert!(ctx.has_wave64());
    let f = scan_text(&ctx, Path::new("k.hip"), FileKind::Cuda, LANE);
    assert!(f.iter().any(|f| f.rule == "warp-size-literal"));
    // the last flag decides, as in clang
    let ctx = with("hip-flags = [\"-mwavefrontsize64\", \"-mno-wavefrontsize64\"]\n");
    assert!(!ctx.has_wave64());
    let f = scan_text(&ctx, Path::new("k.hip"), FileKind::Cuda, LANE);
    assert!(f.iter().all(|f| f.rule != "warp-size-literal"));
}

/// The pass table's CUDA side follows nvcc: `__CUDACC__`, `__NVCC__` and (in the device pass
/// `nvcc -E` preprocesses) `__CUDA_ARCH__` for the `-arch` given, none of the HIP macros; and
/// `-mwavefrontsize64` makes clang's gfx1100 device pass 64 lanes wide (what `hip-flags`
/// models).
#[test]
fn compiler_macros_match_nvcc_and_wavefrontsize64() {
    match std::env::var("KPLAN_NVCC") {
        Ok(nvcc) => {
            let f = tempfile_dir().join("n.cu");
            std::fs::write(&f, "").unwrap();
            let out = Command::new(&nvcc)
                .args(["-E", "-arch=sm_80", "-Xcompiler", "-dM"])
                .arg(&f)
                .output()
                .expect("nvcc runs");
            assert!(out.status.success(), "nvcc -E -dM failed");
            let dev = String::from_utf8_lossy(&out.stdout);
            assert!(has(&dev, "__CUDACC__") && has(&dev, "__NVCC__"));
            assert!(dev.contains("#define __CUDA_ARCH__ 800"));
            for m in [
                "__HIP__",
                "__HIPCC__",
                "__HIP_DEVICE_COMPILE__",
                "__AMDGCN__",
            ] {
                assert!(!has(&dev, m), "{m} defined by nvcc");
            }
        }
        Err(_) => kplan_test_support::toolchain::skip(
            "nvcc not found (set KPLAN_NVCC or source scripts/test-env.sh)",
        ),
    }
    match defined_macros(&[
        "-x",
        "hip",
        "--offload-arch=gfx1100",
        "-mwavefrontsize64",
        "--cuda-device-only",
    ]) {
        Some(d) => assert!(d.contains("#define __AMDGCN_WAVEFRONT_SIZE 64"), "{d}"),
        None => kplan_test_support::toolchain::skip("clang-19 with HIP support not installed"),
    }
}

#[test]
fn device_code_takes_the_device_passes_platform() {
    let src = "#ifndef __CUDA_ARCH__\n__device__ int f(int v) { return v; }\nint g;\n#endif\n";
    let s = lex(src);
    let at = |name: &str| (0..s.toks.len()).find(|&i| s.is(i, name)).unwrap();
    // in the device function: only HIP's device passes compile it
    assert_eq!(s.platform(at("return")), Platform::Amd);
    // at file scope: the host passes of both vendors too
    assert_eq!(s.platform(at("g")), Platform::Any);
}
