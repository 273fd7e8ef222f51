"""Anchors for `kplan bench`: what a user would otherwise run on the same GPU, timed the same way.

PyTorch eager (torch.sum, torch.add, torch.softmax, F.rms_norm) and kplan's Triton kernels
(kernels/triton/softmax.py, rmsnorm.py) on the shapes the issue's goals name, timed with
triton.testing.do_bench (CUDA events, L2 cleared between runs, median). Prints one JSON object.

    python3 bench/anchors.py > anchors.json
"""
import importlib.util
import json
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.testing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    path = os.path.join(ROOT, "kernels", "triton", name + ".py")
    spec = importlib.util.spec_from_file_location("kplan_triton_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn):
    # warm-up and repeat are milliseconds; median of the timed runs
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def record(records, impl, kernel, dtype, shape, nbytes, fn, check=None):
    try:
        out = fn()
        torch.cuda.synchronize()
        err = check(out) if check else None
        ms = timed(fn)
        records.append({"impl": impl, "kernel": kernel, "dtype": dtype, "shape": shape, "bytes": nbytes,
                        "median_ms": ms, "gbs": nbytes / (ms * 1e-3) / 1e9,
                        **({"max_abs_err_vs_torch": err} if err is not None else {})})
    except Exception as e:  # a failing anchor is recorded, not fatal
        records.append({"impl": impl, "kernel": kernel, "dtype": dtype, "shape": shape, "error": repr(e)[:500]})
    print(f"{impl:>8} {kernel:<10} {dtype} {shape}: {records[-1].get('gbs', float('nan')):.0f} GB/s",
          file=sys.stderr, flush=True)


def main():
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    names = {torch.float32: "fp32", torch.bfloat16: "bf16"}
    records = []
    sm = load("softmax")
    rn = load("rmsnorm")

    for dt, n in [(torch.float32, 1 << 30), (torch.bfloat16, 1 << 30)]:
        x = torch.randn(n, device=dev, dtype=dt, generator=g)
        record(records, "torch", "reduce_sum", names[dt], str(n), n * x.element_size() + 4,
               lambda: torch.sum(x, dtype=torch.float32))
        del x
    for dt, n in [(torch.bfloat16, 1 << 30), (torch.float32, 1 << 28)]:
        a = torch.randn(n, device=dev, dtype=dt, generator=g)
        b = torch.randn(n, device=dev, dtype=dt, generator=g)
        out = torch.empty_like(a)
        record(records, "torch", "add", names[dt], str(n), 3 * n * a.element_size(), lambda: torch.add(a, b, out=out))
        del a, b, out
    shapes = [(torch.bfloat16, 8192, c) for c in (1024, 4096, 16384, 32768)] + [(torch.float32, 8192, 4096)]
    for dt, rows, cols in shapes:
        x = torch.randn(rows, cols, device=dev, dtype=dt, generator=g) * 4
        w = 1 + 0.5 * torch.randn(cols, device=dev, dtype=dt, generator=g)
        es = x.element_size()
        shape = f"{rows}x{cols}"
        sm_bytes = 2 * rows * cols * es
        rn_bytes = 2 * rows * cols * es + cols * es
        ref_sm = torch.softmax(x.float(), dim=-1)
        ref_rn = F.rms_norm(x.float(), (cols,), w.float(), 1e-6)
        out = torch.empty_like(x)
        record(records, "torch", "softmax", names[dt], shape, sm_bytes, lambda: torch.softmax(x, dim=-1))
        record(records, "triton", "softmax", names[dt], shape, sm_bytes, lambda: sm.softmax(x, out=out),
               lambda o: (o.float() - ref_sm).abs().max().item())
        record(records, "torch", "rmsnorm", names[dt], shape, rn_bytes, lambda: F.rms_norm(x, (cols,), w, 1e-6))
        record(records, "triton", "rmsnorm", names[dt], shape, rn_bytes, lambda: rn.rmsnorm(x, w, 1e-6, out=out),
               lambda o: (o.float() - ref_rn).abs().max().item())
        del x, w, out, ref_sm, ref_rn
        torch.cuda.empty_cache()

    json.dump({"torch": torch.__version__, "triton": triton.__version__, "device": torch.cuda.get_device_name(0),
               "timing": "triton.testing.do_bench(warmup=25 ms, rep=200 ms, return_mode='median'), L2 cleared between runs",
               "records": records}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
