"""Anchors for `kplan bench`: what a user would otherwise run on the same GPU, timed the same way.

PyTorch eager (torch.sum, torch.add, torch.softmax, F.rms_norm, per-token fp8 quantization) and
kplan's Triton kernels
(kernels/triton/softmax.py, rmsnorm.py) on the shapes the issue's goals name, timed with
triton.testing.do_bench (CUDA events, L2 cleared between runs, median). Prints one JSON object.

    python3 bench/anchors.py [BENCH_JSON] > anchors.json

With BENCH_JSON (the output of `kplan bench --format json`), each default configuration in it is
also compiled from kernels/ through CuPy's NVRTC and timed the same way ("impl": "kplan"), so
kplan, torch and Triton are compared under one timing method as well as under kplan bench's.
Then, for each row-kernel case that kplan's Triton kernels also cover, kplan and Triton are timed
again in INTERLEAVE_ROUNDS alternating rounds on the same input ("impl": "interleaved": each
round's do_bench median of both, kplan first in even rounds, Triton first in odd ones), which
gives the run-to-run spread of each and of their ratio.

The timing helpers (`load`, `timed`, `event_samples`, `graph_timed`, `median`) are shared with
bench/variants-gpu.py.
"""
import importlib.util
import json
import os
import sys

import numpy

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


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


GRAPH_LAUNCHES = 20
GRAPH_REPS = 5
INTERLEAVE_ROUNDS = 5
_flush = None


def flush_buffer():
    """The 256 MB buffer whose zero fill flushes the L2 before a timed run (`kplan bench`'s)."""
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    return _flush


def event_samples(fn, reps, warmup):
    """`kplan bench`'s timing: `warmup` calls, then `reps` runs each after an L2 flush, CUDA
    events around each run; milliseconds per run."""
    flush = flush_buffer()
    for _ in range(warmup):
        fn()
    evs = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        evs.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in evs]


def graph_timed(fn, launches=GRAPH_LAUNCHES, reps=GRAPH_REPS):
    """Per-launch time inside CUDA graphs, as `kplan bench` measures it: one graph of
    `launches` (L2 flush, fn) pairs and one of the flushes alone (a 256 MB zero fill), each
    replayed `reps` times after a warm-up replay; (median - median) / launches, ms."""
    flush = flush_buffer()

    def capture(with_fn):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(launches):
                flush.zero_()
                if with_fn:
                    fn()
        return g

    def med(g):
        g.replay()
        ts = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(b))
        return median(ts)

    gw, go = capture(True), capture(False)
    ms = (med(gw) - med(go)) / launches
    del gw, go
    return ms


def record(records, impl, kernel, dtype, shape, nbytes, fn, check=None):
    try:
        out = fn()
        torch.cuda.synchronize()
        err = check(out) if check else None
        ms = timed(fn)
        rec = {"impl": impl, "kernel": kernel, "dtype": dtype, "shape": shape, "bytes": nbytes,
               "median_ms": ms, "gbs": nbytes / (ms * 1e-3) / 1e9,
               **({"max_abs_err_vs_torch": err} if err is not None else {})}
        try:
            gms = graph_timed(fn)
            rec.update({"graph_ms": gms, "graph_gbs": nbytes / (gms * 1e-3) / 1e9,
                        "graph_launches": GRAPH_LAUNCHES, "graph_reps": GRAPH_REPS})
        except Exception as e:  # the event timing stands; say why the graph one is missing
            rec["graph_error"] = repr(e)[:300]
        records.append(rec)
    except Exception as e:  # a failing anchor is recorded, not fatal
        records.append({"impl": impl, "kernel": kernel, "dtype": dtype, "shape": shape, "error": repr(e)[:500]})
    print(f"{impl:>8} {kernel:<10} {dtype} {shape}: {records[-1].get('gbs', float('nan')):.0f} GB/s"
          f" graph {records[-1].get('graph_gbs', float('nan')):.0f} GB/s",
          file=sys.stderr, flush=True)


ENTRY = {"softmax": "kplan_softmax", "rmsnorm": "kplan_rmsnorm", "quantize_fp8": "kplan_quantize_fp8",
         "add": "kplan_add", "reduce_sum": "kplan_reduce_sum_partial"}
_modules = {}


def kplan_kernel(rec):
    """A launcher for one `kplan bench` record (its -D definitions, grid and block): the same
    kernel source compiled by NVRTC through CuPy, launched on torch's current stream, so that it
    is timed exactly as the other anchors are. None when CuPy is not there."""
    try:
        import cupy
    except ImportError:
        return None
    key = (rec["kernel"], tuple(map(tuple, rec["defines"])))
    if key not in _modules:
        src = open(os.path.join(ROOT, "kernels", rec["kernel"] + ".cu")).read()
        opts = ("--std=c++17", "-I" + os.path.join(ROOT, "kernels"), "-I" + os.path.join(ROOT, "include"),
                *(f"-D{k}={v}" for k, v in rec["defines"]))
        _modules[key] = cupy.RawModule(code=src, options=opts, backend="nvrtc")
    mod = _modules[key]
    grid, block = (rec["grid"],), (rec["block"],)
    f = mod.get_function(ENTRY[rec["kernel"]])
    fin = mod.get_function("kplan_reduce_sum_final") if rec["kernel"] == "reduce_sum" else None

    def launch(*args):
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            f(grid, block, args)
            if fin is not None:
                fin((1,), block, (args[2], numpy.int32(rec["grid"]), args[3]))
    return launch


def kplan_case(rec, dev, g):
    """The inputs of one `kplan bench` record and a call that launches kplan's kernel on them:
    (fn, inputs) with inputs the tensors fn reads (x, and rmsnorm's weight w)."""
    names = {"fp32": torch.float32, "bf16": torch.bfloat16}
    p = lambda t: numpy.uint64(t.data_ptr())  # noqa: E731
    k, dt, shape = rec["kernel"], names[rec["dtype"]], rec["shape"]
    launch = kplan_kernel(rec)
    if launch is None:
        raise RuntimeError("CuPy not installed")
    if "x" in shape:
        rows, cols = map(int, shape.split("x"))
        x = torch.randn(rows, cols, device=dev, dtype=dt, generator=g) * 4
        if k == "softmax":
            y = torch.empty_like(x)
            return (lambda: launch(p(x), p(y), numpy.int32(rows), numpy.int32(cols))), {"x": x}
        if k == "rmsnorm":
            w = 1 + 0.5 * torch.randn(cols, device=dev, dtype=dt, generator=g)
            y = torch.empty_like(x)
            return (lambda: launch(p(x), p(w), p(y), numpy.int32(rows), numpy.int32(cols),
                                   numpy.float32(1e-6))), {"x": x, "w": w}
        q = torch.empty(rows, cols, device=dev, dtype=torch.uint8)
        sc = torch.empty(rows, device=dev, dtype=torch.float32)
        return (lambda: launch(p(x), p(q), p(sc), numpy.int32(rows), numpy.int32(cols))), {"x": x}
    n = int(shape)
    x = torch.randn(n, device=dev, dtype=dt, generator=g)
    if k == "add":
        b = torch.randn(n, device=dev, dtype=dt, generator=g)
        y = torch.empty_like(x)
        return (lambda: launch(p(x), p(b), p(y), numpy.int64(n))), {"x": x}
    parts = torch.empty(rec["grid"], device=dev, dtype=torch.float32)
    y = torch.empty(1, device=dev, dtype=torch.float32)
    return (lambda: launch(p(x), numpy.int64(n), p(parts), p(y))), {"x": x}


def kplan_anchors(records, bench, dev, g):
    """kplan's default configurations, timed by do_bench and graph_timed like the anchors."""
    for rec in bench.get("records", []):
        if not rec.get("default"):
            continue
        k, shape = rec["kernel"], rec["shape"]
        try:
            fn, inputs = kplan_case(rec, dev, g)
        except Exception as e:
            records.append({"impl": "kplan", "kernel": k, "dtype": rec["dtype"], "shape": shape, "error": repr(e)[:500]})
            continue
        record(records, "kplan", k, rec["dtype"], shape, rec["bytes"], fn)
        records[-1]["config"] = rec["config"]
        del fn, inputs
        torch.cuda.empty_cache()


def interleaved(records, bench, dev, g, triton_mods):
    """kplan's default configuration and kplan's Triton kernel on the same input, timed by
    do_bench in INTERLEAVE_ROUNDS alternating rounds (kplan first in even rounds): each one's
    times, its spread (max / min - 1) and the per-round Triton / kplan time ratios."""
    for rec in bench.get("records", []):
        k = rec["kernel"]
        if not rec.get("default") or k not in triton_mods:
            continue
        base = {"impl": "interleaved", "kernel": k, "dtype": rec["dtype"], "shape": rec["shape"],
                "config": rec["config"], "bytes": rec["bytes"], "rounds": INTERLEAVE_ROUNDS}
        try:
            fn, inputs = kplan_case(rec, dev, g)
            x = inputs["x"]
            out = torch.empty_like(x)
            if k == "softmax":
                tri = lambda: triton_mods[k].softmax(x, out=out)  # noqa: E731
            else:
                w = inputs["w"]
                tri = lambda: triton_mods[k].rmsnorm(x, w, 1e-6, out=out)  # noqa: E731
            fn()
            tri()
            torch.cuda.synchronize()
            tk, tt = [], []
            for r in range(INTERLEAVE_ROUNDS):
                if r % 2 == 0:
                    tk.append(timed(fn))
                    tt.append(timed(tri))
                else:
                    tt.append(timed(tri))
                    tk.append(timed(fn))
            ratios = [b / a for a, b in zip(tk, tt)]
            records.append({**base, "kplan_ms": tk, "triton_ms": tt,
                            "kplan_spread": max(tk) / min(tk) - 1, "triton_spread": max(tt) / min(tt) - 1,
                            "ratio_median": median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                            "kplan_gbs": rec["bytes"] / (median(tk) * 1e-3) / 1e9,
                            "triton_gbs": rec["bytes"] / (median(tt) * 1e-3) / 1e9})
            print(f"interleaved {k:<8} {rec['dtype']} {rec['shape']:<11} kplan/Triton speed "
                  f"{median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}), spread kplan "
                  f"{100 * records[-1]['kplan_spread']:.1f}% Triton {100 * records[-1]['triton_spread']:.1f}%",
                  file=sys.stderr, flush=True)
            del fn, inputs, x, out
        except Exception as e:  # recorded, not fatal
            records.append({**base, "error": repr(e)[:500]})
        torch.cuda.empty_cache()


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
    shapes = ([(torch.bfloat16, 8192, c) for c in (1024, 4096, 16384, 32768)]
              + [(torch.bfloat16, 32768, 1024), (torch.bfloat16, 2048, 8192), (torch.float32, 8192, 4096)])
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

    # fp8 per-token quantize (bf16 in, e4m3fn codes + one fp32 scale per row), torch eager
    rows, cols = 8192, 7168
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16, generator=g)
    fp8 = torch.float8_e4m3fn
    fmax = torch.finfo(fp8).max

    def quant():
        amax = x.abs().amax(dim=-1, keepdim=True).float()
        scale = amax / fmax
        q = (x.float() * (fmax / amax)).clamp(-fmax, fmax).to(fp8)
        return q, scale

    record(records, "torch", "quantize_fp8", "bf16", f"{rows}x{cols}", rows * cols * 3 + rows * 4, quant)
    del x
    torch.cuda.empty_cache()

    # kplan's own default configurations (from the `kplan bench` JSON given as argument), timed
    # by the same two methods
    if len(sys.argv) > 1:
        try:
            bench = json.load(open(sys.argv[1]))
        except Exception as e:
            bench = {}
            records.append({"impl": "kplan", "error": f"cannot read {sys.argv[1]}: {e!r}"[:500]})
        kplan_anchors(records, bench, dev, g)
        interleaved(records, bench, dev, g, {"softmax": sm, "rmsnorm": rn})

    json.dump({"torch": torch.__version__, "triton": triton.__version__, "device": torch.cuda.get_device_name(0),
               "timing": "triton.testing.do_bench(warmup=25 ms, rep=200 ms, return_mode='median'), L2 cleared between runs",
               "graph_timing": f"CUDA graph of {GRAPH_LAUNCHES} (256 MB zero fill, launch) pairs less the fills alone, median of {GRAPH_REPS} replays",
               "interleave_rounds": INTERLEAVE_ROUNDS,
               "records": records}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
