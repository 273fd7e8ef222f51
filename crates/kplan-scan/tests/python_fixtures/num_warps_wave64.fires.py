import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=8),
        triton.Config({"BLOCK": 8192}, num_warps=32),  # expect: triton-num-warps-wave64
    ],
    key=["n"],
)
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in [128, 256] for w in [4, 8, 16, 32]]  # expect: triton-num-warps-wave64
LAUNCH = {"num_warps": 32}  # expect: triton-num-warps-wave64


def launch(x, n):
    num_warps = 32 if n >= 65536 else 16  # expect: triton-num-warps-wave64
    k[(1,)](x, n, BLOCK=4096, num_warps=num_warps)


def get_num_warps(BLOCK_SIZE):
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32  # expect: triton-num-warps-wave64
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    return num_warps


def launch_kwargs(x):
    kwargs = {"num_warps": 4}
    if x.device.type == "npu":
        kwargs["num_stages"] = 2
    else:
        # the `else` of a check for another vendor still runs on AMD
        kwargs.update({"num_warps": 32})  # expect: triton-num-warps-wave64
    return kwargs


def warps_for(device, block):
    num_warps = 8
    if device == "mps":
        num_warps = 4
    elif block >= 16384:
        num_warps = 32  # expect: triton-num-warps-wave64
    return num_warps


def row_launch(x, hidden):
    # `min` with a literal bound of 32 still allows 32 warps
    cfg = {"num_warps": max(min(triton.next_power_of_2(triton.cdiv(hidden, 256)), 32), 4)}  # expect: triton-num-warps-wave64
    k[(x.shape[0],)](x, hidden, **cfg)
