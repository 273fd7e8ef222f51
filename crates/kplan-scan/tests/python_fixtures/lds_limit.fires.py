import triton

MAX_SMEM = 232448  # expect: triton-lds-limit


def stages(stage_bytes):
    lds_bytes = 64 * 1024  # expect: triton-lds-limit
    return min(MAX_SMEM, lds_bytes) // stage_bytes

# named for gfx950, but gfx950 has 160 KiB
GFX950_LDS_BYTES = 64 * 1024  # expect: triton-lds-limit
# the gfx950 entry is wrong: gfx950 has 160 KiB
SMEM_BY_ARCH = {"gfx942": 65536, "gfx950": 65536}  # expect: triton-lds-limit

# a fixed GEMM config tuned on Hopper: two LDS buffers of 128x64 + 64x256 bf16 tiles is 96 KiB
DEFAULT_GEMM_CONFIG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "num_stages": 3}  # expect: triton-lds-limit


def launch_gemm(kernel, a, b, c, grid):
    kernel[grid](a, b, c, BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_stages=2)  # expect: triton-lds-limit
