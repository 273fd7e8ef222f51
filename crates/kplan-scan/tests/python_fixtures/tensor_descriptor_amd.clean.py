import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, desc, M, K, BM: tl.constexpr, BK: tl.constexpr, USE_TMA: tl.constexpr):
    if USE_TMA:
        a = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK]).load([0, 0])
    else:
        offs = tl.arange(0, BK)
        a = tl.load(a_ptr + offs)
