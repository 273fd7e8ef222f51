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
    # `!=` sends ROCm to the fallback: the safe direction
    if torch.cuda.get_device_capability(x.device) != (9, 0):
        return None
    return x


def sm_count():
    props = torch.cuda.get_device_properties(0)
    return props.multi_processor_count >= 100


def torch_is_new():
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    return major >= 2


def tma_available(device_type):
    if device_type in ("xpu", "hip"):
        return False
    return torch.cuda.get_device_capability()[0] >= 9


def is_hopper_or_newer():
    # `torch.version.cuda` is None on ROCm builds
    return torch.version.cuda is not None and torch.cuda.get_device_capability() >= (9, 0)


def fp8_gate_with_instinct(is_MI300):
    if not (torch.cuda.get_device_capability() >= (8, 9) or is_MI300()):
        return None
    return "fp8"
