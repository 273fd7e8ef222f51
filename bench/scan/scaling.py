#!/usr/bin/env python3
"""Time `kplan scan` against input size: one huge device function with many hits, one huge
single line, and a big tree, each at a small and a 10x larger size, in the human, JSON and
SARIF formats. Prints the times (median of RUNS), the peak resident memory of a run, and the
time ratio large/small: ~10 is linear, ~100 quadratic.

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
    """Median wall time (s) over `runs` and the largest peak resident memory (MB) of a run."""
    best = []
    rss = 0
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.Popen(
            [kplan, "scan", "--fail-on", "never", "--targets", "sm_90a,gfx942", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        best.append(time.perf_counter() - t)
        rss = max(rss, usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.exit(f"kplan scan {args} exited {code}: {err.decode()[-500:]}")
    return statistics.median(best), rss


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
        formats = ["human", "json", "sarif"]
        print(
            f"{'input':<24} {'size':>8} {'bytes':>11}"
            + "".join(f" {f + ' s':>9}" for f in formats)
            + "".join(f" {f + ' MB':>9}" for f in formats)
        )
        for name, sizes in cases:
            rows = []
            for n, p, b in sizes:
                runs_of = [timed(kplan, [p, "--format", f], runs) for f in formats]
                rows.append([t for t, _ in runs_of])
                print(
                    f"{name:<24} {n:>8} {b:>11}"
                    + "".join(f" {t:>9.3f}" for t, _ in runs_of)
                    + "".join(f" {m:>9.0f}" for _, m in runs_of)
                )
            bytes_ratio = sizes[1][2] / sizes[0][2]
            ratios = ", ".join(
                f"{f} {rows[1][i] / rows[0][i]:.1f}x" for i, f in enumerate(formats)
            )
            print(f"{'':<24} ratio: input {bytes_ratio:.1f}x, time {ratios}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
