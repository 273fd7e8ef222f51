import torch


def fp8_dtype():
    if torch.version.hip:
        return torch.float8_e4m3fnuz  # expect: triton-hip-implies-fnuz
    return torch.float8_e4m3fn
