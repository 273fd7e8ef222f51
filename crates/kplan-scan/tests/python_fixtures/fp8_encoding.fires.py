import triton
import triton.language as tl


@triton.jit
def quant(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x.to(tl.float8e4nv), mask=offs < n)  # expect: triton-fp8-encoding


def out_dtype(torch):
    return torch.float8_e4m3fnuz  # expect: triton-fp8-encoding


def per_chip(chip):
    if chip:
        return torch.float8_e4m3fn  # expect: triton-fp8-encoding
    return None
