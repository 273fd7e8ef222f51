//! Errors of kplan-run. Input and configuration errors carry the file and line; a missing GPU
//! or toolchain is not an error but a skip (see [`crate::Skip`]).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}:{line}: {message}", path.display())]
    Config {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("cannot read or write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown kernel `{0}` (expected reduce_sum, softmax, rmsnorm, add, or a path to one of their .cu files or a Triton .py kernel)")]
    UnknownKernel(String),
    #[error("invalid size `{text}`: {message}")]
    BadSize { text: String, message: String },
    #[error("{compiler} failed to compile {what}:\n{log}")]
    Compile {
        compiler: String,
        what: String,
        log: String,
    },
    #[error("{what} failed: {message}")]
    Exec { what: String, message: String },
    #[error(transparent)]
    Harness(#[from] crate::harness::HarnessError),
    #[error("CUDA error in {what}: {message}")]
    Cuda { what: String, message: String },
}
