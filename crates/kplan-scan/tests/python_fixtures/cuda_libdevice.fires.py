import triton
import triton.language as tl
from triton.language.extra.cuda.libdevice import rsqrt  # expect: triton-cuda-libdevice


@triton.jit
def norm(x):
    return x * tl.extra.cuda.libdevice.rsqrt(x)  # expect: triton-cuda-libdevice
