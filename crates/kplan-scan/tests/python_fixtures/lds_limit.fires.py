import triton

MAX_SMEM = 232448  # expect: triton-lds-limit


def stages(stage_bytes):
    lds_bytes = 64 * 1024  # expect: triton-lds-limit
    return min(MAX_SMEM, lds_bytes) // stage_bytes

# named for gfx950, but gfx950 has 160 KiB
GFX950_LDS_BYTES = 64 * 1024  # expect: triton-lds-limit
# the gfx950 entry is wrong: gfx950 has 160 KiB
SMEM_BY_ARCH = {"gfx942": 65536, "gfx950": 65536}  # expect: triton-lds-limit
