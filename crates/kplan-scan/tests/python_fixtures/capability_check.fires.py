import torch


def use_tma():
    return torch.cuda.get_device_capability() >= (9, 0)  # expect: triton-capability-check


def pick():
    major, minor = torch.cuda.get_device_capability()
    if major >= 9:  # expect: triton-capability-check
        return "wgmma"
    return "mma"


def sm_version():
    props = torch.cuda.get_device_properties(0)
    if props.major >= 9:  # expect: triton-capability-check
        return "hopper"
    major, minor = torch.cuda.get_device_capability()
    sm = major * 10 + minor
    return sm >= 90  # expect: triton-capability-check


def tma_available(device_type):
    # excluding another vendor does not exclude AMD
    if device_type == "xpu":
        return False
    return torch.cuda.get_device_capability()[0] >= 9  # expect: triton-capability-check


def fp8_gate():
    # false on ROCm (gfx90a reports (9, 0)), so the fp8 path below runs there
    if torch.cuda.get_device_capability() < (8, 9):  # expect: triton-capability-check
        return None
    return "fp8"
