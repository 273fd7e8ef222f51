//! The facts `cuda-intrinsic-missing-in-hip` and `cuda-header-in-hip-build` report, checked
//! against the real HIP toolchain: every listed CUDA intrinsic is undeclared in HIP mode, every
//! listed CUDA header is not found, and the controls (`__ldg`, `<hip/hip_runtime.h>`) compile.
//!
//! Needs a HIP-capable clang with HIP headers: `KPLAN_HIP_CLANG` (set by scripts/test-env.sh)
//! or `clang-19` on PATH. Without one the test is skipped with a printed reason, unless
//! `KPLAN_REQUIRE_TOOLCHAINS=1`, when it fails.

use kplan_scan::rules::cuda_header_in_hip_build::hip_replacement;
use kplan_scan::rules::cuda_intrinsic_missing_in_hip::{missing_in_hip, MISSING};
use kplan_test_support::toolchain;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `text` as HIP for gfx942 (`mode`: `-fsyntax-only`, or `-E` to preprocess only);
/// the compiler's stderr on failure.
fn compile(clang: &Path, dir: &Path, mode: &str, text: &str) -> Result<(), String> {
    let src = dir.join("t.hip");
    std::fs::write(&src, text).unwrap();
    let out = Command::new(clang)
        .args([
            "-x",
            "hip",
            "--offload-arch=gfx942",
            "-nogpulib",
            "-ferror-limit=0",
            mode,
        ])
        .args(["-o", "/dev/null"])
        .arg(&src)
        .output()
        .expect("run clang");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn listed_intrinsics_and_headers_are_missing_under_hip() {
    let Some(clang) = toolchain::hip_clang() else {
        return toolchain::skip("no HIP clang (set KPLAN_HIP_CLANG or install clang-19)");
    };
    let dir = kplan_test_support::tempdir("hip-lacks");
    let prelude = "#include <hip/hip_runtime.h>\n";
    // the control compiles: the toolchain and HIP headers work
    if let Err(e) = compile(
        &clang,
        dir.path(),
        "-fsyntax-only",
        &format!("{prelude}__global__ void k(const float* p, float* o) {{ o[0] = __ldg(p); }}\n"),
    ) {
        return toolchain::skip(format!(
            "HIP headers not usable by {}: {e}",
            clang.display()
        ));
    }
    let mut wrong = Vec::new();
    // one translation unit, one use per name: each must be reported undeclared
    let mut text = prelude.to_string();
    for (i, name) in MISSING.iter().enumerate() {
        assert!(missing_in_hip(name), "{name} is not matched by the rule");
        text.push_str(&format!("__global__ void k{i}() {{ (void)&{name}; }}\n"));
    }
    let errors = compile(&clang, dir.path(), "-fsyntax-only", &text).unwrap_err();
    for name in MISSING {
        if !errors.contains(&format!("undeclared identifier '{name}'")) {
            wrong.push(format!(
                "{name}: not reported undeclared by the HIP compile"
            ));
        }
    }
    for h in [
        "cooperative_groups.h",
        "cooperative_groups/reduce.h",
        "mma.h",
        "cuda_runtime.h",
        "cuda_runtime_api.h",
        "cuda.h",
        "cuda_fp16.h",
        "cuda_bf16.h",
        "cuda_fp8.h",
        "cuda_pipeline.h",
        "cuda_awbarrier.h",
        "cub/cub.cuh",
        "curand_kernel.h",
        "cublas_v2.h",
        "cusparse.h",
        "cufft.h",
        "nvrtc.h",
        "nvToolsExt.h",
        "nvtx3/nvToolsExt.h",
    ] {
        assert!(
            hip_replacement(h).is_some(),
            "{h} is not matched by the rule"
        );
        let text = format!("{prelude}#include <{h}>\n");
        match compile(&clang, dir.path(), "-E", &text) {
            Err(e) if e.contains("not found") => {}
            Err(e) => wrong.push(format!("<{h}>: failed, but not as not found: {e}")),
            Ok(()) => wrong.push(format!("<{h}>: found by the HIP compile")),
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// Every name of the list is a CUDA device function: CUDA's own headers (the toolkit next to
/// `KPLAN_NVCC`, set by scripts/test-env.sh) declare it.
#[test]
fn listed_intrinsics_are_declared_by_cuda() {
    let Some(nvcc) = std::env::var_os("KPLAN_NVCC").filter(|p| !p.is_empty()) else {
        return toolchain::skip(
            "no nvcc (set KPLAN_NVCC; scripts/install-test-deps.sh installs one)",
        );
    };
    // nvcc lives in <toolkit>/bin; the headers in <toolkit>/include
    let include = PathBuf::from(nvcc)
        .parent()
        .and_then(Path::parent)
        .map(|t| t.join("include"));
    let Some(include) = include.filter(|d| d.is_dir()) else {
        return toolchain::skip("the CUDA include directory next to KPLAN_NVCC is missing");
    };
    let mut text = String::new();
    let mut stack = vec![include];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "h" || x == "hpp") {
                text.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let words: std::collections::HashSet<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let absent: Vec<&str> = MISSING
        .iter()
        .copied()
        .filter(|n| !words.contains(n))
        .collect();
    assert!(absent.is_empty(), "not in CUDA's headers: {absent:?}");
}

/// `platform-macro-never-defined` knows every HIP/AMD platform macro clang-19 defines in a HIP
/// pass: the device pass of seven targets and the host pass.
#[test]
fn compiler_defined_platform_macros_are_known() {
    use kplan_scan::rules::platform_macro_never_defined::never_defined;
    let Some(clang) = toolchain::hip_clang() else {
        return toolchain::skip("no HIP clang (set KPLAN_HIP_CLANG or install clang-19)");
    };
    let dir = kplan_test_support::tempdir("hip-macros");
    let src = dir.path().join("e.hip");
    std::fs::write(&src, "\n").unwrap();
    let mut defined = std::collections::BTreeSet::new();
    let passes: Vec<Vec<String>> = [
        "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1151", "gfx1201",
    ]
    .iter()
    .map(|t| {
        vec![
            "--cuda-device-only".to_string(),
            format!("--offload-arch={t}"),
        ]
    })
    .chain(std::iter::once(vec![
        "--cuda-host-only".to_string(),
        "--offload-arch=gfx942".to_string(),
    ]))
    .collect();
    for args in passes {
        let out = Command::new(&clang)
            .args(["-x", "hip", "-nogpulib", "-nogpuinc", "-E", "-dM"])
            .args(&args)
            .arg(&src)
            .output()
            .expect("run clang");
        if !out.status.success() {
            return toolchain::skip(format!(
                "{} -E -dM failed: {}",
                clang.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line
                .strip_prefix("#define ")
                .and_then(|r| r.split([' ', '(']).next())
            {
                defined.insert(name.to_string());
            }
        }
    }
    assert!(
        defined.contains("__HIP_DEVICE_COMPILE__"),
        "no device pass read"
    );
    let unknown: Vec<&String> = defined.iter().filter(|n| never_defined(n)).collect();
    assert!(
        unknown.is_empty(),
        "defined by clang-19 but reported as never defined: {unknown:?}"
    );
}
