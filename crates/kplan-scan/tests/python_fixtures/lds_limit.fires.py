import triton

MAX_SMEM = 232448  # expect: triton-lds-limit


def stages(stage_bytes):
    lds_bytes = 64 * 1024  # expect: triton-lds-limit
    return min(MAX_SMEM, lds_bytes) // stage_bytes
