import torch


def use_tma():
    if torch.version.hip is not None:
        return False
    return torch.cuda.get_device_capability() >= (9, 0)


def is_cuda():
    return torch.version.hip is None


def pick():
    return is_cuda() and torch.cuda.get_device_capability()[0] >= 9


def bail_out(x):
    # `!=` and `<` send ROCm to the fallback: the safe direction
    if torch.cuda.get_device_capability(x.device) != (9, 0):
        return None
    return x
