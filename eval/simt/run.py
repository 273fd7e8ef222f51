#!/usr/bin/env python3
"""Runs real kernels from public projects, before and after their wave64 fixes, through
`kplan verify --backend cpu-simt --warp 32,64`.

Sources are read at run time from git mirrors of the projects' public history
(`git --git-dir MIRROR show COMMIT:PATH`); nothing of theirs is stored in this repository. Each
case names the fix commit; the version before it is `COMMIT^`. The harness, the reference and,
for device functions, the small launching kernel are written here.

usage: eval/simt/run.py [--kplan target/debug/kplan] [--mirrors /work/.mirror] [--json OUT]
Exit 0 when every "before" fails at W=64 and passes at W=32 and every "after" passes at both.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def git_show(mirrors, repo, rev, path):
    d = os.path.join(mirrors, repo.replace("/", "+"), "repo")
    if not os.path.isdir(d):
        d = os.path.join(mirrors, repo.replace("/", "+"))
    return subprocess.run(["git", "--git-dir", d, "show", f"{rev}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def python_string(text, name):
    """The raw string literal assigned to `name` in Python source."""
    m = re.search(name + r'\s*=\s*r"""(.*?)"""', text, re.S)
    if not m:
        raise SystemExit(f"{name} not found")
    return m.group(1)


def c_function(text, name):
    """`template <...>` + qualifiers + the body of the function `name` (first definition)."""
    i = text.index(name + "(")
    start = text.rfind("template", 0, i)
    j = text.index("{", i)
    depth = 0
    for k in range(j, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[start:k + 1] + "\n"
    raise SystemExit(f"unbalanced {name}")


HYPRE_PRELUDE = """// Names the hypre header defines around these functions; HYPRE_WARP_SIZE is the target's
// warp width, as hypre's HIP configuration sets it.
typedef int hypre_int;
#define HYPRE_WARP_SIZE warpSize
#define HYPRE_WARP_FULL_MASK 0xFFFFFFFF
"""

BLOCK_REDUCE_LAUNCHER = """
// Launching kernel written for this evaluation (portable): one partial per warp, lane 0 of
// each warp (or the last lane, for the all-reduce) stores the warp's result.
__global__ void eval_block(const {T}* x, {T}* out, int n) {{
    __shared__ {T} part[1024 / 32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    {T} v = i < n ? x[i] : {T}({IDENT});
    v = {FN}(v);
    if (threadIdx.x % warpSize == {LEADER}) part[threadIdx.x / warpSize] = v;
    __syncthreads();
    if (threadIdx.x == 0) {{
        {T} s = part[0];
        for (int w = 1; w < (int)(blockDim.x + warpSize - 1) / warpSize; ++w) s = {COMBINE};
        out[blockIdx.x] = s;
    }}
}}
"""

PREFIX_LAUNCHER = """
// Launching kernel written for this evaluation (portable): a block-wide exclusive scan from
// the per-warp scans and the warp totals.
__global__ void eval_block(const int* x, int* out, int n) {
    __shared__ int totals[1024 / 32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    int all = 0;
    const int ex = warp_prefix_sum(lane, i < n ? x[i] : 0, all);
    if (lane == 0) totals[warp] = all;
    __syncthreads();
    int off = 0;
    for (int w = 0; w < warp; ++w) off += totals[w];
    if (i < n) out[i] = ex + off;
}
"""

BLOCK_REF = """
#include <algorithm>
void eval_ref(const {T}* x, {T}* out, int n) {{
    for (int b = 0; b * BLOCK < n; ++b) {{
        {ACC} s = {IDENT};
        for (int i = b * BLOCK; i < n && i < (b + 1) * BLOCK; ++i) s = {REF_COMBINE};
        out[b] = ({T})s;
    }}
}}
"""

PREFIX_REF = """
void eval_ref(const int* x, int* out, int n) {
    for (int b = 0; b * BLOCK < n; ++b) {
        int s = 0;
        for (int i = b * BLOCK; i < n && i < (b + 1) * BLOCK; ++i) { out[i] = s; s += x[i]; }
    }
}
"""


def block_harness(dtype, out_len, data):
    return f"""[kernel]
source = "kernel.cu"
entry = "eval_block"
[params]
n = [1, 33, 64, 100, 1000, 4099]
[configs]
BLOCK = [64, 256]
[[args]]
name = "x"
kind = "in"
dtype = "{dtype}"
len = "n"
data = {data}
[[args]]
name = "out"
kind = "out"
dtype = "{dtype}"
len = "{out_len}"
[[args]]
name = "n"
kind = "scalar"
dtype = "int32"
value = "n"
[launch]
grid = "ceil(n / BLOCK)"
block = "BLOCK"
[reference]
source = "ref.cpp"
function = "eval_ref"
[tolerance]
fp32 = {{ rel = 1e-5, abs = 1e-5 }}
"""


def hypre_case(fn, kind):
    path = "src/utilities/hypre_cuda_utils.h"

    def build(text):
        body = HYPRE_PRELUDE + c_function(text, fn)
        if kind == "prefix":
            return body + PREFIX_LAUNCHER, PREFIX_REF, block_harness("int32", "n", '["random", "ones"]')
        if kind == "max":
            launcher = BLOCK_REDUCE_LAUNCHER.format(T="float", IDENT="-INFINITY", FN=fn, LEADER="0",
                                                    COMBINE="max(s, part[w])")
            ref = BLOCK_REF.format(T="float", ACC="float", IDENT="-INFINITY",
                                   REF_COMBINE="std::max(s, x[i])")
            return body + launcher, "#include <cmath>\n" + ref, block_harness(
                "fp32", "ceil(n / BLOCK)", '["random", "ramp"]')
        leader = "warpSize - 1" if kind == "allsum" else "0"
        launcher = BLOCK_REDUCE_LAUNCHER.format(T="float", IDENT="0", FN=fn, LEADER=leader,
                                                COMBINE="s + part[w]")
        ref = BLOCK_REF.format(T="float", ACC="double", IDENT="0", REF_COMBINE="s + x[i]")
        return body + launcher, ref, block_harness("fp32", "ceil(n / BLOCK)", '["random", "ones"]')

    return {
        "name": f"hypre {fn}",
        "repo": "hypre-space/hypre",
        "commit": "950a747ae6bcee21fa238f4cfc6b034f2ea83f01",
        "path": path,
        "build": build,
    }


def cupy_case():
    def build(text):
        kernel = python_string(text, "_calc_Bp_kernel")
        ref = """
void eval_ref(int n_row, const int* Ap, const int* Aj, const int* col_cnt, int* Bp) {
    for (int r = 0; r < n_row; ++r) {
        int s = 0;
        for (int p = Ap[r]; p < Ap[r + 1]; ++p) s += col_cnt[Aj[p]];
        Bp[r + 1] = s;
    }
}
"""
        harness = """[kernel]
source = "kernel.cu"
entry = "row_kept_count<int>"
[params]
n_row = [1, 7, 100]
# Ap = 0, 1, 2, ... (one entry per row), Aj = 0, 1, 2, ...: Bp[r + 1] = col_cnt[r]
[[args]]
name = "n_row"
kind = "scalar"
dtype = "int32"
value = "n_row"
[[args]]
name = "Ap"
kind = "in"
dtype = "int32"
len = "n_row + 1"
data = "ramp"
[[args]]
name = "Aj"
kind = "in"
dtype = "int32"
len = "n_row"
data = "ramp"
[[args]]
name = "col_cnt"
kind = "in"
dtype = "int32"
len = "n_row"
data = "random"
[[args]]
name = "Bp"
kind = "inout"
dtype = "int32"
len = "n_row + 1"
data = "zeros"
[launch]
grid = "n_row"
block = 256
[reference]
source = "ref.cpp"
function = "eval_ref"
"""
        return kernel, ref, harness

    return {
        "name": "cupy row_kept_count (CSR minor-index row counts)",
        "repo": "cupy/cupy",
        "commit": "9ddbc776bd280f0cb27a83180799f1814c0be0c4",
        "path": "cupyx/scipy/sparse/_compressed.py",
        "build": build,
    }


CASES = [
    cupy_case(),
    hypre_case("warp_reduce_sum", "sum"),
    hypre_case("warp_allreduce_sum", "allsum"),
    hypre_case("warp_reduce_max", "max"),
    hypre_case("warp_prefix_sum", "prefix"),
]


def verify(kplan, d):
    r = subprocess.run([kplan, "verify", os.path.join(d, "h.toml"), "--backend", "cpu-simt",
                        "--warp", "32,64", "--format", "json"], capture_output=True, text=True)
    if r.returncode == 2:
        raise SystemExit(f"kplan verify: {r.stderr}")
    rep = json.loads(r.stdout)
    per = {w["warp"]: (w["runs"], w["failures"]) for w in rep["warps"]}
    first = next((c for c in rep["cases"] if not c["passed"]), None)
    why = ""
    if rep["compile_errors"]:
        why = rep["compile_errors"][0].splitlines()[0]
    elif first:
        why = (first.get("error") or "") or (
            f"{first['mismatch']['arg']}[{first['mismatch']['index']}] got {first['mismatch']['got']}, "
            f"want {first['mismatch']['want']}")
    return rep["status"], per, rep.get("warp_dependence"), why


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kplan", default=os.path.join(ROOT, "target", "debug", "kplan"))
    ap.add_argument("--mirrors", default=os.environ.get("KPLAN_MIRRORS", "/work/.mirror"))
    ap.add_argument("--json")
    a = ap.parse_args()
    results, ok = [], True
    for c in CASES:
        row = {"name": c["name"], "repo": c["repo"], "fix": c["commit"], "path": c["path"]}
        for side, rev in (("before", c["commit"] + "^"), ("after", c["commit"])):
            text = git_show(a.mirrors, c["repo"], rev, c["path"])
            kernel, ref, harness = c["build"](text)
            with tempfile.TemporaryDirectory(prefix="kplan-eval-") as d:
                for n, t in (("kernel.cu", kernel), ("ref.cpp", ref), ("h.toml", harness)):
                    with open(os.path.join(d, n), "w") as f:
                        f.write(t)
                status, per, dep, why = verify(a.kplan, d)
            row[side] = {"status": status, "w32": per.get(32), "w64": per.get(64),
                         "dependence": dep is not None, "first_failure": why}
        b, f = row["before"], row["after"]
        row["expected"] = (b["w32"][1] == 0 and b["w64"][1] > 0 and f["status"] == "passed")
        ok &= row["expected"]
        results.append(row)
        print(f"{c['name']} ({c['repo']} {c['commit'][:10]})")
        for side in ("before", "after"):
            s = row[side]
            print(f"  {side:6} W=32 {s['w32'][1]}/{s['w32'][0]} failed, W=64 {s['w64'][1]}/{s['w64'][0]} failed"
                  + (f"; first: {s['first_failure'][:160]}" if s["first_failure"] else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    print("all as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
