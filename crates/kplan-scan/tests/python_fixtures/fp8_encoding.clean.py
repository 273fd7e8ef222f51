import triton
import triton.language as tl
from torch import float8_e4m3fn


@triton.jit
def quant(x_ptr, y_ptr, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x.to(FP8), mask=offs < n)


def fp8_dtype():
    arch = triton.runtime.driver.active.get_current_target().arch
    if arch == "gfx942":
        return tl.float8e4b8
    return tl.float8e4nv


TORCH_TO_TL = {
    "float8_e4m3fn": tl.float8e4nv,
    "float8_e4m3fnuz": tl.float8e4b8,
}


def chip_count(chips):
    # `chip` is not a HIP check: the guard must not hide the finding below in the fires fixture
    return len(chips)


def quantize_mxfp8(x):
    # OCP MX element type: there is no FNUZ microscaling format
    return x.to(torch.float8_e4m3fn)


def nvfp4_block_scales(amax):
    # NVFP4 block scales are OCP e4m3 by the format's definition
    return (amax / 6.0).to(torch.float8_e4m3fn)
