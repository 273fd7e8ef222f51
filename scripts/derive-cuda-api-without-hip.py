#!/usr/bin/env python3
"""Derive crates/kplan-scan/data/cuda-api-without-hip.tsv from HIPIFY's support tables.

    python3 scripts/derive-cuda-api-without-hip.py GIT_DIR_OF_ROCm/HIPIFY [COMMIT] > crates/kplan-scan/data/cuda-api-without-hip.tsv

Reads `docs/tables/*_supported_by_HIP.md` at COMMIT (default HEAD) of a clone of
https://github.com/ROCm/HIPIFY (nothing of it is copied but the CUDA names) and prints every
CUDA runtime, driver, RTC, cuBLAS, cuSPARSE, cuRAND, cuFFT, cuSOLVER and cuDNN name whose HIP
column is empty (no HIP equivalent) and that CUDA has not removed, leaving out the names that
the ROC and MIOpen tables (`*_supported_by_ROC.md`, `*_by_HIP_and_ROC.md`,
`*_by_MIOPEN.md`, `*_by_HIP_and_MIOPEN.md`) map to rocBLAS, rocSPARSE, rocRAND, rocSOLVER or
MIOpen. Device functions are left
to `cuda-intrinsic-missing-in-hip`, whose list the real compilers prove (tests/hip_lacks.rs).
"""
import re
import subprocess
import sys

TABLES = [
    ("runtime", "CUDA_Runtime_API_functions_supported_by_HIP"),
    ("driver", "CUDA_Driver_API_functions_supported_by_HIP"),
    ("nvrtc", "CUDA_RTC_API_supported_by_HIP"),
    ("cublas", "CUBLAS_API_supported_by_HIP"),
    ("cusparse", "CUSPARSE_API_supported_by_HIP"),
    ("curand", "CURAND_API_supported_by_HIP"),
    ("cufft", "CUFFT_API_supported_by_HIP"),
    ("cusolver", "CUSOLVER_API_supported_by_HIP"),
    ("cudnn", "CUDNN_API_supported_by_HIP"),
]
ROW = re.compile(r"^\|`([^`]+)`\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gd, commit = argv[1], (argv[2] if len(argv) > 2 else "HEAD")
    sha = subprocess.run(["git", "--git-dir", gd, "rev-parse", commit], capture_output=True,
                         text=True, check=True).stdout.strip()
    date = subprocess.run(["git", "--git-dir", gd, "show", "-s", "--format=%cs", sha],
                          capture_output=True, text=True, check=True).stdout.strip()
    # names some ROCm library maps (any mapping column filled) in any table
    listing = subprocess.run(["git", "--git-dir", gd, "ls-tree", "--name-only", sha, "docs/tables/"],
                             capture_output=True, text=True, check=True).stdout.split()
    mapped: set[str] = set()
    for path in listing:
        if not path.endswith(".md"):
            continue
        text = subprocess.run(["git", "--git-dir", gd, "show", f"{sha}:{path}"],
                              capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            cells = line.split("|")[1:-1]
            if len(cells) < 7 or not cells[0].startswith("`"):
                continue
            if any(c.strip().startswith("`") for c in cells[5:]):
                mapped.add(cells[0].strip().strip("`"))
    names: dict[str, tuple[str, str]] = {}
    for lib, table in TABLES:
        text = subprocess.run(["git", "--git-dir", gd, "show", f"{sha}:docs/tables/{table}.md"],
                              capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            m = ROW.match(line)
            if not m:
                continue
            name, added, _dep, _chg, removed, hip = (g.strip() for g in m.groups())
            if removed or hip or name in mapped or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                continue
            names.setdefault(name, (lib, added))
    print(f"# CUDA names with no HIP or ROCm-library equivalent in ROCm/HIPIFY's support tables at {sha} ({date}),")
    print("# derived by scripts/derive-cuda-api-without-hip.py; name<TAB>library<TAB>CUDA version that added it")
    for name in sorted(names):
        lib, added = names[name]
        print(f"{name}\t{lib}\t{added}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
