"""Row softmax in Triton: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).

One program per row; fp32 or bf16 in and out, fp32 arithmetic; any row length. A row of -inf
only gives zeros (the masked-attention convention kplan's CPU reference uses), not NaN. A row up to
FUSED_MAX elements is loaded once into a block of BLOCK_SIZE = next power of two of the row length;
a longer row is streamed in LOOP_BLOCK chunks with an online (running max, rescaled sum) pass and a
second normalising pass. Launch through `softmax(x, out)`, which picks the kernel, BLOCK_SIZE and
num_warps for the backend the active Triton driver reports.
"""

import os

import triton
import triton.language as tl


# kplan: cuda:num_warps=2 hip:num_warps=1
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr = 1024):
    # int64 row offset: rows * stride can pass 2^31 elements on large inputs.
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(x, axis=0)
    # A row of -inf only has no probability mass: output zeros, not NaN from (-inf) - (-inf).
    row_max = tl.where(row_max == -float("inf"), 0.0, row_max)
    num = tl.exp(x - row_max)
    den = tl.sum(num, axis=0)
    y = num / tl.where(den == 0.0, 1.0, den)
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


# kplan: cuda:num_warps=8 hip:num_warps=4
@triton.jit
def softmax_looped_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr = 4096):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    # Per-lane running max m and sum d of exp(x - m).
    m = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
    d = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_row + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        d = d * tl.exp(m - safe) + tl.exp(x - safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_max = tl.where(row_max == -float("inf"), 0.0, row_max)
    den = tl.sum(d * tl.exp(m - row_max), axis=0)
    den = tl.where(den == 0.0, 1.0, den)  # all -inf row: zeros, as in the fused kernel
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(in_row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / den
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


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


def softmax(x, out=None):
    """Row softmax of a 2-D tensor with unit column stride (torch or any tensor-like object)."""
    if len(x.shape) != 2:
        raise ValueError(f"softmax expects a 2-D tensor, got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if out is None:
        out = x.new_empty(x.shape)
    if x.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("softmax needs unit stride along the row")
    fused, block, num_warps = launch_config(n_cols)
    kernel = softmax_kernel if fused else softmax_looped_kernel
    kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block, num_warps=num_warps)
    return out
