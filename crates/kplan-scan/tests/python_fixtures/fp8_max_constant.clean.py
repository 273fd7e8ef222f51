import torch


def fp8_max(dtype):
    return torch.finfo(dtype).max


def unrelated(width):
    max_width = 448  # an integer width, not an fp8 range
    return min(width, max_width)


def mxfp8_block_scale(amax):
    # OCP MX element maximum: MXFP8 has no FNUZ form
    return amax / 448.0
