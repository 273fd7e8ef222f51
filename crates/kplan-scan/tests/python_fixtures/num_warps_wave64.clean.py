import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, num_warps=8), triton.Config({"BLOCK": 4096}, num_warps=16)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def is_hip():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


def launch(x, n):
    num_warps = 16 if is_hip() else 32
    if n >= 32768:  # a threshold, not a warp count
        num_warps = min(num_warps * 2, 16)
    k[(1,)](x, n, num_warps=num_warps)


def is_hip_chain(n):
    if is_hip():
        num_warps = 16
    else:
        num_warps = 8 if n < 4096 else 32
    return num_warps


def xpu_only(device):
    num_warps = 32 if device == "xpu" else 8
    return num_warps
