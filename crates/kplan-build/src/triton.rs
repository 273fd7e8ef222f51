//! Triton builds: compile `@triton.jit` kernels for each target through Triton's own compiler.
