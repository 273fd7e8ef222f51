import torch


def use_tma():
    return torch.cuda.get_device_capability() >= (9, 0)  # expect: triton-capability-check


def pick():
    major, minor = torch.cuda.get_device_capability()
    if major >= 9:  # expect: triton-capability-check
        return "wgmma"
    return "mma"
