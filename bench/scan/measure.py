"""Timing helper for bench/scan/run.sh: best of N wall-clock runs, MB/s and lines/s."""
import os
import subprocess
import sys
import tempfile
import time

EXTS = {".cu", ".cuh", ".hip", ".h", ".hpp", ".cc", ".cpp", ".cxx", ".inl", ".hh", ".hxx"}


def corpus(tree):
    files, size, lines = [], 0, 0
    for d, _, names in os.walk(tree):
        for n in names:
            p = os.path.join(d, n)
            if os.path.splitext(n)[1].lower() in EXTS and os.path.isfile(p) and not os.path.islink(p):
                b = open(p, "rb").read()
                files.append(p)
                size += len(b)
                lines += b.count(b"\n")
    return files, size, lines


def best(cmd, runs, cwd=None):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        times.append(time.perf_counter() - t)
        if r.returncode not in (0, 1):
            sys.exit(f"{cmd[0]} failed with exit code {r.returncode}")
    return min(times)


def row(name, secs, size, lines):
    print(f"| {name} | {secs:.2f} | {size / 1e6 / secs:.1f} | {lines / secs / 1e6:.2f} M |")


def main():
    root, tree, runs, sg = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    kplan = os.path.join(root, "target", "release", "kplan")
    files, size, lines = corpus(tree)
    print(f"tree: {tree}: {len(files)} files, {size / 1e6:.1f} MB, {lines} lines; best of {runs} runs")
    print("| tool | seconds | MB/s | lines/s |\n|---|---|---|---|")
    # warm the page cache once
    best([kplan, "scan", tree, "--format", "json", "--fail-on", "never"], 1)
    t_k = best([kplan, "scan", tree, "--format", "json", "--fail-on", "never"], runs)
    row("kplan scan (every rule)", t_k, size, lines)
    t_s = best([sg, "scan", "-c", os.path.join(root, "bench/scan/ast-grep/sgconfig.yml"), "--json=compact", tree], runs)
    row("ast-grep scan (5 rules)", t_s, size, lines)
    print(f"speed-up: {t_s / t_k:.1f}x")
    # one 200 MB file built from the tree's sources
    with tempfile.TemporaryDirectory() as d:
        big = os.path.join(d, "big.cu")
        with open(big, "wb") as out:
            written = 0
            while written < 200_000_000:
                for p in files:
                    b = open(p, "rb").read()
                    out.write(b)
                    written += len(b)
                    if written >= 200_000_000:
                        break
        blines = open(big, "rb").read().count(b"\n")
        t_b = best([kplan, "scan", big, "--format", "json", "--fail-on", "never"], 1)
        print(f"one {written / 1e6:.0f} MB file: {t_b:.2f} s, {written / 1e6 / t_b:.1f} MB/s, {blines / t_b / 1e6:.2f} M lines/s")


if __name__ == "__main__":
    main()
