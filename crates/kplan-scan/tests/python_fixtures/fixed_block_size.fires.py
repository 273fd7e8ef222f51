import triton
import triton.language as tl


@triton.jit
def softmax_kernel(y_ptr, x_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


def softmax(x, y):
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK_SIZE=1024, num_warps=8)  # expect: triton-fixed-block-size
    return y
