//! Triton kernels on the CPU (Triton interpreter) and on CUDA, checked against the CPU reference.
