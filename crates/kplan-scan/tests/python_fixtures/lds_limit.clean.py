import torch
import triton


def stages(stage_bytes):
    props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
    return props["max_shared_mem"] // stage_bytes


BUFFER = 65536  # a byte count that is not about shared memory

# a fact about the architecture it names
GFX942_LDS_BYTES = 64 * 1024
SM90_MAX_SMEM = 232448
LDS_CAP_BYTES = {"gfx942": 65536, "gfx950": 163840}


def is_hip():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


# autotune candidates: the autotuner drops the ones that do not fit
GEMM_CONFIGS = [
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64}, num_stages=4),
    triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}, num_stages=2),
]


def default_gemm_config():
    if is_hip():
        return {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "num_stages": 2}
    return {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "num_stages": 4}


SMALL_GEMM_CONFIG = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "num_stages": 3}
