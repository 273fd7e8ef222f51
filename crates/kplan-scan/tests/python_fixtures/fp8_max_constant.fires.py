import torch

FP8_MAX = 448.0  # expect: triton-fp8-max-constant


def scale_for(amax):
    return amax.clamp(min=1e-12) / 240.0  # expect: triton-fp8-max-constant


def to_fp8(x):
    return x.to(torch.float8_e4m3fn)  # expect: triton-fp8-encoding
