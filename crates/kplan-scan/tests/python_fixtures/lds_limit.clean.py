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
