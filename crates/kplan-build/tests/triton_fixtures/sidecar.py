import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, y_ptr, stride, n_cols, factor, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask)
    tl.store(y_ptr + row * stride + offs, x * factor, mask=mask)
