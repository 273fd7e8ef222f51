//! kplan-run: CPU references, GPU execution, verify and bench.

pub mod reference;
pub mod triton;
