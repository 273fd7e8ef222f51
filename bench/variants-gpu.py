"""Exploration on a CUDA GPU: kernel source variants x tile configurations of the row kernels
(and add), side by side with kplan's Triton kernels and a device copy of the same bytes, in one
process and under one timing method (the one `kplan bench` uses: CUDA events around each launch,
the L2 flushed by a 256 MB zero fill before each run, median). Every output is checked against
PyTorch. What it finds goes into kernels/tiles.toml's defaults; the figures that docs quote come
from bench/run-gpu.sh only.

    python3 bench/variants-gpu.py OUT.json NAME=KERNELS_DIR[:KERNEL,...] [...]

Every source is timed at every configuration of the kernels it names (default: all). Kernels are
compiled with nvcc -cubin for sm_90, in parallel, and loaded through CuPy (`kplan bench`
compiles through NVRTC; the configuration it chooses is timed again by bench/run-gpu.sh).
KPLAN_VARIANT_CASES (comma-separated kernel names) limits the cases. The timing helpers are
bench/anchors.py's.
"""
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anchors import event_samples, graph_timed, median  # noqa: E402
from anchors import load as load_triton  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARMUP, REPS, ROUNDS = 5, 30, 3
ENTRY = {"softmax": "kplan_softmax", "rmsnorm": "kplan_rmsnorm", "quantize_fp8": "kplan_quantize_fp8",
         "add": "kplan_add"}


OCC = -1  # blocks_per_sm: as many blocks per SM as the kernel's occupancy allows (CUDA's query)


def row_configs(cols, vec=8):
    """(block, tpr, items, unroll, blocks_per_sm) candidates holding a row of `cols` in registers,
    plus streaming ones for long rows; blocks_per_sm OCC sizes the persistent grid to the
    blocks that are resident at once."""
    nvec = cols // vec
    out = []
    tpr = 8
    while tpr <= 1024:
        items = -(-nvec // tpr)
        if 1 <= items <= 16 and tpr * items * vec >= cols:
            for block in sorted({max(tpr, 64), max(tpr, 128), max(tpr, 256), max(tpr, 512)}):
                if block > 1024:
                    continue
                out.append((block, tpr, items, 1, 0))
                out.append((block, tpr, items, 1, OCC))
                out.append((block, tpr, items, 2, OCC))
                g = max(1, 2048 // block)
                out.append((block, tpr, items, 1, g))
                out.append((block, tpr, items, 2, g))
                if g >= 2:
                    out.append((block, tpr, items, 2, g // 2))
        tpr *= 2
    if cols >= 16384:
        for t in (512, 1024):
            out.append((t, t, 0, 1, 0))
    return sorted(set(out))


def defines(kernel, dtype, cfg, vec):
    bf = "1" if dtype == "bf16" else "0"
    if kernel == "add":
        block, unroll, g = cfg
        return [("KPLAN_DTYPE_BF16", bf), ("KPLAN_BLOCK", block), ("KPLAN_VEC", vec), ("KPLAN_UNROLL", unroll)]
    block, tpr, items, unroll, g = cfg
    return [("KPLAN_DTYPE_BF16", bf), ("KPLAN_BLOCK", block), ("KPLAN_VEC", vec), ("KPLAN_TPR", tpr),
            ("KPLAN_ITEMS", items), ("KPLAN_UNROLL", max(1, unroll))]


def label(kernel, cfg, vec):
    if kernel == "add":
        b, u, g = cfg
        return f"b{b}-v{vec}-u{u}-g{g}"
    b, t, i, u, g = cfg
    s = f"b{b}-v{vec}-t{t}-i{i}"
    if u > 1:
        s += f"-u{u}"
    if g == OCC:
        s += "-gocc"
    elif g > 0:
        s += f"-g{g}"
    return s


def grid(kernel, cfg, shape, vec, sms, resident):
    """`resident`: blocks of this kernel and block size resident on one SM at once."""
    if kernel == "add":
        b, u, g = cfg
        return min(-(-shape // (b * vec * u)), sms * g)
    rows, cols = shape
    b, t, i, u, g = cfg
    groups = -(-rows // (b // t))
    if g == OCC:
        g = resident
    return min(groups, sms * g) if g > 0 else groups


def resident_blocks(f, block):
    """Blocks of `f` (a CuPy function) with `block` threads resident on one SM: CUDA's occupancy
    query."""
    import cupy
    try:
        fn = getattr(f, "kernel", f)  # a RawKernel wraps the driver's function
        return cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, block, 0)
    except Exception:  # an older CuPy: registers alone (64K per SM, 256 per warp granule), 2048 threads
        per_warp = -(-f.num_regs * 32 // 256) * 256
        return max(1, min(32, 2048 // block, 65536 // (per_warp * max(1, block // 32))))


def compile_ptx(job):
    src_dir, kernel, defs, out = job
    if os.path.exists(out):
        return out, None
    nvcc = os.environ.get("NVCC", "nvcc")
    cmd = [nvcc, "-cubin", "-arch=sm_90", "--std=c++17", "-I" + src_dir, "-I" + os.path.join(ROOT, "include"),
           *(f"-D{k}={v}" for k, v in defs), "-o", out + ".tmp", os.path.join(src_dir, kernel + ".cu")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return out, r.stderr[-800:]
    os.replace(out + ".tmp", out)
    return out, None


def main():
    import cupy

    out_path = sys.argv[1]
    sources, enabled = [], {}
    for a in sys.argv[2:]:
        name, spec = a.split("=", 1)
        d, _, ks = spec.partition(":")
        sources.append((name, d))
        enabled[name] = set(ks.split(",")) if ks else None
    cand_name = sources[0][0]
    only = os.environ.get("KPLAN_VARIANT_CASES")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    g = torch.Generator(device=dev).manual_seed(0)
    sm, rn = load_triton("softmax"), load_triton("rmsnorm")
    ptx_dir = "/tmp/kplan-variants-ptx"
    os.makedirs(ptx_dir, exist_ok=True)

    cases = []
    bf_shapes = [(8192, 1024), (8192, 4096), (8192, 16384), (8192, 32768), (32768, 1024), (2048, 8192)]
    for k in ("softmax", "rmsnorm"):
        for s in bf_shapes:
            cases.append((k, "bf16", s))
        cases.append((k, "fp32", (8192, 4096)))
    cases.append(("quantize_fp8", "bf16", (8192, 7168)))
    cases.append(("add", "bf16", 1 << 30))
    if only:
        cases = [c for c in cases if c[0] in only.split(",")]

    # every compile job first, in parallel
    plan = []  # (kernel, dtype, shape, source name, cfg, vec)
    for k, dt, s in cases:
        vec = 8 if dt == "bf16" else 4
        if k == "add":
            cfgs = [(1024, 4, 2), (1024, 8, 1), (512, 8, 2), (256, 8, 8), (1024, 2, 2), (512, 4, 4), (256, 4, 8)]
        else:
            cfgs = row_configs(s[1], vec)
        for name, _ in sources:
            if enabled[name] is None or k in enabled[name]:
                for c in cfgs:
                    plan.append((k, dt, s, name, c, vec))
    dirs = dict(sources)
    jobs, ptx_of = [], {}
    for k, dt, s, name, c, vec in plan:
        defs = defines(k, dt, c, vec)
        h = hashlib.sha1(repr((name, k, defs)).encode()).hexdigest()[:16]
        path = os.path.join(ptx_dir, f"{k}-{h}.cubin")
        ptx_of[(k, dt, s, name, c)] = path
        jobs.append((dirs[name], k, defs, path))
    t0 = time.time()
    errors = {}
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 8) as ex:
        for path, err in ex.map(compile_ptx, list({j[3]: j for j in jobs}.values())):
            if err:
                errors[path] = err
    print(f"compiled {len(set(j[3] for j in jobs))} variants in {time.time() - t0:.1f}s, {len(errors)} errors",
          file=sys.stderr, flush=True)
    for p, e in list(errors.items())[:3]:
        print(p, e, file=sys.stderr)

    modules = {}
    regs = {}

    def launcher(k, dt, s, name, c, vec):
        path = ptx_of[(k, dt, s, name, c)]
        if path in errors:
            return None
        if path not in modules:
            modules[path] = cupy.RawModule(path=path)
        f = modules[path].get_function(ENTRY[k])
        blk = c[0]
        gr = grid(k, c, s, vec, sms, resident_blocks(f, blk))
        regs[(name, label(k, c, vec))] = (f.num_regs, resident_blocks(f, blk))

        def launch(*args):
            with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                f((gr,), (blk,), args)
        return launch, gr

    p = lambda t: numpy.uint64(t.data_ptr())  # noqa: E731
    big = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    big2 = torch.empty_like(big)
    copy_ms = median(event_samples(lambda: big2.copy_(big), reps=20, warmup=WARMUP))
    copy_gbs = 2 * big.numel() / (copy_ms * 1e-3) / 1e9
    del big, big2
    print(f"copy 1 GiB: {copy_gbs:.0f} GB/s", file=sys.stderr, flush=True)

    results = {"device": torch.cuda.get_device_name(0), "sms": sms, "copy_gbs": copy_gbs, "torch": torch.__version__,
               "timing": f"events per launch, 256 MB zero fill before each, {WARMUP} warm-up, {ROUNDS} rounds x {REPS} runs, median",
               "sources": dict(sources), "cases": []}
    for k, dt, s in cases:
        tdt = torch.bfloat16 if dt == "bf16" else torch.float32
        es = 2 if dt == "bf16" else 4
        entries = [e for e in plan if e[0] == k and e[1] == dt and e[2] == s]
        cands = []  # (name, label, fn, check) ; check returns error measure
        if k == "add":
            n = s
            a = torch.randn(n, device=dev, dtype=tdt, generator=g)
            b = torch.randn(n, device=dev, dtype=tdt, generator=g)
            y = torch.empty_like(a)
            nbytes = 3 * n * es
            ref = (a.float() + b.float()).to(tdt)
            check = lambda: float((y.float() - ref.float()).abs().max())  # noqa: E731
            for e in entries:
                r = launcher(*e)
                if r is None:
                    continue
                fn = (lambda L: (lambda: L(p(a), p(b), p(y), numpy.int64(n))))(r[0])
                cands.append((e[3], label(k, e[4], e[5]), fn, check, r[1]))
            cands.append(("torch", "torch.add", lambda: torch.add(a, b, out=y), check, 0))
            copy_src, copy_dst = a, y
        else:
            rows, cols = s
            x = torch.randn(rows, cols, device=dev, dtype=tdt, generator=g) * 4
            if k == "quantize_fp8":
                q = torch.empty(rows, cols, device=dev, dtype=torch.uint8)
                sc = torch.empty(rows, device=dev, dtype=torch.float32)
                nbytes = rows * cols * (es + 1) + rows * 4
                amax = x.float().abs().amax(dim=-1, keepdim=True)
                refq = (x.float() * (448.0 / amax)).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8)
                refs = (amax / 448.0).squeeze(1)

                def check():
                    return float((q != refq).sum().item()) + float(((sc - refs).abs() > 1e-6 * refs).sum().item())

                for e in entries:
                    r = launcher(*e)
                    if r is None:
                        continue
                    fn = (lambda L: (lambda: L(p(x), p(q), p(sc), numpy.int32(rows), numpy.int32(cols))))(r[0])
                    cands.append((e[3], label(k, e[4], e[5]), fn, check, r[1]))
                copy_src, copy_dst = x, torch.empty_like(x)
            else:
                y = torch.empty_like(x)
                nbytes = 2 * rows * cols * es + (cols * es if k == "rmsnorm" else 0)
                if k == "softmax":
                    ref = torch.softmax(x.float(), dim=-1)
                    args = lambda: (p(x), p(y), numpy.int32(rows), numpy.int32(cols))  # noqa: E731
                    tri = lambda: sm.softmax(x, out=y)  # noqa: E731
                    check = lambda: float((y.float() - ref).abs().max())  # noqa: E731
                else:
                    w = 1 + 0.5 * torch.randn(cols, device=dev, dtype=tdt, generator=g)
                    ref = F.rms_norm(x.float(), (cols,), w.float(), 1e-6)
                    args = lambda: (p(x), p(w), p(y), numpy.int32(rows), numpy.int32(cols), numpy.float32(1e-6))  # noqa: E731
                    tri = lambda: rn.rmsnorm(x, w, 1e-6, out=y)  # noqa: E731
                    check = lambda: float(((y.float() - ref).abs() / (ref.abs() + 1e-3)).max())  # noqa: E731
                for e in entries:
                    r = launcher(*e)
                    if r is None:
                        continue
                    fn = (lambda L: (lambda: L(*args())))(r[0])
                    cands.append((e[3], label(k, e[4], e[5]), fn, check, r[1]))
                cands.append(("triton", "triton", tri, check, 0))
                copy_src, copy_dst = x, y
        cands.append(("copy", "copy same bytes", lambda: copy_dst.copy_(copy_src), None, 0))
        copy_bytes = 2 * copy_src.numel() * copy_src.element_size()
        samples = {i: [] for i in range(len(cands))}
        errs = {}
        for i, (name, lab, fn, chk, _) in enumerate(cands):
            if chk is not None:
                if k == "quantize_fp8":
                    q.zero_()
                elif k != "add":
                    y.fill_(float("nan"))
                else:
                    y.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                errs[i] = chk()
        for _ in range(ROUNDS):
            for i, (name, lab, fn, chk, _) in enumerate(cands):
                samples[i] += event_samples(fn, REPS, WARMUP)
        recs = []
        for i, (name, lab, fn, chk, gr) in enumerate(cands):
            ms = median(samples[i])
            nb = copy_bytes if name == "copy" else nbytes
            recs.append({"source": name, "config": lab, "grid": gr, "median_ms": ms, "gbs": nb / (ms * 1e-3) / 1e9,
                         "err": errs.get(i), "regs_resident": regs.get((name, lab))})
        # graph timing of the best three of the candidate source and the references
        order = sorted(range(len(cands)), key=lambda i: -recs[i]["gbs"])
        top = [i for i in order if cands[i][0] == cand_name][:3] + [i for i in range(len(cands)) if cands[i][0] in ("triton", "copy", "torch")]
        for name, _ in sources[1:]:
            top += [i for i in order if cands[i][0] == name][:2]
        for i in top:
            try:
                gms = graph_timed(cands[i][2])
                nb = copy_bytes if cands[i][0] == "copy" else nbytes
                recs[i]["graph_gbs"] = nb / (gms * 1e-3) / 1e9
            except Exception as ex:  # the event timing stands
                recs[i]["graph_error"] = repr(ex)[:200]
        recs.sort(key=lambda r: -r["gbs"])
        shape_l = f"{s[0]}x{s[1]}" if isinstance(s, tuple) else str(s)
        results["cases"].append({"kernel": k, "dtype": dt, "shape": shape_l, "bytes": nbytes, "records": recs})
        ref_rec = {r["source"]: r for r in recs if r["source"] in ("triton", "copy", "torch")}
        line = f"{k:<12} {dt} {shape_l:<11} " + " ".join(f'{n}={r["gbs"]:.0f}' for n, r in ref_rec.items())
        print(line, file=sys.stderr, flush=True)
        for r in [r for r in recs if r["source"] in (cand_name, "triton", "copy", "torch")][:8]:
            print(f'    {r["source"]:<8} {r["config"]:<26} {r["gbs"]:6.0f} g{r.get("graph_gbs", 0):6.0f} err {r["err"]}',
                  file=sys.stderr, flush=True)
        for name, _ in sources[1:]:
            for r in [r for r in recs if r["source"] == name][:4]:
                print(f'    {r["source"]:<8} {r["config"]:<26} {r["gbs"]:6.0f} g{r.get("graph_gbs", 0):6.0f} err {r["err"]}',
                      file=sys.stderr, flush=True)
        del cands
        torch.cuda.empty_cache()
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
