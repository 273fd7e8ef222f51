#!/usr/bin/env python3
"""Time `kplan scan` against input size: one huge device function with many hits, one huge
single line, and a big tree, each at a small and a 10x larger size. Prints the times and the
ratio large/small: ~10 is linear, ~100 quadratic.

Usage: bench/scan/scaling.py KPLAN_BINARY [RUNS]   (bench/scan/scaling.sh builds and calls it)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# lane arithmetic on a literal 32 (warp-size-literal, which looks at the whole function for
# width-32 shuffles) and a full-mask ballot (full-mask-literal): findings on every line
HIT_LINE = "    acc[threadIdx.x % 32] += __ballot_sync(0xffffffff, acc[lane] > 0);\n"


def function_of(lines):
    """One `__global__` function of `lines` body lines, three findings per line."""
    return (
        "__global__ void huge(float* acc, int lane) {\n" + HIT_LINE * lines + "}\n"
    )


def line_of(mb):
    """One line of about `mb` MB: a kernel whose body is one long line of hits."""
    unit = "acc[threadIdx.x % 32] = __ballot_sync(0xffffffff, acc[lane] > 0); "
    n = mb * 1_000_000 // len(unit)
    return "__global__ void wide(float* acc, int lane) { " + unit * n + "}\n"


def tree_of(dst, copies):
    """`copies` copies of the scanner's fixture tree (real rule fixtures, fire and pass)."""
    src = os.path.join(ROOT, "crates", "kplan-scan", "tests", "fixtures")
    for i in range(copies):
        shutil.copytree(src, os.path.join(dst, f"copy{i:05d}"))


def timed(kplan, args, runs):
    best = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(
            [kplan, "scan", "--fail-on", "never", "--targets", "sm_90a,gfx942", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        best.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"kplan scan {args} exited {r.returncode}: {r.stderr.decode()[-500:]}")
    return statistics.median(best)


def main():
    kplan = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    work = tempfile.mkdtemp(prefix="kplan-scaling-")
    try:
        cases = []
        for name, small, large, make in [
            ("function (lines)", 2_000, 20_000, lambda n: function_of(n)),
            ("single line (MB)", 1, 10, lambda n: line_of(n)),
        ]:
            sizes = []
            for n in (small, large):
                p = os.path.join(work, f"{name.split()[0]}-{n}.cu")
                with open(p, "w") as f:
                    f.write(make(n))
                sizes.append((n, p, os.path.getsize(p)))
            cases.append((name, sizes))
        tree_sizes = []
        for n in (20, 200):
            d = os.path.join(work, f"tree-{n}")
            os.makedirs(d)
            tree_of(d, n)
            size = sum(
                os.path.getsize(os.path.join(dp, f))
                for dp, _, fs in os.walk(d)
                for f in fs
            )
            tree_sizes.append((n, d, size))
        cases.append(("tree (fixture copies)", tree_sizes))
        print(f"{'input':<24} {'size':>8} {'bytes':>11} {'human s':>9} {'json s':>8}")
        for name, sizes in cases:
            rows = []
            for n, p, b in sizes:
                th = timed(kplan, [p], runs)
                tj = timed(kplan, [p, "--format", "json"], runs)
                rows.append((th, tj))
                print(f"{name:<24} {n:>8} {b:>11} {th:>9.3f} {tj:>8.3f}")
            (h0, j0), (h1, j1) = rows
            bytes_ratio = sizes[1][2] / sizes[0][2]
            print(
                f"{'':<24} ratio: input {bytes_ratio:.1f}x, human {h1 / h0:.1f}x, json {j1 / j0:.1f}x"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
