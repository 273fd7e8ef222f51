# A kernel tuned for NVIDIA only: 32 warps is 1024 threads there, 2048 on a wave64 AMD GPU.
import torch  # absent in CI: kplan stubs it so the kernels still compile
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 4096}, num_warps=32), triton.Config({"BLOCK": 1024}, num_warps=4)],
    key=["n"],
)
@triton.jit
def scale_kernel(X, Out, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Out + offs, _mul(tl.load(X + offs, mask=mask), scale), mask=mask)


@triton.jit
def _mul(a, s):
    return a * s


# kplan: X=*bf16 BLOCK=256 num_warps=2
@triton.jit
def directed_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def unresolved_kernel(X, n, MYSTERY: tl.constexpr):
    offs = tl.arange(0, MYSTERY)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


@triton.jit
def guessed_kernel(X, B, n, BLOCK_SIZE: tl.constexpr, HAS_BIAS: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + offs, mask=offs < n)
    if HAS_BIAS:
        x += tl.load(B + offs, mask=offs < n)
    tl.store(X + offs, x, mask=offs < n)
