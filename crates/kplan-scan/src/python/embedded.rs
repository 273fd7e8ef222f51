//! CUDA source held in Python strings (CuPy `RawKernel` / `RawModule` / `ElementwiseKernel` /
//! `ReductionKernel`, PyCUDA `SourceModule`, `torch.utils.cpp_extension.load_inline`): each
//! string that holds device code is scanned by the CUDA rules, and the findings are placed at
//! their position in the Python file.

use crate::ctx::ScanCtx;
use crate::diag::{Finding, LineIndex};
use crate::python::lex::{Kind, PySrc};
use std::path::Path;

/// APIs that compile CUDA C++ from a Python string.
const CUDA_STRING_APIS: &[&str] = &[
    "RawKernel",
    "RawModule",
    "ElementwiseKernel",
    "ReductionKernel",
    "SourceModule",
    "load_inline",
    "cuda_sources",
];

/// Byte range of a string token's contents (prefix and quotes removed).
fn body_range(tok: &str) -> Option<(usize, usize)> {
    let q = tok.find(['"', '\''])?;
    let prefix = &tok[..q];
    if prefix.chars().any(|c| !c.is_ascii_alphabetic()) {
        return None;
    }
    let rest = &tok[q..];
    let quote = if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
        3
    } else {
        1
    };
    let start = q + quote;
    let end = tok.len().checked_sub(quote)?;
    (start <= end).then_some((start, end))
}

/// Findings of the CUDA rules in the CUDA strings of `src`.
pub fn scan(ctx: &ScanCtx, path: &Path, src: &PySrc) -> Vec<Finding> {
    let text = src.text;
    if !CUDA_STRING_APIS.iter().any(|a| text.contains(a)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut lines: Option<LineIndex> = None;
    for (i, t) in src.toks.iter().enumerate() {
        if src.kind(i) != Some(Kind::Str) {
            continue;
        }
        let tok = src.s(i);
        if !(tok.contains("__global__")
            || tok.contains("__device__")
            || tok.contains("__shfl")
            || tok.contains("threadIdx"))
        {
            continue;
        }
        let Some((a, b)) = body_range(tok) else {
            continue;
        };
        let base = t.start as usize + a;
        let Some(body) = text.get(base..t.start as usize + b) else {
            continue;
        };
        let li = lines.get_or_insert_with(|| LineIndex::new(text));
        for f in crate::cuda::scan_file(ctx, path, body) {
            let mut g = Finding::new(
                f.rule,
                f.severity,
                path,
                li,
                base + f.start,
                base + f.end,
                format!("{} (CUDA source in a Python string)", f.message),
            )
            .with_help(&f.help)
            .with_targets(f.targets.clone());
            g.labels.clear();
            out.push(g);
        }
    }
    out
}
