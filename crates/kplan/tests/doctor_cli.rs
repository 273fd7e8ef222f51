//! `kplan doctor` on this machine's real toolchains: what the discovery finds from the places
//! users have them (CUDA_HOME, the nvidia-cuda-nvcc wheel of the active Python, ROCM_PATH, Debian's
//! clang-N, Triton from the active Python), each pointed at by its variable, and what it says
//! when nothing is there. No tool is faked: every path given points at a real installation.

use kplan_test_support::{toolchain::skip, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `kplan doctor --format json` with only `env` set (PATH the system's unless given).
fn doctor(env: &[(&str, &Path)]) -> Value {
    let mut c = kplan_test_support::kplan_command!();
    c.args(["doctor", "--format", "json"]).env_clear();
    c.env("PATH", "/usr/bin:/bin");
    if let Some(h) = std::env::var_os("HOME") {
        c.env("HOME", h);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run kplan doctor");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("doctor JSON")
}

fn component<'v>(v: &'v Value, backend: &str, name: &str) -> &'v Value {
    let b = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == backend)
        .unwrap_or_else(|| panic!("no backend {backend} in {v}"));
    b["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {b}"))
}

fn backend<'v>(v: &'v Value, backend: &str) -> &'v Value {
    v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == backend)
        .unwrap()
}

/// The repository's `.venv` (scripts/install-test-deps.sh) and its CUDA wheel directory.
fn venv_cuda() -> Option<(PathBuf, PathBuf)> {
    let venv = workspace_root().join(".venv");
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    for py in lib.flatten() {
        let cu = py.path().join("site-packages/nvidia/cu13");
        if cu.join("bin/nvcc").is_file() {
            return Some((venv.canonicalize().ok()?, cu.canonicalize().ok()?));
        }
    }
    None
}

fn nvcc_version(nvcc: &Path) -> String {
    let o = Command::new(nvcc).arg("--version").output().unwrap();
    kplan_build::toolchain::parse_version(&String::from_utf8_lossy(&o.stdout)).unwrap()
}

#[test]
fn nothing_found_says_what_to_install() {
    let empty = kplan_test_support::tempdir("doctor-empty");
    let v = doctor(&[("PATH", empty.path())]);
    let nvcc = component(&v, "cuda", "nvcc");
    assert!(
        nvcc["path"].is_null()
            || !Path::new(nvcc["path"].as_str().unwrap()).starts_with(empty.path())
    );
    if nvcc["path"].is_null() {
        assert_eq!(nvcc["problem"], "not found");
        assert!(nvcc["install"]
            .as_str()
            .unwrap()
            .contains("pip install nvidia-cuda-nvcc"));
        assert_eq!(backend(&v, "cuda")["can_build"], false);
    }
    let py = component(&v, "triton", "Python");
    assert!(py["path"].is_null(), "no python3 on an empty PATH: {py}");
    assert!(py["install"].as_str().unwrap().contains("KPLAN_PYTHON"));
    let tr = component(&v, "triton", "triton");
    assert_eq!(tr["problem"], "no Python");
    // the human report names each backend and the install hint
    let o = kplan_test_support::kplan_command!()
        .arg("doctor")
        .env_clear()
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for t in [
        "NVIDIA (CUDA)",
        "AMD (ROCm/HIP)",
        "Triton",
        "CPU fallback",
        "install: ",
    ] {
        assert!(text.contains(t), "{t} not in\n{text}");
    }
}

#[test]
fn nvcc_and_nvrtc_from_cuda_home() {
    let Some((_, cu)) = venv_cuda() else {
        return skip("no nvidia-cuda-nvcc wheel in .venv (scripts/install-test-deps.sh)");
    };
    let empty = kplan_test_support::tempdir("doctor-cuda-home");
    let v = doctor(&[("CUDA_HOME", &cu), ("PATH", empty.path())]);
    let nvcc = component(&v, "cuda", "nvcc");
    assert_eq!(nvcc["path"], cu.join("bin/nvcc").display().to_string());
    assert_eq!(nvcc["found_via"], "CUDA_HOME");
    assert_eq!(nvcc["version"], nvcc_version(&cu.join("bin/nvcc")));
    assert!(nvcc["problem"].is_null());
    let nvrtc = component(&v, "cuda", "NVRTC");
    let lib = nvrtc["path"].as_str().unwrap();
    assert!(
        lib.starts_with(cu.to_str().unwrap()) && lib.contains("libnvrtc.so."),
        "{lib}"
    );
    assert_eq!(nvrtc["found_via"], "CUDA_HOME");
    assert_eq!(backend(&v, "cuda")["can_build"], true);
}

#[test]
fn nvcc_and_triton_from_the_active_python() {
    let Some((venv, cu)) = venv_cuda() else {
        return skip("no nvidia-cuda-nvcc wheel in .venv (scripts/install-test-deps.sh)");
    };
    let v = doctor(&[("VIRTUAL_ENV", &venv)]);
    let nvcc = component(&v, "cuda", "nvcc");
    if nvcc["found_via"] == "PATH" {
        return skip("nvcc is on the system PATH, which is looked at before the wheels");
    }
    let want = cu.join("bin/nvcc");
    assert_eq!(
        Path::new(nvcc["path"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        want
    );
    assert!(
        nvcc["found_via"]
            .as_str()
            .unwrap()
            .starts_with("Python wheel"),
        "{nvcc}"
    );
    let py = component(&v, "triton", "Python");
    assert_eq!(py["found_via"], "VIRTUAL_ENV");
    assert_eq!(py["path"], venv.join("bin/python").display().to_string());
    let tr = component(&v, "triton", "triton");
    let real = Command::new(venv.join("bin/python"))
        .args(["-c", "import triton; print(triton.__version__)"])
        .output()
        .unwrap();
    if !real.status.success() {
        assert!(!tr["problem"].is_null());
        return skip("no triton in .venv");
    }
    let want = format!("triton {}", String::from_utf8_lossy(&real.stdout).trim());
    assert_eq!(tr["version"], want);
}

/// A clang >= 17 with the HIP headers and device libraries installed the Debian way.
fn debian_hip() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let clang = kplan_build::toolchain::find_hip_clang().ok()??.path;
    let inc = kplan_build::toolchain::hip_include_dir()?;
    let dl = kplan_build::toolchain::device_lib_dir(&clang)?;
    Some((clang, inc, dl))
}

#[test]
fn hip_from_debian_packages_and_from_rocm_path() {
    let Some((clang, inc, devlib)) = debian_hip() else {
        return skip(
            "no HIP clang with HIP headers and device libraries (scripts/install-test-deps.sh)",
        );
    };
    let real_clang = clang.canonicalize().unwrap();
    let clang_dir = real_clang.parent().unwrap().to_path_buf();
    // Debian's clang-N found on its own (PATH as the system has it)
    let v = doctor(&[]);
    let c = component(&v, "rocm", "HIP clang");
    assert!(c["problem"].is_null(), "{c}");
    let found = Path::new(c["path"].as_str().unwrap())
        .canonicalize()
        .unwrap();
    assert_eq!(found, real_clang);
    let o = Command::new(&clang).arg("--version").output().unwrap();
    let want = kplan_build::toolchain::parse_version(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(c["version"].as_str(), want.as_deref());
    assert_eq!(
        component(&v, "rocm", "HIP headers")["path"],
        inc.join("hip").display().to_string()
    );
    assert_eq!(
        component(&v, "rocm", "ROCm device libraries")["path"],
        devlib.display().to_string()
    );
    assert_eq!(backend(&v, "rocm")["can_build"], true);
    // ROCM_PATH: a ROCm layout (llvm/bin, include/hip, amdgcn/bitcode) whose entries are the
    // same installed files
    let root = kplan_test_support::tempdir("doctor-rocm");
    let r = root.path();
    std::fs::create_dir_all(r.join("llvm")).unwrap();
    std::fs::create_dir_all(r.join("include")).unwrap();
    std::fs::create_dir_all(r.join("amdgcn")).unwrap();
    std::os::unix::fs::symlink(&clang_dir, r.join("llvm/bin")).unwrap();
    std::os::unix::fs::symlink(inc.join("hip"), r.join("include/hip")).unwrap();
    std::os::unix::fs::symlink(&devlib, r.join("amdgcn/bitcode")).unwrap();
    let v = doctor(&[("ROCM_PATH", r)]);
    let c = component(&v, "rocm", "HIP clang");
    assert_eq!(c["path"], r.join("llvm/bin/clang").display().to_string());
    assert_eq!(c["found_via"], "ROCM_PATH");
    assert_eq!(
        component(&v, "rocm", "HIP headers")["path"],
        r.join("include/hip").display().to_string()
    );
    assert_eq!(backend(&v, "rocm")["can_build"], true);
    // and kplan build uses the same discovery: ROCM_PATH's clang compiles for gfx942
    let k = workspace_root().join("kernels/add.cu");
    let o = kplan_test_support::kplan_command!()
        .args(["build", "--targets", "gfx942", "--format", "json", "-I"])
        .arg(workspace_root().join("kernels"))
        .arg("-I")
        .arg(workspace_root().join("include"))
        .arg(&k)
        .env_remove("KPLAN_HIP_CLANG")
        .env_remove("KPLAN_HIP_PATH")
        .env("PATH", "/nonexistent")
        .env("ROCM_PATH", r)
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let res = &j["results"][0];
    assert_eq!(res["status"], "ok", "{res}");
    assert_eq!(res["compiler"].as_str(), want.as_deref());
}
