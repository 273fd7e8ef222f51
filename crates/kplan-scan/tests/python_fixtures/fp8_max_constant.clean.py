import torch


def fp8_max(dtype):
    return torch.finfo(dtype).max


def unrelated(width):
    max_width = 448  # an integer width, not an fp8 range
    return min(width, max_width)
