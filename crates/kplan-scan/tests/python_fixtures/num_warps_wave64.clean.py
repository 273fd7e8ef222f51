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


def launch_kwargs(x):
    kwargs = {"num_warps": 4, "num_stages": 2}
    if x.device.type == "xpu":
        kwargs.update({"num_warps": 32, "grf_mode": "large"})
    return kwargs


def threads_per_warp():
    return triton.runtime.driver.active.get_current_target().warp_size


def fit_block_limit(configs):
    lanes = threads_per_warp()
    return [c for c in configs if c.num_warps * lanes <= 1024]


ALL_CONFIGS = [
    triton.Config({"BLOCK": 2048}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=32),
]
VALID_CONFIGS = fit_block_limit(ALL_CONFIGS)

WARP_SWEEP = [triton.Config({}, num_warps=w) for w in [2, 4, 8, 16, 32] if w * threads_per_warp() <= 1024]


def drop_oversized(configs, named_args, **kwargs):
    return [c for c in configs if c.num_warps <= 1024 // threads_per_warp()]


@triton.autotune(
    configs=[triton.Config({}, num_warps=16), triton.Config({}, num_warps=32)],
    key=["n"],
    prune_configs_by={"early_config_prune": drop_oversized},
)
@triton.jit
def k2(x_ptr, n):
    pass


def row_launch(x, hidden, on_hip):
    warp_cap = 16 if on_hip else 32
    cfg = {"num_warps": max(min(triton.next_power_of_2(triton.cdiv(hidden, 256)), warp_cap), 4)}
    k2[(x.shape[0],)](x, hidden, **cfg)
