import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr, PRECISION: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    c = tl.dot(a, b, input_precision=PRECISION) + tl.dot(a, b, input_precision="ieee") + tl.dot(a, b)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c)
