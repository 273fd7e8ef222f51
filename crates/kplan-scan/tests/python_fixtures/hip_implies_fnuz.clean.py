import torch


def fp8_dtype():
    if torch.version.hip and "gfx94" in torch.cuda.get_device_properties(0).gcnArchName:
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn
