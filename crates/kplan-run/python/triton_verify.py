"""Run a Triton kernel's launch wrapper on inputs kplan wrote, and write its output back.

kplan (crates/kplan-run/src/triton.rs) embeds this file and runs it as `python driver.py --serve`
with the Python that has Triton. Protocol: one JSON request a line on stdin, one JSON reply a line
on stdout (what the kernel file prints goes to stderr): first `{"cmd": "open", ...}` loads the
kernel file and its launch wrapper, then each `{"cmd": "case", ...}` runs the wrapper once. Inputs
are raw little-endian arrays written by kplan; the output array is written raw little-endian to the
path the request names. Torch is used when it is importable; otherwise small tensor
objects over numpy (interpreter) or CUDA driver allocations (GPU) stand in for torch tensors, with
just the methods Triton and a row-kernel wrapper call.
"""

import ctypes
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback

import numpy as np

from kplan_driver_common import error_line  # written beside this driver by kplan


class DType:
    """Stands in for torch.dtype: Triton reads str(dtype).split('.')[-1]."""

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(self.name)


DTYPES = {"f32": DType("float32", 4), "bf16": DType("bfloat16", 2)}


class HostStorage:
    def __init__(self, nbytes):
        self.buf = np.zeros(max(int(nbytes), 1), dtype=np.uint8)

    def data_ptr(self):
        return self.buf.ctypes.data

    def nbytes(self):
        return self.buf.nbytes

    def cpu(self):
        copy = HostStorage(0)
        copy.buf = self.buf.copy()
        return copy

    def copy_(self, other):
        self.buf[:] = other.to_bytes_array()

    def to_bytes_array(self):
        return self.buf


class CudaDriver:
    """The few CUDA driver calls verify needs, through ctypes (no torch, no cuda-python)."""

    _lib = None

    @classmethod
    def lib(cls):
        if cls._lib is None:
            lib = ctypes.CDLL("libcuda.so.1")
            check(lib.cuInit(0), "cuInit")
            dev = ctypes.c_int()
            check(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
            ctx = ctypes.c_void_p()
            check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            cls._lib = lib
        return cls._lib


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed with CUDA error {rc}")


class DeviceStorage:
    def __init__(self, nbytes):
        lib = CudaDriver.lib()
        self.size = max(int(nbytes), 1)
        ptr = ctypes.c_uint64()
        check(lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(self.size)), "cuMemAlloc")
        self.ptr = ptr.value

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.size

    def cpu(self):
        host = HostStorage(self.size)
        check(CudaDriver.lib().cuMemcpyDtoH_v2(ctypes.c_void_p(host.data_ptr()), ctypes.c_uint64(self.ptr),
                                               ctypes.c_size_t(self.size)), "cuMemcpyDtoH")
        return host

    def copy_(self, other):
        src = other.to_bytes_array()
        check(CudaDriver.lib().cuMemcpyHtoD_v2(ctypes.c_uint64(self.ptr), ctypes.c_void_p(src.ctypes.data),
                                               ctypes.c_size_t(min(self.size, src.nbytes))), "cuMemcpyHtoD")

    def to_bytes_array(self):
        return self.cpu().buf


class Tensor:
    """A strided tensor over a HostStorage or DeviceStorage, shaped like the torch API Triton uses."""

    def __init__(self, storage, dtype, shape, strides=None, offset=0):
        self._storage = storage
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self._strides = tuple(strides) if strides is not None else contiguous_strides(self.shape)
        self._offset = int(offset)

    @property
    def device(self):
        return "cuda" if isinstance(self._storage, DeviceStorage) else "cpu"

    @property
    def is_cuda(self):
        return self.device == "cuda"

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return self.dtype.itemsize

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self):
        return self._strides == contiguous_strides(self.shape)

    def data_ptr(self):
        return self._storage.data_ptr() + self._offset * self.dtype.itemsize

    def untyped_storage(self):
        return self._storage

    def new_empty(self, shape, device=None, dtype=None):
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        dtype = dtype or self.dtype
        kind = HostStorage if (device == "cpu" or self.device == "cpu") else DeviceStorage
        return Tensor(kind(math.prod(shape) * dtype.itemsize), dtype, shape)

    def empty_like(self):
        return self.new_empty(self.shape)

    def set_(self, storage, offset, size, stride):
        self._storage, self._offset = storage, int(offset)
        self.shape, self._strides = tuple(size), tuple(stride)
        return self

    def contiguous(self):
        if not self.is_contiguous():
            raise ValueError("kplan's stand-in tensors are always contiguous")
        return self


def contiguous_strides(shape):
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc *= dim
    return tuple(reversed(strides))


def make_tensor(raw, dtype, shape, device):
    storage = HostStorage(len(raw)) if device == "cpu" else DeviceStorage(len(raw))
    host = HostStorage(len(raw))
    host.buf[:] = np.frombuffer(raw, dtype=np.uint8)
    storage.copy_(host)
    return Tensor(storage, dtype, shape)


def tensor_bytes(t):
    nbytes = t.numel() * t.dtype.itemsize
    start = t.storage_offset() * t.dtype.itemsize
    return t.untyped_storage().to_bytes_array()[start:start + nbytes].tobytes()


def torch_tensor(raw, dtype_name, shape, device):
    import torch

    tdtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    host = torch.frombuffer(bytearray(raw), dtype=tdtype).reshape(shape)
    return host.to(device)


def torch_bytes(t):
    import torch

    host = t.detach().to("cpu").contiguous()
    return host.view(torch.uint8).numpy().tobytes()


def load_module(path):
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # a file inside a package is imported by its package name, so relative imports resolve
    parts = [os.path.splitext(os.path.basename(path))[0]]
    root = directory
    while os.path.exists(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    if len(parts) > 1 and all(p.isidentifier() for p in parts):
        if root not in sys.path:
            sys.path.insert(0, root)
        return importlib.import_module(".".join(parts))
    name = "kplan_triton_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def call_entry(entry, op, inputs, out, eps):
    """Call the wrapper with the inputs; pass `out` and `eps` when it takes them."""
    params = inspect.signature(entry).parameters
    kwargs = {}
    if "out" in params:
        kwargs["out"] = out
    if op == "rmsnorm" and "eps" in params:
        kwargs["eps"] = eps
    result = entry(*inputs, **kwargs)
    if result is None:
        if "out" not in params:
            raise ValueError("the launch wrapper returned nothing and takes no `out` argument")
        result = out
    return result


def patch_interpreter_index():
    """Triton 3.6's interpreter turns a scalar tensor into an int with int(ndarray of shape (1,)),
    which NumPy 2.4 rejects (so `range(0, n, BLOCK)` over a runtime `n` fails). Convert through
    .item() instead; the patch sits in the interpreter's own patch scope and is undone with it."""
    import triton.runtime.interpreter as interp

    original = getattr(interp, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_kplan_patched", False):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    patched._kplan_patched = True
    interp._patch_lang_tensor = patched


def cuda_unavailable():
    """Why the CUDA backend cannot run here, or None."""
    try:
        lib = CudaDriver.lib()
        count = ctypes.c_int()
        check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value == 0:
            return "no CUDA device"
    except OSError as exc:
        return f"libcuda.so.1 cannot be loaded ({exc})"
    except RuntimeError as exc:
        return str(exc)
    return None


def run_case(kernel, case):
    shapes = {"x": (case["rows"], case["cols"]), "w": (case["cols"],)}
    use_torch, device = kernel["use_torch"], kernel["device"]
    inputs = []
    for item in case["inputs"]:
        with open(item["file"], "rb") as f:
            raw = f.read()
        shape = shapes[item["name"]]
        if use_torch:
            inputs.append(torch_tensor(raw, case["dtype"], shape, device))
        else:
            inputs.append(make_tensor(raw, DTYPES[case["dtype"]], shape, device))
    out = inputs[0].new_empty(inputs[0].shape)
    result = call_entry(kernel["entry"], kernel["op"], inputs, out, case.get("eps", 1e-6))
    if device != "cpu":
        if use_torch:
            import torch

            torch.cuda.synchronize()
        else:
            check(CudaDriver.lib().cuCtxSynchronize(), "cuCtxSynchronize")
    data = torch_bytes(result) if use_torch else tensor_bytes(result)
    want = case["rows"] * case["cols"] * DTYPES[case["dtype"]].itemsize
    if len(data) != want:
        raise ValueError(f"the wrapper returned {len(data)} bytes, expected {want}")
    with open(case["output"], "wb") as f:
        f.write(data)


def patch_interpreter_bf16_rounding():
    """Triton 3.6's interpreter narrows fp32 to bf16 by truncation, while the GPU backends (and
    Triton's own default, fp_downcast_rounding=None) round to nearest even. Round to nearest even
    here too, so the interpreter checks the numerics the compiled kernel has."""
    import triton.language as tl
    import triton.runtime.interpreter as interp

    builder = interp.InterpreterBuilder
    original = builder.cast_impl
    if getattr(original, "_kplan_patched", False):
        return

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interp.TensorHandle(f32_to_bf16_bits(src.data), dst_type.scalar)
        return original(self, src, dst_type)

    cast_impl._kplan_patched = True
    builder.cast_impl = cast_impl


def f32_to_bf16_bits(x):
    """fp32 -> bf16 bit patterns (uint16), round to nearest even; NaN stays a quiet NaN. (The
    interpreter's own RTNE path drops the carry when rounding up crosses a power of two.)"""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def open_kernel(req):
    """Loads the kernel file for `req["backend"]`: (reply, kernel state or None when skipped)."""
    backend = req["backend"]
    interpret = backend == "cpu"
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
        patch_interpreter_index()
        patch_interpreter_bf16_rounding()
    use_torch = False
    if os.environ.get("KPLAN_TRITON_TENSORS") != "kplan":  # force the stand-ins (tests)
        try:
            import torch  # noqa: F401

            use_torch = True
        except ImportError:
            pass
    if not interpret and not use_torch:
        why = cuda_unavailable()
        if why:
            return {"status": "skipped", "reason": why}, None
    if not interpret and use_torch:
        import torch

        if not torch.cuda.is_available():
            return {"status": "skipped", "reason": "torch sees no CUDA device"}, None
    module = load_module(req["path"])
    entry = getattr(module, req["entry"], None)
    if entry is None or not callable(entry):
        raise LookupError(f"{req['path']} has no function `{req['entry']}`")
    kernel = {"entry": entry, "op": req["op"], "use_torch": use_torch, "device": "cpu" if interpret else "cuda"}
    return {"status": "ok", "tensors": "torch" if use_torch else "kplan"}, kernel


def serve():
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the kernel file prints goes to stderr, never into a reply
    sys.stdout = sys.stderr
    kernel = None
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("cmd") == "open":
            try:
                reply, kernel = open_kernel(req)
            except Exception as exc:  # reported to kplan as data, not a traceback on the terminal
                reply = {"status": "error", "error": f"{type(exc).__name__}: {exc}",
                         "line": error_line(exc, req["path"]), "traceback": traceback.format_exc(limit=8)}
        elif kernel is None:
            reply = {"status": "error", "error": "no kernel file is open"}
        else:
            try:
                run_case(kernel, req)
                reply = {"status": "ok"}
            except Exception as exc:  # one failing shape does not hide the others
                reply = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:4000]}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
