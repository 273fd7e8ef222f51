import triton
import triton.language as tl

WARP_SIZE = 32  # expect: triton-warp-size-literal


def launch(x, BLOCK_SIZE):
    num_warps = BLOCK_SIZE // 32  # expect: triton-warp-size-literal
    threads = num_warps * 32  # expect: triton-warp-size-literal
    return threads
