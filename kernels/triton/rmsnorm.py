"""Row RMSNorm forward in Triton: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w.

One program per row; fp32 or bf16 in and out (weight in the input's dtype), fp32 arithmetic; any
row length. A row up to FUSED_MAX elements is loaded once into a block of BLOCK_SIZE = next power
of two of the row length; a longer row is streamed twice in LOOP_BLOCK chunks (sum of squares, then
scale). Launch through `rmsnorm(x, w, eps, out)`, which picks the kernel, BLOCK_SIZE and num_warps
for the backend the active Triton driver reports.
"""

import os

import triton
import triton.language as tl


# kplan: cuda:num_warps=2 hip:num_warps=1
@triton.jit
def rmsnorm_kernel(out_ptr, in_ptr, w_ptr, in_row_stride, out_row_stride, n_cols, eps,
                   BLOCK_SIZE: tl.constexpr = 1024):
    # int64 row offset: rows * stride can pass 2^31 elements on large inputs.
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * rstd * w
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


# kplan: cuda:num_warps=8 hip:num_warps=4
@triton.jit
def rmsnorm_looped_kernel(out_ptr, in_ptr, w_ptr, in_row_stride, out_row_stride, n_cols, eps,
                          BLOCK_SIZE: tl.constexpr = 4096):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    acc = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(in_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


# Per-backend launch table. num_warps counts hardware warps: 32 lanes on NVIDIA, 64 on AMD CDNA
# (wave64), so the same num_warps is twice the threads on CDNA; 16 x 64 = 1024 is the AMD
# work-group limit, so num_warps never exceeds 16 on any backend.
#   backend: (max_warps, fused_max elements, loop_block elements, elements per thread)
LAUNCH = {
    "cuda": (16, 32768, 4096, 16),
    "hip": (16, 32768, 4096, 16),
    "interpreter": (4, 32768, 4096, 16),
}


def current_backend():
    """(backend, warp size) of the active Triton driver; the interpreter under TRITON_INTERPRET=1."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "interpreter", 32
    target = triton.runtime.driver.active.get_current_target()
    return target.backend, int(target.warp_size)


def launch_config(n_cols, backend=None, warp_size=None):
    """(fused, BLOCK_SIZE, num_warps) for rows of n_cols elements on `backend` ("cuda"/"hip")."""
    if n_cols <= 0:
        raise ValueError(f"row length must be positive, got {n_cols}")
    if backend is None:
        backend, warp_size = current_backend()
    if backend not in LAUNCH:
        raise ValueError(f"no launch configuration for backend {backend!r}")
    max_warps, fused_max, loop_block, per_thread = LAUNCH[backend]
    warp_size = warp_size or (64 if backend == "hip" else 32)
    block = triton.next_power_of_2(n_cols)
    fused = block <= fused_max
    if not fused:
        block = loop_block
    warps = max(1, min(max_warps, block // per_thread // warp_size))
    return fused, block, 1 << (warps.bit_length() - 1)


def rmsnorm(x, w, eps=1e-6, out=None):
    """RMSNorm over the rows of a 2-D tensor with unit column stride; `w` has one entry per column."""
    if len(x.shape) != 2:
        raise ValueError(f"rmsnorm expects a 2-D tensor, got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if tuple(w.shape) != (n_cols,):
        raise ValueError(f"weight shape {tuple(w.shape)} does not match row length {n_cols}")
    if out is None:
        out = x.new_empty(x.shape)
    if x.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("rmsnorm needs unit stride along the row")
    fused, block, num_warps = launch_config(n_cols)
    kernel = rmsnorm_kernel if fused else rmsnorm_looped_kernel
    kernel[(n_rows,)](out, x, w, x.stride(0), out.stride(0), n_cols, eps, BLOCK_SIZE=block,
                      num_warps=num_warps)
    return out
