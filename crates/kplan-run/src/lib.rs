//! kplan-run: the CPU reference, the reference kernels' execution on the host and on CUDA
//! (dynamic loading), `verify` and `bench`.
//!
//! - [`reference`]: the numerically careful CPU oracle (also the CPU fallback).
//! - [`kernels`]: kernel sources, tile configurations (`kernels/tiles.toml`) and their choice.
//! - [`cpu`]: the kernel source compiled by the host C++ compiler and run with the CUDA launch
//!   model emulated.
//! - [`cuda`]: NVRTC + driver API through cudarc; absent libraries or GPUs are skips.
//! - [`verify`], [`bench`]: the two verbs' engines; they return reports, never print.

pub mod bench;
pub mod bench_run;
pub mod cpu;
pub mod cuda;
pub mod data;
pub mod error;
pub mod exec;
pub mod expr;
pub mod harness;
pub mod harness_cuda;
pub mod harness_verify;
pub mod kernels;
pub mod reference;
pub mod report;
pub mod simt;
pub mod skip;
pub mod triton;
pub mod verify;

pub use error::RunError;
pub use skip::Skip;
