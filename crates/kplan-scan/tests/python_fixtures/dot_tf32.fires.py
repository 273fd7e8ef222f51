import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    c = tl.dot(a, b, input_precision="tf32")  # expect: triton-dot-tf32
    d = tl.dot(a, b, allow_tf32=True)  # expect: triton-dot-tf32
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c + d)
