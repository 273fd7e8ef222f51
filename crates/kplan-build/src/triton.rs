//! Triton builds: compile `@triton.jit` kernels for each target through Triton's own compiler.
//!
//! `kplan build kernel.py --targets sm_90a,gfx942` runs the embedded driver
//! (`python/triton_build.py`) with the Python that has Triton (`KPLAN_PYTHON`, else `python3`).
//! The driver imports the file (stubbing absent imports such as `torch`), finds the kernels
//! (`@triton.jit`, also under `triton.autotune` / `triton.heuristics`; device helpers called from
//! another kernel are left out), works out each kernel's signature and constexpr values (see
//! [`TritonBuildRequest::overrides`] and the driver's docstring for the order), and runs
//! `triton.compile(ASTSource(..), target=GPUTarget(..))` per target, for every autotune config.
//! No GPU is needed: Triton cross-compiles to cubin and hsaco. Resource usage comes from the
//! binary (`cuobjdump --dump-resource-usage`, AMDGPU kernel metadata).

use crate::{process, toolchain};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The driver script, run as `python triton_build.py request.json`.
pub const DRIVER: &str = include_str!("../python/triton_build.py");

/// Environment variable naming the Python interpreter that has Triton.
pub const PYTHON_ENV: &str = "KPLAN_PYTHON";

/// Errors that stop a Triton build as a whole (per-target compile failures are results).
#[derive(Debug, thiserror::Error)]
pub enum TritonError {
    #[error("no Python with Triton found: set {PYTHON_ENV} to a python that can `import triton` ({detail})")]
    PythonNotFound { detail: String },
    #[error("{python} cannot import triton: {detail}")]
    TritonMissing { python: String, detail: String },
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error(transparent)]
    UnknownTarget(#[from] kplan_kb::ResolveError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("the Triton driver failed: {0}")]
    Driver(String),
    #[error("the Triton driver timed out after {0} s")]
    Timeout(u64),
}

/// What to build.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TritonBuildRequest {
    /// The `.py` file.
    pub path: PathBuf,
    /// Target ids (`sm_80`, `sm_90a`, `gfx942`, `gfx1100`, ...).
    pub targets: Vec<String>,
    /// Only this kernel (default: every kernel in the file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `NAME=VALUE` pairs that win over the sidecar, `# kplan:` comments, annotations and
    /// defaults: a parameter's Triton type (`x_ptr=*bf16`, `n=i64`), a constexpr's value
    /// (`BLOCK_SIZE=256`), or `dtype` (pointer element type), `num_warps`, `num_stages`.
    pub overrides: BTreeMap<String, String>,
    /// At most this many autotune configs per kernel (default 16).
    pub max_configs: usize,
}

/// Outcome of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetStatus {
    Ok,
    Failed,
    Skipped,
}

/// One kernel (one config) compiled for one target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TritonTargetResult {
    pub target: String,
    pub status: TargetStatus,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `cuda` or `hip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Registers per thread (NVIDIA) / VGPRs per lane (AMD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    /// AMD scalar registers per wave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sgprs: Option<u32>,
    /// AMD accumulation registers (CDNA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agprs: Option<u32>,
    /// Bytes spilled to local/scratch memory (NVIDIA: local memory; AMD: 4 x spilled registers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill_bytes: Option<u64>,
    /// Shared memory / LDS per block: what Triton requests at launch plus static allocations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes: Option<u64>,
    /// AMD private segment (scratch) per lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch_bytes: Option<u64>,
    pub num_warps: u32,
    /// Lanes per warp / wavefront the kernel was compiled for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_block: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_stages: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_ms: Option<u64>,
}

/// One set of constexpr values and options (the defaults, or one autotune config).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TritonVariant {
    /// `default` or `autotune[i]`, then the config's constexprs and num_warps
    /// (`autotune[0]: BLOCK=4096, num_warps=32`).
    pub config: String,
    pub constexprs: BTreeMap<String, String>,
    pub results: Vec<TritonTargetResult>,
}

/// One kernel of the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TritonKernel {
    pub name: String,
    /// 1-based line of its `def`.
    pub line: u32,
    pub autotune_configs: u32,
    /// Constexprs set by `triton.heuristics` (their values come from the defaults or overrides).
    #[serde(default)]
    pub heuristics: Vec<String>,
    /// Parameter -> Triton type (`*fp32`, `i32`, `constexpr`).
    #[serde(default)]
    pub signature: BTreeMap<String, String>,
    #[serde(default)]
    pub constexprs: BTreeMap<String, String>,
    /// Parameter -> where its type or value came from (`override`, `sidecar`, `comment`,
    /// `annotation`, `default`, `autotune`, `inferred`).
    #[serde(default)]
    pub origin: BTreeMap<String, String>,
    /// Why the kernel could not be compiled at all (e.g. a constexpr without a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub variants: Vec<TritonVariant>,
}

/// Everything `kplan build` learned about a `.py` file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TritonBuildReport {
    pub path: String,
    pub triton_version: Option<String>,
    /// Imports replaced by stubs so the file could load (e.g. `torch` where it is not installed).
    #[serde(default)]
    pub stubbed_imports: Vec<String>,
    pub kernels: Vec<TritonKernel>,
    /// `@triton.jit` functions called from other kernels (not compiled on their own).
    #[serde(default)]
    pub helpers: Vec<String>,
}

impl TritonBuildReport {
    /// Every (kernel, variant, result) triple.
    pub fn results(
        &self,
    ) -> impl Iterator<Item = (&TritonKernel, &TritonVariant, &TritonTargetResult)> {
        self.kernels.iter().flat_map(|k| {
            k.variants
                .iter()
                .flat_map(move |v| v.results.iter().map(move |r| (k, v, r)))
        })
    }
    /// True when nothing failed and no kernel was left uncompiled.
    pub fn ok(&self) -> bool {
        self.kernels.iter().all(|k| k.error.is_none())
            && self
                .results()
                .all(|(_, _, r)| r.status != TargetStatus::Failed)
    }
}

#[derive(Deserialize)]
struct Reply {
    #[serde(flatten)]
    report: TritonBuildReport,
    error: Option<String>,
    line: Option<u32>,
}

/// The Python to run: `$KPLAN_PYTHON`, else `python3` on `PATH` ([`toolchain::find_python`]).
pub fn python() -> Result<PathBuf, TritonError> {
    toolchain::find_python().map_err(|detail| TritonError::PythonNotFound { detail })
}

/// Checks that `python` imports Triton; returns its version.
pub fn triton_version(python: &Path) -> Result<String, TritonError> {
    let mut cmd = Command::new(python);
    cmd.args(["-c", "import triton; print(triton.__version__)"]);
    let out =
        process::run_command(cmd, IMPORT_TIMEOUT).map_err(|e| TritonError::PythonNotFound {
            detail: format!("cannot run {}: {e}", python.display()),
        })?;
    if out.timed_out {
        return Err(TritonError::TritonMissing {
            python: python.display().to_string(),
            detail: format!(
                "`import triton` timed out after {} s",
                IMPORT_TIMEOUT.as_secs()
            ),
        });
    }
    if !out.success() {
        let last = out
            .stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("import failed");
        return Err(TritonError::TritonMissing {
            python: python.display().to_string(),
            detail: last.trim().to_string(),
        });
    }
    Ok(out.stdout.trim().to_string())
}

/// The Python that has Triton and Triton's version, or why there is none.
pub fn available() -> Result<(PathBuf, String), TritonError> {
    let python = python()?;
    let version = triton_version(&python)?;
    Ok((python, version))
}

/// How long `import triton` may take (a cold import compiles nothing but loads large libraries).
const IMPORT_TIMEOUT: Duration = Duration::from_secs(300);

impl From<process::DriverError> for TritonError {
    fn from(e: process::DriverError) -> TritonError {
        use process::DriverError as D;
        match e {
            D::Spawn { .. } => TritonError::PythonNotFound {
                detail: e.to_string(),
            },
            D::Io(e) => TritonError::Io(e),
            D::Request(m) => TritonError::Driver(m),
            D::Timeout(s) => TritonError::Timeout(s),
            D::Exit { .. } => TritonError::Driver(e.to_string()),
        }
    }
}

/// Runs `python script request` with a time limit, returning stdout ([`process::run_driver`]).
pub fn run_driver(
    python: &Path,
    script: &str,
    request: &serde_json::Value,
    timeout: Duration,
) -> Result<String, TritonError> {
    Ok(process::run_driver(python, script, request, timeout)?)
}

pub use crate::process::last_json_line;

/// Compiles every kernel of `req.path` for every target. Per-target failures are results
/// ([`TargetStatus::Failed`]); an unreadable file, a file Python cannot import or a missing
/// toolchain are errors.
///
/// Results that compile but cannot launch are marked failed against the built-in KB's limits
/// ([`check_limits`]); [`build_with_kb`] uses another KB.
pub fn build(req: &TritonBuildRequest) -> Result<TritonBuildReport, TritonError> {
    let mut report = build_unchecked(req)?;
    check_limits(&mut report, kplan_kb::Kb::builtin());
    Ok(report)
}

fn build_unchecked(req: &TritonBuildRequest) -> Result<TritonBuildReport, TritonError> {
    let shown = req.path.display().to_string();
    if !req.path.is_file() {
        return Err(TritonError::Input {
            path: shown,
            message: "no such file".into(),
        });
    }
    let python = python()?;
    triton_version(&python)?;
    let abs = std::fs::canonicalize(&req.path)?;
    let request = serde_json::json!({
        "path": abs,
        "targets": req.targets,
        "kernel": req.kernel,
        "overrides": req.overrides,
        "max_configs": if req.max_configs == 0 { 16 } else { req.max_configs },
    });
    let stdout = run_driver(&python, DRIVER, &request, Duration::from_secs(1800))?;
    let line = last_json_line(&stdout)
        .ok_or_else(|| TritonError::Driver(format!("no reply on stdout: {}", stdout.trim())))?;
    let reply: Reply = serde_json::from_str(line)
        .map_err(|e| TritonError::Driver(format!("unreadable reply ({e})")))?;
    if let Some(message) = reply.error {
        let path = match reply.line {
            Some(l) => format!("{shown}:{l}"),
            None => shown,
        };
        return Err(TritonError::Input {
            path,
            message: format!("cannot load the kernel file: {message}"),
        });
    }
    let mut report = reply.report;
    report.path = shown;
    Ok(report)
}

/// [`build`] for targets named the way the rest of kplan names them (architecture ids, devices,
/// aliases, resolved through the KB), then [`check_limits`]. Unknown names are errors.
pub fn build_with_kb(
    req: &TritonBuildRequest,
    kb: &kplan_kb::Kb,
) -> Result<TritonBuildReport, TritonError> {
    let mut resolved = req.clone();
    resolved.targets.clear();
    for name in &req.targets {
        let id = kb.resolve(name)?.arch.id.clone();
        if !resolved.targets.contains(&id) {
            resolved.targets.push(id);
        }
    }
    let mut report = build_unchecked(&resolved)?;
    check_limits(&mut report, kb);
    Ok(report)
}

/// Marks results that compile but cannot launch on the target as failed: more threads per block
/// than the target allows (e.g. `num_warps=32` is 2048 threads on a wave64 AMD GPU), more shared
/// memory / LDS than a block may have (64 KiB on gfx942, 160 KiB on gfx950), or (NVIDIA) more
/// registers than a block may hold. Limits come from the KB; unknown targets are left alone.
pub fn check_limits(report: &mut TritonBuildReport, kb: &kplan_kb::Kb) {
    for k in &mut report.kernels {
        for v in &mut k.variants {
            for r in &mut v.results {
                if r.status != TargetStatus::Ok {
                    continue;
                }
                let Ok(t) = kb.resolve(&r.target) else {
                    continue;
                };
                let a = t.arch;
                let mut why = Vec::new();
                let threads = r.threads_per_block.unwrap_or(0);
                if let Some(max) = a.max_threads_per_block.get() {
                    if threads > max {
                        why.push(format!(
                            "num_warps={} x {} lanes = {threads} threads per block, above the {max}-thread limit of {}",
                            r.num_warps,
                            r.wave_size.unwrap_or(0),
                            a.id
                        ));
                    }
                }
                if let (Some(sh), Some(max)) = (r.shared_bytes, a.shared_per_block_bytes.get()) {
                    if sh > max {
                        why.push(format!("{sh} bytes of shared memory/LDS per block, above the {max} bytes {} allows", a.id));
                    }
                }
                if a.vendor == kplan_kb::Vendor::Nvidia {
                    if let (Some(regs), Some(file)) = (r.registers, a.registers_per_sm.get()) {
                        let need = regs as u64 * threads as u64;
                        if need > file {
                            why.push(format!("{regs} registers x {threads} threads = {need}, above the {file}-register file"));
                        }
                    }
                }
                if !why.is_empty() {
                    r.status = TargetStatus::Failed;
                    r.reason = Some(format!("compiles but cannot launch: {}", why.join("; ")));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_parses_with_missing_optional_fields() {
        let json = r#"{"path":"k.py","triton_version":"3.6.0","kernels":[{"name":"k","line":3,"autotune_configs":0,
            "variants":[{"config":"default","constexprs":{},"results":[{"target":"foo","status":"skipped","num_warps":4,"reason":"x"}]}]}]}"#;
        let r: Reply = serde_json::from_str(json).unwrap();
        assert!(r.error.is_none());
        assert_eq!(r.report.results().count(), 1);
        assert!(r.report.ok());
    }

    #[test]
    fn last_json_line_skips_prints() {
        assert_eq!(last_json_line("hello\n{\"a\":1}\n"), Some("{\"a\":1}"));
        assert_eq!(last_json_line("nothing"), None);
    }
}
