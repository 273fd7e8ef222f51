//! Finding the compilers: an override variable first, then `PATH`, then the places vendors and
//! distributions install them.
//!
//! | tool | override | then |
//! |---|---|---|
//! | nvcc | `KPLAN_NVCC` | `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, `/opt/cuda/bin` |
//! | HIP clang | `KPLAN_HIP_CLANG` | `$KPLAN_HIP_PATH/llvm/bin`, `/opt/rocm/llvm/bin`, the newest `clang-NN` (NN >= 17) on `PATH` or in `/usr/lib/llvm-NN/bin`, `clang` |
//! | HIP headers / device libraries | `KPLAN_HIP_PATH` (a ROCm root), `KPLAN_ROCM_DEVICE_LIB_PATH` | `/opt/rocm`, Debian's `/usr/include/hip` + `/usr/lib/<triple>/amdgcn/bitcode` |
//! | host C++ | `KPLAN_CXX` | `CXX`, `c++`, `g++`, `clang++`, `clang++-19` |
//! | Python (Triton drivers) | `KPLAN_PYTHON` | `python3` on `PATH` |
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
    let mut dirs: Vec<PathBuf> = Vec::new();
    for v in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(d) = env_path(v) {
            dirs.push(d.join("bin"));
        }
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.push("/opt/cuda/bin".into());
    Ok(dirs
        .into_iter()
        .map(|d| d.join("nvcc"))
        .find(|p| is_exe(p))
        .map(|p| {
            let via = p
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            Tool {
                path: p,
                found_via: via,
            }
        }))
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
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(h) = env_path("KPLAN_HIP_PATH") {
        roots.push(h);
    }
    roots.push("/opt/rocm".into());
    for r in &roots {
        let p = r.join("llvm/bin/clang");
        if is_exe(&p) {
            return Ok(Some(Tool {
                path: p,
                found_via: r.join("llvm/bin").display().to_string(),
            }));
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

/// The Python that runs the Triton drivers: `KPLAN_PYTHON` (must exist), else `python3` on
/// `PATH`. `Err` says why there is none.
pub fn find_python() -> Result<PathBuf, String> {
    if let Some(p) = env_path("KPLAN_PYTHON") {
        if !p.exists() {
            return Err(format!("KPLAN_PYTHON={} does not exist", p.display()));
        }
        return Ok(p);
    }
    path_dirs()
        .into_iter()
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
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

/// A ROCm root given by `KPLAN_HIP_PATH` or at `/opt/rocm` (with `include/hip`).
pub fn rocm_root() -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(h) = env_path("KPLAN_HIP_PATH") {
        roots.push(h);
    }
    roots.push("/opt/rocm".into());
    roots
        .into_iter()
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
