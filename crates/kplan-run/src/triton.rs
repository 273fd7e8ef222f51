//! Triton kernels on the CPU (Triton interpreter) and on CUDA, checked against the CPU reference.
//!
//! `kplan verify kernel.py --backend cpu` runs the file's launch wrapper under
//! `TRITON_INTERPRET=1`; `--backend cuda` launches it on the GPU (skipped with a reason when
//! there is none). [`TritonExecutor`] is one more [`Executor`] of the verify engine
//! ([`crate::verify::verify`]): the same data generator, encoding, tolerances and report as every
//! other backend. It keeps the embedded driver (`python/triton_verify.py`) running in one Python
//! process ([`kplan_build::process::DriverSession`]) and asks it for one wrapper call per case:
//! inputs go as raw little-endian f32/bf16 files ([`crate::exec::encode`]), the output comes back
//! the same way. A Triton kernel has one configuration, its launch wrapper (which picks its own
//! block size and warps); reports name it by the wrapper's function name.
//!
//! Which wrapper: a `# kplan: op=softmax entry=my_softmax` comment in the file, else a top-level
//! function named after the op (`softmax(x, out=None)`, `rmsnorm(x, w, eps=..., out=None)`), else
//! the op named by the file stem. Wrappers receive torch tensors when torch is importable, else
//! small stand-ins with the torch methods Triton and a row-kernel wrapper use (`shape`,
//! `stride()`, `new_empty()`, `data_ptr()`, `dtype`).

use crate::error::RunError;
use crate::exec::{decode, encode, Case, Executor};
use crate::kernels::{Backend, Config, Shape, Tiles};
use crate::reference::{DType, Op};
use crate::skip::Skip;
use crate::verify::{CaseResult, VerifyPlan, VerifyReport};
use kplan_build::process::DriverSession;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The driver script, run as `python triton_verify.py --serve`.
pub const DRIVER: &str = include_str!("../python/triton_verify.py");

/// How long loading the kernel file may take (`import triton`, the file's own imports).
const OPEN_TIMEOUT: Duration = Duration::from_secs(600);
/// How long one wrapper call may take (the first compiles the kernel).
const CASE_TIMEOUT: Duration = Duration::from_secs(600);

/// Where the Triton kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum TritonBackend {
    /// Triton's interpreter (numpy on the host); needs no GPU.
    Cpu,
    /// A CUDA GPU through Triton's NVIDIA backend.
    Cuda,
}

impl TritonBackend {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The verify engine's backend: the host for the interpreter.
    pub fn engine_backend(self) -> Backend {
        match self {
            TritonBackend::Cpu => Backend::Host,
            TritonBackend::Cuda => Backend::Cuda,
        }
    }
}

/// Errors that stop a Triton verify run (a wrong result is a failed case, not an error).
#[derive(Debug, thiserror::Error)]
pub enum TritonVerifyError {
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error(transparent)]
    Toolchain(#[from] kplan_build::triton::TritonError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// What to verify.
#[derive(Debug, Clone)]
pub struct TritonVerifyRequest {
    pub path: PathBuf,
    pub backend: TritonBackend,
    /// Force the op instead of detecting it from the file.
    pub op: Option<Op>,
    /// Force the wrapper function's name.
    pub entry: Option<String>,
    pub dtypes: Vec<DType>,
    /// (rows, cols) shapes; empty means [`default_shapes`].
    pub shapes: Vec<(usize, usize)>,
    pub eps: f32,
    pub seed: u64,
}

impl TritonVerifyRequest {
    pub fn new(path: impl Into<PathBuf>, backend: TritonBackend) -> TritonVerifyRequest {
        TritonVerifyRequest {
            path: path.into(),
            backend,
            op: None,
            entry: None,
            dtypes: DType::ALL.to_vec(),
            shapes: Vec::new(),
            eps: 1e-6,
            seed: 0x006b_706c_616e,
        }
    }
}

/// Shapes verify runs by default: a single column, an odd length, a power of two, and a row
/// longer than one block (the looped path of the reference kernels). The interpreter is numpy
/// per block, so these stay small; the GPU gets larger ones.
pub fn default_shapes(backend: TritonBackend) -> Vec<(usize, usize)> {
    match backend {
        TritonBackend::Cpu => vec![(3, 1), (5, 777), (4, 4096), (2, 40000)],
        TritonBackend::Cuda => vec![(3, 1), (64, 777), (256, 4096), (16, 40000), (1024, 8192)],
    }
}

/// The data kinds of a case: the verify engine's.
pub use crate::data::DataKind as Data;

/// The op and wrapper a kernel file provides (see the module docs for the order).
pub fn detect_entry(path: &Path, text: &str) -> Result<(Op, String), TritonVerifyError> {
    let shown = path.display().to_string();
    let mut op: Option<Op> = None;
    let mut entry: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line
            .trim_start()
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix("kplan:"))
        else {
            continue;
        };
        for word in rest.split_whitespace() {
            if let Some(v) = word.strip_prefix("op=") {
                op = Some(row_op(v).ok_or_else(|| TritonVerifyError::Input {
                    path: format!("{shown}:{}", i + 1),
                    message: format!("`op={v}`: expected op=softmax or op=rmsnorm"),
                })?);
            } else if let Some(v) = word.strip_prefix("entry=") {
                entry = Some(v.to_string());
            }
        }
    }
    // a top-level def, a top-level assignment, or a name imported from elsewhere
    let defined = |name: &str| {
        text.lines().any(|l| {
            l.starts_with(&format!("def {name}("))
                || l.starts_with(&format!("{name} ="))
                || (l.starts_with("from ")
                    && l.contains(" import ")
                    && l.split(" import ").nth(1).is_some_and(|names| {
                        names
                            .split(|c: char| c == ',' || c.is_whitespace() || c == '(' || c == ')')
                            .any(|w| w == name)
                    }))
        })
    };
    if op.is_none() {
        op = [Op::Softmax, Op::Rmsnorm]
            .into_iter()
            .find(|o| defined(entry.as_deref().unwrap_or(o.as_str())) && entry.is_none());
    }
    if op.is_none() {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        op = [Op::Softmax, Op::Rmsnorm]
            .into_iter()
            .find(|o| stem.contains(o.as_str()));
    }
    let op = op.ok_or_else(|| TritonVerifyError::Input {
        path: shown.clone(),
        message: "cannot tell which operation this kernel computes: add `# kplan: op=softmax entry=<wrapper>` \
                  (softmax or rmsnorm), or define a top-level `softmax(x, out=None)` / `rmsnorm(x, w, eps, out=None)`"
            .into(),
    })?;
    let entry = entry.unwrap_or_else(|| op.as_str().to_string());
    if !defined(&entry) {
        return Err(TritonVerifyError::Input {
            path: shown,
            message: format!("no top-level `def {entry}(...)` launch wrapper (name another with `# kplan: entry=<name>`)"),
        });
    }
    Ok((op, entry))
}

fn row_op(s: &str) -> Option<Op> {
    match Op::parse(s)? {
        o @ (Op::Softmax | Op::Rmsnorm) => Some(o),
        _ => None,
    }
}

/// The kernel file's launch wrapper, run by the driver: the verify engine's executor.
pub struct TritonExecutor {
    session: DriverSession,
    backend: TritonBackend,
    entry: String,
    device: String,
    /// Input and output files of the cases.
    dir: tempfile::TempDir,
}

impl TritonExecutor {
    /// Starts the driver and loads `path` (its wrapper `entry` computing `op`); a skip when the
    /// backend cannot run here (no CUDA device). An error names the file (and line) that failed
    /// to load, or the missing Python/Triton.
    pub fn open(
        path: &Path,
        op: Op,
        entry: &str,
        backend: TritonBackend,
    ) -> Result<Result<TritonExecutor, Skip>, TritonVerifyError> {
        let shown = path.display().to_string();
        let (python, version) = kplan_build::triton::available()?;
        let dir = tempfile::Builder::new()
            .prefix("kplan-triton-verify-")
            .tempdir()?;
        let abs = std::fs::canonicalize(path)?;
        let mut session = DriverSession::start(&python, DRIVER)
            .map_err(kplan_build::triton::TritonError::from)?;
        let request = serde_json::json!({
            "cmd": "open", "path": abs, "entry": entry, "op": op.as_str(),
            "backend": backend.as_str(),
        });
        let reply = reply(&mut session, &request, OPEN_TIMEOUT)?;
        match reply["status"].as_str() {
            Some("skipped") => {
                return Ok(Err(Skip::new(
                    reply["reason"].as_str().unwrap_or("no device"),
                )))
            }
            Some("ok") => {}
            _ => {
                let msg = reply["error"].as_str().unwrap_or("the driver failed");
                let path = match reply["line"].as_u64() {
                    Some(l) => format!("{shown}:{l}"),
                    None => shown,
                };
                return Err(TritonVerifyError::Input {
                    path,
                    message: format!("cannot run the kernel file: {msg}"),
                });
            }
        }
        let tensors = reply["tensors"].as_str().unwrap_or("kplan");
        let device = match backend {
            TritonBackend::Cpu => format!("Triton {version} interpreter, {tensors} tensors"),
            TritonBackend::Cuda => format!("Triton {version} on CUDA, {tensors} tensors"),
        };
        Ok(Ok(TritonExecutor {
            session,
            backend,
            entry: entry.to_string(),
            device,
            dir,
        }))
    }

    fn file(&self, name: &str, i: usize) -> PathBuf {
        self.dir.path().join(format!("{name}{i}.bin"))
    }

    fn write(&self, path: &Path, v: &[f32], dtype: DType) -> Result<(), RunError> {
        std::fs::write(path, encode(v, dtype)).map_err(|e| RunError::Io {
            path: path.to_path_buf(),
            source: e,
        })
    }
}

/// One request to the driver and its reply, parsed.
fn reply(
    session: &mut DriverSession,
    request: &serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, kplan_build::triton::TritonError> {
    use kplan_build::triton::TritonError;
    let line = session.request(request, timeout)?;
    serde_json::from_str(&line)
        .map_err(|e| TritonError::Driver(format!("unreadable reply ({e}): {}", line.trim())))
}

impl Executor for TritonExecutor {
    fn describe(&self) -> String {
        self.device.clone()
    }
    fn backend(&self) -> Backend {
        self.backend.engine_backend()
    }
    fn warp(&self) -> u32 {
        32
    }
    fn sms(&self) -> u32 {
        1
    }

    /// One configuration on every shape: the launch wrapper's own.
    fn configs(
        &self,
        _tiles: &Tiles,
        _op: Op,
        _dtype: DType,
        _shape: Shape,
    ) -> Vec<(Config, Option<String>)> {
        let wrapper = Config {
            block: 0,
            vec: 0,
            unroll: 0,
            blocks_per_sm: 0,
            tpr: 0,
            items: 0,
            fp8: 0,
        };
        vec![(wrapper, None)]
    }
    fn label(&self, _cfg: &Config) -> String {
        self.entry.clone()
    }

    fn run(
        &mut self,
        op: Op,
        dtype: DType,
        _cfg: &Config,
        case: &Case,
    ) -> Result<Vec<f32>, RunError> {
        let Shape::Rows { rows, cols } = case.shape else {
            return Err(RunError::Exec {
                what: self.entry.clone(),
                message: "Triton verify runs row kernels only".into(),
            });
        };
        let what = format!("{} ({}, {rows}x{cols})", self.entry, dtype.as_str());
        let x = self.file("x", 0);
        self.write(&x, &case.a, dtype)?;
        let mut inputs = vec![serde_json::json!({"name": "x", "file": x})];
        if op == Op::Rmsnorm {
            let w = self.file("w", 0);
            self.write(&w, &case.b, dtype)?;
            inputs.push(serde_json::json!({"name": "w", "file": w}));
        }
        let output = self.file("y", 0);
        let _ = std::fs::remove_file(&output);
        let request = serde_json::json!({
            "cmd": "case", "rows": rows, "cols": cols,
            "dtype": if dtype == DType::F32 { "f32" } else { "bf16" },
            "inputs": inputs, "output": output, "eps": case.eps,
        });
        let r = reply(&mut self.session, &request, CASE_TIMEOUT).map_err(|e| RunError::Exec {
            what: what.clone(),
            message: e.to_string(),
        })?;
        if r["status"] != "ok" {
            return Err(RunError::Exec {
                what,
                message: r["error"].as_str().unwrap_or("unknown error").to_string(),
            });
        }
        let bytes = std::fs::read(&output).map_err(|e| RunError::Io {
            path: output.clone(),
            source: e,
        })?;
        Ok(decode(&bytes, dtype))
    }
}

/// Runs the file's launch wrapper on every (dtype, shape, data) case of the verify engine and
/// compares each output with the CPU reference. A missing GPU for `--backend cuda` gives a
/// skipped report. `progress` is called after every case (the case, cases done, cases planned).
pub fn verify(
    req: &TritonVerifyRequest,
    progress: &mut dyn FnMut(&CaseResult, usize, usize),
) -> Result<VerifyReport, TritonVerifyError> {
    let shown = req.path.display().to_string();
    let text = std::fs::read_to_string(&req.path).map_err(|e| TritonVerifyError::Input {
        path: shown.clone(),
        message: format!("cannot read: {e}"),
    })?;
    let (mut op, mut entry) = match (req.op, &req.entry) {
        (Some(o), Some(e)) => (o, e.clone()),
        _ => detect_entry(&req.path, &text)?,
    };
    if let Some(o) = req.op {
        op = o;
    }
    if let Some(e) = &req.entry {
        entry = e.clone();
    }
    if !matches!(op, Op::Softmax | Op::Rmsnorm) {
        return Err(TritonVerifyError::Input {
            path: shown,
            message: format!(
                "Triton verify covers softmax and rmsnorm, not {}",
                op.as_str()
            ),
        });
    }
    let shapes = if req.shapes.is_empty() {
        default_shapes(req.backend)
    } else {
        req.shapes.clone()
    };
    if let Some((rows, cols)) = shapes.iter().find(|(r, c)| *r == 0 || *c == 0) {
        return Err(TritonVerifyError::Input {
            path: shown,
            message: format!("shape {rows}x{cols} is empty"),
        });
    }
    let mut exec = match TritonExecutor::open(&req.path, op, &entry, req.backend)? {
        Ok(e) => e,
        Err(skip) => {
            return Ok(VerifyReport::skipped(
                op.as_str(),
                req.backend.engine_backend().as_str(),
                skip,
            ))
        }
    };
    let plan = VerifyPlan {
        op,
        dtypes: req.dtypes.clone(),
        shapes: Some(
            shapes
                .into_iter()
                .map(|(rows, cols)| Shape::Rows { rows, cols })
                .collect(),
        ),
        seed: req.seed,
        eps: req.eps,
    };
    // the executor brings its own configuration; the built-in tiles are never consulted
    Ok(crate::verify::verify(
        &mut exec,
        &Tiles::builtin(),
        op.as_str(),
        &plan,
        progress,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_detection_order() {
        let p = Path::new("k.py");
        let (op, e) = detect_entry(
            p,
            "# kplan: op=rmsnorm entry=fwd\ndef fwd(x, w):\n    pass\n",
        )
        .unwrap();
        assert_eq!((op, e.as_str()), (Op::Rmsnorm, "fwd"));
        let (op, e) = detect_entry(p, "def softmax(x, out=None):\n    pass\n").unwrap();
        assert_eq!((op, e.as_str()), (Op::Softmax, "softmax"));
        let (op, e) = detect_entry(p, "from ._impl import helper, softmax\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((op, e.as_str()), (Op::Softmax, "softmax"));
        let err = detect_entry(p, "def helper():\n    pass\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot tell which operation"), "{err}");
        let err = detect_entry(Path::new("my_softmax.py"), "def run(x):\n    pass\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no top-level `def softmax"), "{err}");
        let err = detect_entry(p, "x = 1\n# kplan: op=gemm\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("k.py:2:"), "{err}");
    }
}
