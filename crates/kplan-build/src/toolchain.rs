//! Finding the compilers the way users have them installed: an override variable first, then
//! `PATH`, then the places vendors, distributions and Python wheels install them. `kplan build`,
//! `kplan verify` and `kplan doctor` all use this one discovery.
//!
//! | tool | override | then |
//! |---|---|---|
//! | nvcc | `KPLAN_NVCC` | `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, `/usr/local/cuda-X.Y/bin` (newest first), `/opt/cuda/bin`, the `nvidia-cuda-nvcc` wheel of the active Python |
//! | NVRTC | `KPLAN_NVRTC` (the library) | beside `KPLAN_NVCC`'s toolkit, `$CUDA_HOME`/`$CUDA_PATH` `lib64`/`lib`, `/usr/local/cuda*/lib64`, the `nvidia-cuda-nvrtc` wheel of the active Python |
//! | HIP clang | `KPLAN_HIP_CLANG` | `llvm/bin/clang` of a ROCm root (below), `amdclang++`/`hipcc` on `PATH` (their ROCm's clang), the newest `clang-NN` (NN >= 17) on `PATH` or in `/usr/lib/llvm-NN/bin`, `clang` |
//! | ROCm root | `KPLAN_HIP_PATH` | `ROCM_PATH`, `HIP_PATH`, `/opt/rocm`, `/opt/rocm-X.Y.Z` (newest first) |
//! | HIP headers / device libraries | a ROCm root, `KPLAN_ROCM_DEVICE_LIB_PATH` | Debian's `/usr/include/hip` (libamdhip64-dev) + `/usr/lib/<triple>/amdgcn/bitcode` (rocm-device-libs) |
//! | host C++ | `KPLAN_CXX` | `CXX`, `c++`, `g++`, `clang++`, `clang++-19` |
//! | Python (Triton, wheels) | `KPLAN_PYTHON` | `$VIRTUAL_ENV/bin/python`, `$CONDA_PREFIX/bin/python`, `python3` on `PATH` |
//! | llvm-as | `KPLAN_LLVM_AS` | next to the HIP clang (`llvm-as`, `llvm-as-NN`), `PATH`; else the HIP clang itself assembles the IR |

use std::path::{Path, PathBuf};
use std::time::Duration;

/// One compiler found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub path: PathBuf,
    /// Where it was found: `KPLAN_NVCC`, `PATH`, `/opt/rocm/llvm/bin`, ...
    pub found_via: String,
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn is_exe(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.is_file()
            && p.metadata()
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

fn on_path(name: &str) -> Option<PathBuf> {
    path_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| is_exe(p))
}

/// An override that is set must exist: a typo there is reported, not silently replaced.
fn from_override(var: &str) -> Option<Result<Tool, String>> {
    let p = env_path(var)?;
    let p = if p.components().count() == 1 {
        on_path(&p.to_string_lossy()).unwrap_or(p)
    } else {
        p
    };
    Some(if is_exe(&p) {
        Ok(Tool {
            path: p,
            found_via: var.to_string(),
        })
    } else {
        Err(format!("{var}={} is not an executable file", p.display()))
    })
}

/// nvcc: `Ok(None)` when there is none, `Err` when an override points nowhere.
pub fn find_nvcc() -> Result<Option<Tool>, String> {
    if let Some(r) = from_override("KPLAN_NVCC") {
        return r.map(Some);
    }
    if let Some(p) = on_path("nvcc") {
        return Ok(Some(Tool {
            path: p,
            found_via: "PATH".into(),
        }));
    }
    Ok(cuda_roots()
        .into_iter()
        .map(|(root, via)| (root.join("bin/nvcc"), via))
        .find(|(p, _)| is_exe(p))
        .map(|(path, found_via)| Tool { path, found_via }))
}

/// CUDA toolkit roots to look in, with where each comes from: `$CUDA_PATH`, `$CUDA_HOME`,
/// `/usr/local/cuda`, `/usr/local/cuda-X.Y` (newest first), `/opt/cuda`, then the CUDA wheels
/// (`nvidia/cu13`, `nvidia/cu12`, `nvidia/cuda_nvcc`, `nvidia/cuda_nvrtc`) of the active Python.
pub fn cuda_roots() -> Vec<(PathBuf, String)> {
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    for v in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(d) = env_path(v) {
            roots.push((d, v.to_string()));
        }
    }
    roots.push(("/usr/local/cuda".into(), "/usr/local/cuda".into()));
    for d in versioned_dirs(Path::new("/usr/local"), "cuda-") {
        let via = d.display().to_string();
        roots.push((d, via));
    }
    roots.push(("/opt/cuda".into(), "/opt/cuda".into()));
    // the active Python's wheels, then those of a `.venv` in the working directory
    let mut pythons: Vec<PathBuf> = find_python().into_iter().collect();
    if let Ok(cwd) = std::env::current_dir() {
        let local = cwd.join(".venv/bin/python");
        if local.is_file() && !pythons.contains(&local) {
            pythons.push(local);
        }
    }
    for py in pythons {
        for site in python_site_dirs(&py) {
            for sub in [
                "nvidia/cu13",
                "nvidia/cu12",
                "nvidia/cuda_nvcc",
                "nvidia/cuda_nvrtc",
            ] {
                let d = site.join(sub);
                if d.is_dir() {
                    roots.push((d, format!("Python wheel ({})", py.display())));
                }
            }
        }
    }
    roots
}

/// `<parent>/<prefix>X.Y...` directories, highest version first.
fn versioned_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ver = name.strip_prefix(prefix)?;
            let nums: Vec<u32> = ver
                .split('.')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            e.path().is_dir().then(|| (nums, e.path()))
        })
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0));
    v.into_iter().map(|(_, p)| p).collect()
}

/// Where a Python installation keeps its packages, found from the interpreter's path without
/// running it: `<prefix>/lib{,64}/pythonX.Y/site-packages`, Debian's `dist-packages`, and the
/// user site `~/.local/lib/pythonX.Y/site-packages`. Only existing directories.
pub fn python_site_dirs(python: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut prefixes: Vec<PathBuf> = Vec::new();
    // a venv's `bin/python` is a link to the base interpreter: its own prefix first
    if let Some(p) = python.parent().and_then(Path::parent) {
        prefixes.push(p.to_path_buf());
    }
    if let Ok(real) = std::fs::canonicalize(python) {
        if let Some(p) = real.parent().and_then(Path::parent) {
            if !prefixes.iter().any(|q| q == p) {
                prefixes.push(p.to_path_buf());
            }
        }
    }
    if let Some(h) = env_path("HOME") {
        prefixes.push(h.join(".local"));
    }
    for pre in prefixes {
        for lib in ["lib", "lib64", "local/lib"] {
            let Ok(rd) = std::fs::read_dir(pre.join(lib)) else {
                continue;
            };
            let mut vers: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| e.path())
                .collect();
            vers.sort();
            for v in vers {
                for sub in ["site-packages", "dist-packages"] {
                    let d = v.join(sub);
                    if d.is_dir() && !out.contains(&d) {
                        out.push(d);
                    }
                }
            }
        }
    }
    out
}

/// Where libnvrtc may be, in the order it is tried: `KPLAN_NVRTC` (the library file), the
/// toolkit of `KPLAN_NVCC`, then every [`cuda_roots`] entry (`lib64`, `lib`), each with the
/// library names of CUDA 13 and 12.
pub fn nvrtc_candidates() -> Vec<(PathBuf, String)> {
    let mut c = Vec::new();
    if let Some(p) = env_path("KPLAN_NVRTC") {
        c.push((p, "KPLAN_NVRTC".to_string()));
    }
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    if let Some(nvcc) = env_path("KPLAN_NVCC") {
        if let Some(root) = nvcc.parent().and_then(Path::parent) {
            roots.push((root.to_path_buf(), "KPLAN_NVCC's toolkit".into()));
        }
    }
    roots.extend(cuda_roots());
    for (root, via) in roots {
        for lib in ["lib64", "lib"] {
            for name in ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"] {
                c.push((root.join(lib).join(name), via.clone()));
            }
        }
    }
    c
}

/// The first libnvrtc that exists among [`nvrtc_candidates`] (not loaded).
pub fn find_nvrtc() -> Option<Tool> {
    nvrtc_candidates()
        .into_iter()
        .find(|(p, _)| p.is_file())
        .map(|(path, found_via)| Tool { path, found_via })
}

/// Major version in a `clang-NN` file name.
fn clang_suffix_major(name: &str) -> Option<u32> {
    name.strip_prefix("clang-")?.parse().ok()
}

/// A clang that can compile HIP: `Ok(None)` when there is none.
pub fn find_hip_clang() -> Result<Option<Tool>, String> {
    if let Some(r) = from_override("KPLAN_HIP_CLANG") {
        return r.map(Some);
    }
    for (r, via) in rocm_roots() {
        let p = r.join("llvm/bin/clang");
        if is_exe(&p) {
            return Ok(Some(Tool {
                path: p,
                found_via: via,
            }));
        }
    }
    // ROCm's drivers on PATH: their clang is `<root>/llvm/bin/clang` beside `<root>/bin`
    for name in ["amdclang++", "hipcc"] {
        if let Some(p) = on_path(name) {
            let real = std::fs::canonicalize(&p).unwrap_or(p);
            let clang = real
                .parent()
                .and_then(Path::parent)
                .map(|root| root.join("llvm/bin/clang"));
            let clang = match clang {
                Some(c) if is_exe(&c) => c,
                // amdclang++ lives in llvm/bin itself
                _ => real.with_file_name("clang"),
            };
            if is_exe(&clang) {
                return Ok(Some(Tool {
                    path: clang,
                    found_via: format!("{name} on PATH"),
                }));
            }
        }
    }
    // Newest versioned clang >= 17 on PATH or under /usr/lib/llvm-NN/bin.
    let mut best: Option<(u32, PathBuf, String)> = None;
    let mut consider = |major: u32, p: PathBuf, via: String| {
        if major >= 17 && is_exe(&p) && best.as_ref().map_or(true, |b| major > b.0) {
            best = Some((major, p, via));
        }
    };
    for d in path_dirs() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                if let Some(m) = e.file_name().to_str().and_then(clang_suffix_major) {
                    consider(m, e.path(), "PATH".into());
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(m) = name
                .strip_prefix("llvm-")
                .and_then(|v| v.parse::<u32>().ok())
            {
                let dir = e.path().join("bin");
                consider(m, dir.join("clang"), dir.display().to_string());
            }
        }
    }
    if let Some((_, p, via)) = best {
        return Ok(Some(Tool {
            path: p,
            found_via: via,
        }));
    }
    Ok(on_path("clang").map(|p| Tool {
        path: p,
        found_via: "PATH".into(),
    }))
}

/// The host C++ compiler (C++20 for the header's host path): `KPLAN_CXX`, `CXX`, then `c++`,
/// `g++`, `clang++`, `clang++-19` on `PATH`.
pub fn find_cxx() -> Result<Option<Tool>, String> {
    if let Some(r) = from_override("KPLAN_CXX") {
        return r.map(Some);
    }
    if let Some(r) = from_override("CXX") {
        return r.map(Some);
    }
    Ok(["c++", "g++", "clang++", "clang++-19"]
        .iter()
        .find_map(|n| on_path(n))
        .map(|p| Tool {
            path: p,
            found_via: "PATH".into(),
        }))
}

/// The Python that runs the Triton drivers and whose wheels are searched: `KPLAN_PYTHON` (must
/// exist), else the active virtual or conda environment's (`$VIRTUAL_ENV/bin/python`,
/// `$CONDA_PREFIX/bin/python`), else `python3` on `PATH`. `Err` says why there is none.
pub fn find_python() -> Result<PathBuf, String> {
    find_python_tool().map(|t| t.path)
}

/// [`find_python`] with where it was found.
pub fn find_python_tool() -> Result<Tool, String> {
    if let Some(p) = env_path("KPLAN_PYTHON") {
        if !p.exists() {
            return Err(format!("KPLAN_PYTHON={} does not exist", p.display()));
        }
        return Ok(Tool {
            path: p,
            found_via: "KPLAN_PYTHON".into(),
        });
    }
    for v in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(d) = env_path(v) {
            let p = d.join("bin/python");
            if p.is_file() {
                return Ok(Tool {
                    path: p,
                    found_via: v.into(),
                });
            }
        }
    }
    path_dirs()
        .into_iter()
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .map(|p| Tool {
            path: p,
            found_via: "PATH".into(),
        })
        .ok_or_else(|| "python3 is not on PATH".to_string())
}

/// `llvm-as` matching `clang`, if one is installed.
pub fn find_llvm_as(clang: &Path) -> Option<PathBuf> {
    if let Some(p) = env_path("KPLAN_LLVM_AS") {
        return Some(p);
    }
    let dir = clang.parent()?;
    let name = clang.file_name()?.to_string_lossy().into_owned();
    let mut cands = vec![dir.join("llvm-as")];
    if let Some(m) = clang_suffix_major(&name) {
        cands.insert(0, dir.join(format!("llvm-as-{m}")));
        cands.push(PathBuf::from(format!("/usr/lib/llvm-{m}/bin/llvm-as")));
    }
    // A symlinked clang (/usr/bin/clang-19 -> ../lib/llvm-19/bin/clang) has llvm-as beside its target.
    if let Ok(real) = std::fs::canonicalize(clang) {
        if let Some(d) = real.parent() {
            cands.push(d.join("llvm-as"));
        }
    }
    cands.into_iter().find(|p| is_exe(p))
}

/// ROCm installations to look in, with where each comes from: `KPLAN_HIP_PATH`, `ROCM_PATH`,
/// `HIP_PATH`, `/opt/rocm`, `/opt/rocm-X.Y.Z` (newest first).
pub fn rocm_roots() -> Vec<(PathBuf, String)> {
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    for v in ["KPLAN_HIP_PATH", "ROCM_PATH", "HIP_PATH"] {
        if let Some(h) = env_path(v) {
            roots.push((h, v.to_string()));
        }
    }
    roots.push(("/opt/rocm".into(), "/opt/rocm".into()));
    for d in versioned_dirs(Path::new("/opt"), "rocm-") {
        let via = d.display().to_string();
        roots.push((d, via));
    }
    roots
}

/// The first of [`rocm_roots`] with the HIP headers (`include/hip/hip_runtime.h`).
pub fn rocm_root() -> Option<PathBuf> {
    rocm_roots()
        .into_iter()
        .map(|(r, _)| r)
        .find(|r| r.join("include/hip/hip_runtime.h").is_file())
}

/// Where the HIP headers are: a ROCm root's `include`, else `/usr/include` (Debian's
/// libamdhip64-dev); `None` when there are none.
pub fn hip_include_dir() -> Option<PathBuf> {
    if let Some(r) = rocm_root() {
        return Some(r.join("include"));
    }
    let d = PathBuf::from("/usr/include");
    d.join("hip/hip_runtime.h").is_file().then_some(d)
}

/// The ROCm device-library directory (`ocml.bc`, `oclc_isa_version_*.bc`, ...).
pub fn device_lib_dir(clang: &Path) -> Option<PathBuf> {
    let mut cands: Vec<PathBuf> = Vec::new();
    if let Some(p) = env_path("KPLAN_ROCM_DEVICE_LIB_PATH") {
        cands.push(p);
    }
    if let Some(r) = rocm_root() {
        cands.push(r.join("amdgcn/bitcode"));
        cands.push(r.join("lib/llvm/lib/clang").join("amdgcn/bitcode"));
    }
    cands.push("/opt/rocm/amdgcn/bitcode".into());
    if let Ok(rd) = std::fs::read_dir("/usr/lib") {
        let mut v: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path().join("amdgcn/bitcode"))
            .collect();
        v.sort();
        cands.extend(v);
    }
    cands.push("/usr/lib/amdgcn/bitcode".into());
    // Newer LLVM packages ship the device libraries inside the clang resource directory.
    if let Ok(real) = std::fs::canonicalize(clang) {
        if let Some(llvm_root) = real.parent().and_then(Path::parent) {
            if let Ok(rd) = std::fs::read_dir(llvm_root.join("lib/clang")) {
                for e in rd.flatten() {
                    cands.push(e.path().join("lib/amdgcn/bitcode"));
                    cands.push(e.path().join("amdgcn/bitcode"));
                }
            }
        }
    }
    cands.into_iter().find(|d| d.join("ocml.bc").is_file())
}

/// First line of `tool --version` that names a version, shortened: `nvcc 13.0.88`,
/// `clang 19.1.7`, `g++ 12.2.0`.
pub fn version(tool: &Path, timeout: Duration) -> Result<String, String> {
    let out = crate::process::run(tool, &["--version".to_string()], None, timeout)
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if out.timed_out {
        return Err(format!(
            "timed out after {} s running `{} --version`",
            timeout.as_secs(),
            tool.display()
        ));
    }
    let text = out.text();
    Ok(parse_version(&text).unwrap_or_else(|| {
        tool.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "unknown compiler".into())
    }))
}

/// Extracts a short compiler name and version from `--version` output.
pub fn parse_version(text: &str) -> Option<String> {
    for line in text.lines() {
        // nvcc: "Cuda compilation tools, release 13.0, V13.0.88"
        if let Some(i) = line.find(", V") {
            if line.contains("Cuda compilation tools") {
                let v = line[i + 3..].trim();
                return Some(format!("nvcc {v}"));
            }
        }
        // clang: "Debian clang version 19.1.7 (3~deb12u1)", "AMD clang version 17.0.0 (...)"
        if let Some(i) = line.find("clang version ") {
            let v = line[i + 14..].split_whitespace().next()?;
            return Some(format!("clang {v}"));
        }
        // gcc: "g++ (Debian 12.2.0-14) 12.2.0"
        if line.starts_with("g++") || line.starts_with("c++") || line.starts_with("gcc") {
            let v = line.split_whitespace().last()?;
            return Some(format!("g++ {v}"));
        }
    }
    None
}

/// Major version from a [`parse_version`] string (`clang 19.1.7` -> 19).
pub fn major(version: &str) -> Option<u32> {
    version
        .split_whitespace()
        .nth(1)?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// One component of a backend as `kplan doctor` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Component {
    /// `nvcc`, `NVRTC`, `HIP clang`, ...
    pub name: &'static str,
    /// Where it is, when found.
    pub path: Option<PathBuf>,
    /// How it was found (`PATH`, `CUDA_HOME`, `Python wheel (...)`, ...).
    pub found_via: Option<String>,
    /// Its version, when it can tell.
    pub version: Option<String>,
    /// What it is needed for.
    pub needed_for: &'static str,
    /// Why it is missing or unusable (None: found and usable).
    pub problem: Option<String>,
    /// How to install it (given when it is missing).
    pub install: Option<&'static str>,
}

/// A backend's toolchain: `cuda`, `rocm`, `triton`, `cpu`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackendSurvey {
    pub backend: &'static str,
    pub title: &'static str,
    /// Whether kernels for it can be compiled (`kplan build`).
    pub can_build: bool,
    pub components: Vec<Component>,
}

const INSTALL_NVCC: &str = "pip install nvidia-cuda-nvcc nvidia-cuda-crt nvidia-cuda-runtime nvidia-nvvm (into the active Python; no GPU needed), or the CUDA toolkit (https://developer.nvidia.com/cuda-downloads); or point CUDA_HOME or KPLAN_NVCC at it";
const INSTALL_NVRTC: &str =
    "pip install nvidia-cuda-nvrtc, or the CUDA toolkit; or set KPLAN_NVRTC to libnvrtc.so";
const INSTALL_DRIVER: &str =
    "the NVIDIA driver (https://www.nvidia.com/drivers) on a machine with an NVIDIA GPU";
const INSTALL_HIP: &str = "apt install clang-19 lld-19 llvm-19 libamdhip64-dev rocm-device-libs (Debian 13, Ubuntu 24.04+), or ROCm (https://rocm.docs.amd.com); or point ROCM_PATH or KPLAN_HIP_CLANG at it";
const INSTALL_TRITON: &str =
    "pip install triton (into the active Python), or set KPLAN_PYTHON to a Python that has it";
const INSTALL_PYTHON: &str = "install Python 3 (python3 on PATH), or set KPLAN_PYTHON";
const INSTALL_CXX: &str = "apt install g++ (or clang++), or set CXX or KPLAN_CXX";

fn component(
    name: &'static str,
    needed_for: &'static str,
    install: &'static str,
    found: Result<Option<Tool>, String>,
    timeout: Duration,
    with_version: bool,
) -> Component {
    let mut c = Component {
        name,
        path: None,
        found_via: None,
        version: None,
        needed_for,
        problem: None,
        install: None,
    };
    match found {
        Ok(Some(t)) => {
            if with_version {
                match version(&t.path, timeout) {
                    Ok(v) => c.version = Some(v),
                    Err(e) => c.problem = Some(e),
                }
            }
            c.path = Some(t.path);
            c.found_via = Some(t.found_via);
        }
        Ok(None) => {
            c.problem = Some("not found".into());
            c.install = Some(install);
        }
        Err(e) => {
            c.problem = Some(e);
            c.install = Some(install);
        }
    }
    c
}

/// libcuda (the NVIDIA driver), needed to run kernels on a GPU: looked for in the loader's
/// usual directories and `LD_LIBRARY_PATH`.
pub fn find_libcuda() -> Option<Tool> {
    let mut dirs: Vec<(PathBuf, String)> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| (d, "LD_LIBRARY_PATH".to_string()))
                .collect()
        })
        .unwrap_or_default();
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    ] {
        dirs.push((d.into(), d.into()));
    }
    dirs.into_iter()
        .map(|(d, via)| (d.join("libcuda.so.1"), via))
        .find(|(p, _)| p.is_file())
        .map(|(path, found_via)| Tool { path, found_via })
}

/// What `kplan doctor` reports: every backend's compilers and libraries as this discovery finds
/// them, with versions (each `--version` limited to `timeout`) and how to install what is missing.
pub fn survey(timeout: Duration) -> Vec<BackendSurvey> {
    // CUDA
    let nvcc = component(
        "nvcc",
        "kplan build for sm_* targets",
        INSTALL_NVCC,
        find_nvcc(),
        timeout,
        true,
    );
    let mut nvrtc = component(
        "NVRTC",
        "kplan verify/bench --backend cuda (run-time compilation)",
        INSTALL_NVRTC,
        Ok(find_nvrtc()),
        timeout,
        false,
    );
    nvrtc.version = nvrtc.path.as_ref().and_then(|p| {
        let name = p.file_name()?.to_str()?;
        name.strip_prefix("libnvrtc.so.")
            .map(|v| format!("libnvrtc {v}"))
    });
    let driver = component(
        "driver (libcuda)",
        "running kernels on an NVIDIA GPU (verify/bench --backend cuda)",
        INSTALL_DRIVER,
        Ok(find_libcuda()),
        timeout,
        false,
    );
    let cuda = BackendSurvey {
        backend: "cuda",
        title: "NVIDIA (CUDA)",
        can_build: nvcc.problem.is_none(),
        components: vec![nvcc, nvrtc, driver],
    };
    // ROCm
    let clang_found = find_hip_clang();
    let clang_path = clang_found
        .as_ref()
        .ok()
        .and_then(|t| t.as_ref())
        .map(|t| t.path.clone());
    let mut clang = component(
        "HIP clang",
        "kplan build for gfx* targets",
        INSTALL_HIP,
        clang_found,
        timeout,
        true,
    );
    if let Some(m) = clang.version.as_deref().and_then(major) {
        if m < 17 {
            clang.problem = Some(format!("clang {m} is too old for HIP (17 or newer)"));
            clang.install = Some(INSTALL_HIP);
        }
    }
    let dir_component = |name: &'static str, needed_for: &'static str, d: Option<PathBuf>| {
        let found = d.map(|path| Tool {
            found_via: if path.starts_with("/usr") && rocm_root().is_none() {
                "Debian packages".into()
            } else {
                "ROCm root".into()
            },
            path,
        });
        component(name, needed_for, INSTALL_HIP, Ok(found), timeout, false)
    };
    let headers = dir_component(
        "HIP headers",
        "kplan build for gfx* targets",
        hip_include_dir().map(|d| d.join("hip")),
    );
    let devlibs = dir_component(
        "ROCm device libraries",
        "kplan build for gfx* targets (ocml, oclc)",
        clang_path.as_deref().and_then(device_lib_dir),
    );
    let rocm = BackendSurvey {
        backend: "rocm",
        title: "AMD (ROCm/HIP)",
        can_build: clang.problem.is_none()
            && headers.problem.is_none()
            && devlibs.problem.is_none(),
        components: vec![clang, headers, devlibs],
    };
    // Triton
    let py_found = find_python_tool();
    let py_path = py_found.as_ref().ok().map(|t| t.path.clone());
    let python = component(
        "Python",
        "Triton kernels (kplan build/verify on .py files)",
        INSTALL_PYTHON,
        py_found.map(Some),
        timeout,
        false,
    );
    let mut triton = Component {
        name: "triton",
        path: None,
        found_via: None,
        version: None,
        needed_for: "Triton kernels (kplan build/verify on .py files)",
        problem: None,
        install: None,
    };
    match py_path {
        None => {
            triton.problem = Some("no Python".into());
            triton.install = Some(INSTALL_TRITON);
        }
        Some(py) => match triton_version(&py, timeout) {
            Ok((v, at)) => {
                triton.version = Some(format!("triton {v}"));
                triton.path = Some(at);
                triton.found_via = Some(format!("import triton ({})", py.display()));
            }
            Err(e) => {
                triton.problem = Some(e);
                triton.install = Some(INSTALL_TRITON);
            }
        },
    }
    let triton_b = BackendSurvey {
        backend: "triton",
        title: "Triton",
        can_build: python.problem.is_none() && triton.problem.is_none(),
        components: vec![python, triton],
    };
    // CPU
    let cxx = component(
        "C++ compiler",
        "the CPU fallback (kplan build cpu-*, kplan verify --backend cpu)",
        INSTALL_CXX,
        find_cxx(),
        timeout,
        true,
    );
    let cpu = BackendSurvey {
        backend: "cpu",
        title: "CPU fallback",
        can_build: cxx.problem.is_none(),
        components: vec![cxx],
    };
    vec![cuda, rocm, triton_b, cpu]
}

/// `triton.__version__` and the package's directory, from `python`.
pub fn triton_version(python: &Path, timeout: Duration) -> Result<(String, PathBuf), String> {
    let code =
        "import os, triton; print(triton.__version__); print(os.path.dirname(triton.__file__))";
    let out = crate::process::run(python, &["-c".to_string(), code.to_string()], None, timeout)
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if out.timed_out {
        return Err(format!(
            "`import triton` timed out after {} s",
            timeout.as_secs()
        ));
    }
    if !out.success() {
        let last = out.stderr.lines().last().unwrap_or("").trim().to_string();
        return Err(if last.contains("No module named") {
            format!("not installed in {}", python.display())
        } else {
            format!("`import triton` failed: {last}")
        });
    }
    let mut lines = out.stdout.lines();
    let v = lines.next().unwrap_or("").trim().to_string();
    let at = PathBuf::from(lines.next().unwrap_or("").trim());
    Ok((v, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(
            parse_version("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n").as_deref(),
            Some("nvcc 13.0.88")
        );
        assert_eq!(
            parse_version("Debian clang version 19.1.7 (3~deb12u1)\nTarget: x").as_deref(),
            Some("clang 19.1.7")
        );
        assert_eq!(parse_version("AMD clang version 17.0.0 (https://github.com/RadeonOpenCompute/llvm-project roc-6.0.0)").as_deref(), Some("clang 17.0.0"));
        assert_eq!(
            parse_version("g++ (Debian 12.2.0-14) 12.2.0\nCopyright").as_deref(),
            Some("g++ 12.2.0")
        );
        assert_eq!(major("clang 19.1.7"), Some(19));
        assert_eq!(clang_suffix_major("clang-19"), Some(19));
        assert_eq!(clang_suffix_major("clang-format-19"), None);
    }
}
