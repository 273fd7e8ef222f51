import triton
import triton.language as tl


@triton.jit
def softmax_kernel(y_ptr, x_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


LAUNCH = {"cuda": (1024, 8), "hip": (1024, 4)}


def softmax(x, y):
    block, warps = LAUNCH[triton.runtime.driver.active.get_current_target().backend]
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK_SIZE=block, num_warps=warps)
    return y


def softmax_amd_tuned(x, y):
    if triton.runtime.driver.active.get_current_target().backend == "hip":
        softmax_kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK_SIZE=2048, num_warps=4)
    return y
