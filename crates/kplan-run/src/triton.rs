//! Triton kernels on the CPU (Triton interpreter) and on CUDA, checked against the CPU reference.
//!
//! `kplan verify kernel.py --backend cpu` runs the file's launch wrapper under
//! `TRITON_INTERPRET=1`; `--backend cuda` launches it on the GPU (skipped with a reason when
//! there is none). Inputs come from the verify engine's generator ([`crate::verify::make_case`],
//! the data kinds of [`crate::data::DataKind`]), are written as raw little-endian f32/bf16 files
//! ([`crate::exec::encode`]), and the embedded driver (`python/triton_verify.py`) calls the
//! wrapper once per case in one Python process; outputs come back the same way and are checked
//! like every other backend's ([`crate::verify::expected`], [`crate::verify::check`]).
//!
//! Which wrapper: a `# kplan: op=softmax entry=my_softmax` comment in the file, else a top-level
//! function named after the op (`softmax(x, out=None)`, `rmsnorm(x, w, eps=..., out=None)`), else
//! the op named by the file stem. Wrappers receive torch tensors when torch is importable, else
//! small stand-ins with the torch methods Triton and a row-kernel wrapper use (`shape`,
//! `stride()`, `new_empty()`, `data_ptr()`, `dtype`).

use crate::exec::{decode, encode};
use crate::kernels::Shape;
use crate::reference::{Comparison, DType, Op};
use crate::skip::Skip;
use crate::verify::{check, expected, make_case, Expected};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The driver script, run as `python triton_verify.py request.json`.
pub const DRIVER: &str = include_str!("../python/triton_verify.py");

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

/// Input data kinds.
/// The data kinds of a case: the verify engine's.
pub use crate::data::DataKind as Data;

/// One case's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct TritonCase {
    pub dtype: &'static str,
    pub rows: usize,
    pub cols: usize,
    pub data: Data,
    pub ok: bool,
    pub mismatches: usize,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    /// First element outside the tolerance: (index, got, want).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<(usize, f32, f32)>,
    /// The wrapper raised instead of returning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything one `kplan verify kernel.py` learned.
#[derive(Debug, Clone, Serialize)]
pub struct TritonVerifyReport {
    pub path: String,
    pub op: &'static str,
    pub entry: String,
    pub backend: TritonBackend,
    /// Why nothing ran (e.g. no CUDA device); `cases` is then empty. JSON: the string
    /// `skipped`.
    #[serde(
        rename = "skipped",
        serialize_with = "crate::skip::as_reason",
        skip_serializing_if = "Option::is_none"
    )]
    pub skip: Option<Skip>,
    /// `torch` or `kplan` (the stand-in tensors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<String>,
    pub cases: Vec<TritonCase>,
}

impl TritonVerifyReport {
    /// True when every case matched (a skipped run is not a pass: check `skip`).
    pub fn ok(&self) -> bool {
        self.skip.is_none() && !self.cases.is_empty() && self.cases.iter().all(|c| c.ok)
    }
}

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

/// SplitMix64: deterministic inputs without a dependency.
struct Planned {
    dtype: DType,
    rows: usize,
    cols: usize,
    data: Data,
    want: Expected,
    output: PathBuf,
}

/// Runs the file's launch wrapper on every (dtype, shape, data) case and compares each output
/// with the CPU reference. A missing GPU for `--backend cuda` gives a report with `skip` set.
pub fn verify(req: &TritonVerifyRequest) -> Result<TritonVerifyReport, TritonVerifyError> {
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
    let python = kplan_build::triton::python()?;
    kplan_build::triton::triton_version(&python)?;
    let dir = tempfile::Builder::new()
        .prefix("kplan-triton-verify-")
        .tempdir()?;
    let shapes = if req.shapes.is_empty() {
        default_shapes(req.backend)
    } else {
        req.shapes.clone()
    };
    let kinds: &[Data] = Data::for_op(op);
    let mut planned = Vec::new();
    let mut cases_json = Vec::new();
    let mut seed = req.seed;
    for &dtype in &req.dtypes {
        for &(rows, cols) in &shapes {
            if rows == 0 || cols == 0 {
                return Err(TritonVerifyError::Input {
                    path: shown,
                    message: format!("shape {rows}x{cols} is empty"),
                });
            }
            for &data in kinds {
                seed = seed.wrapping_add(1);
                let i = planned.len();
                let shape = Shape::Rows { rows, cols };
                let case = make_case(op, data, dtype, shape, seed, req.eps);
                let xf = dir.path().join(format!("x{i}.bin"));
                std::fs::write(&xf, encode(&case.a, dtype))?;
                let mut inputs = vec![serde_json::json!({"name": "x", "file": xf})];
                if op == Op::Rmsnorm {
                    let wf = dir.path().join(format!("w{i}.bin"));
                    std::fs::write(&wf, encode(&case.b, dtype))?;
                    inputs.push(serde_json::json!({"name": "w", "file": wf}));
                }
                let want = expected(op, &case);
                let output = dir.path().join(format!("y{i}.bin"));
                cases_json.push(serde_json::json!({
                    "rows": rows, "cols": cols, "dtype": if dtype == DType::F32 { "f32" } else { "bf16" },
                    "inputs": inputs, "output": output,
                }));
                planned.push(Planned {
                    dtype,
                    rows,
                    cols,
                    data,
                    want,
                    output,
                });
            }
        }
    }
    let abs = std::fs::canonicalize(&req.path)?;
    let request = serde_json::json!({
        "path": abs, "entry": entry, "op": op.as_str(), "backend": req.backend.as_str(),
        "eps": req.eps, "cases": cases_json,
    });
    let stdout =
        kplan_build::triton::run_driver(&python, DRIVER, &request, Duration::from_secs(3600))?;
    let line = kplan_build::triton::last_json_line(&stdout).ok_or_else(|| {
        kplan_build::triton::TritonError::Driver(format!("no reply on stdout: {}", stdout.trim()))
    })?;
    let reply: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| kplan_build::triton::TritonError::Driver(format!("unreadable reply ({e})")))?;
    let mut report = TritonVerifyReport {
        path: shown.clone(),
        op: op.as_str(),
        entry,
        backend: req.backend,
        skip: None,
        tensors: reply["tensors"].as_str().map(str::to_string),
        cases: Vec::new(),
    };
    match reply["status"].as_str() {
        Some("skipped") => {
            report.skip = Some(Skip::new(reply["reason"].as_str().unwrap_or("no device")));
            return Ok(report);
        }
        Some("ok") => {}
        _ => {
            let msg = reply["error"]
                .as_str()
                .unwrap_or("the driver failed")
                .to_string();
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
    let results = reply["cases"].as_array().cloned().unwrap_or_default();
    for (p, r) in planned
        .into_iter()
        .zip(results.iter().map(Some).chain(std::iter::repeat(None)))
    {
        let error = match r {
            Some(r) if r["status"] == "ok" => None,
            Some(r) => Some(r["error"].as_str().unwrap_or("unknown error").to_string()),
            None => Some("no result from the driver".to_string()),
        };
        let (cmp, error) = match error {
            Some(e) => (None, Some(e)),
            None => match std::fs::read(&p.output) {
                Ok(bytes) => {
                    let got = decode(&bytes, p.dtype);
                    let n = p.rows * p.cols;
                    if got.len() != n {
                        (None, Some(format!("{} outputs, expected {n}", got.len())))
                    } else {
                        let shape = Shape::Rows {
                            rows: p.rows,
                            cols: p.cols,
                        };
                        (Some(check(op, p.dtype, shape, &got, &p.want)), None)
                    }
                }
                Err(e) => (None, Some(format!("no output: {e}"))),
            },
        };
        let c = cmp.unwrap_or(Comparison {
            mismatches: p.rows * p.cols,
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            first_bad: None,
        });
        report.cases.push(TritonCase {
            dtype: p.dtype.as_str(),
            rows: p.rows,
            cols: p.cols,
            data: p.data,
            ok: error.is_none() && c.ok(),
            mismatches: c.mismatches,
            max_abs_err: c.max_abs_err,
            max_rel_err: c.max_rel_err,
            first_bad: c.first_bad,
            error,
        });
    }
    Ok(report)
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
