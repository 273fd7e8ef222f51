#!/usr/bin/env python3
"""Keeps a SARIF file within GitHub code scanning's upload limits, in place: at most 25,000
results per run (the most severe kept: error, then warning, then note, in file order) and at
most 10 MB once gzipped (results dropped from the end until it fits). Says on stderr what it
dropped. Used by action.yml.

usage: sarif_limits.py FILE.sarif [--max-results N] [--max-gzip-bytes N]
"""

import argparse
import gzip
import json
import sys

MAX_RESULTS = 25_000
MAX_GZIP_BYTES = 10 * 1024 * 1024
RANK = {"error": 0, "warning": 1, "note": 2, "none": 3}


def gz_size(doc):
    return len(gzip.compress(json.dumps(doc, separators=(",", ":")).encode("utf-8")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sarif")
    ap.add_argument("--max-results", type=int, default=MAX_RESULTS)
    ap.add_argument("--max-gzip-bytes", type=int, default=MAX_GZIP_BYTES)
    a = ap.parse_args()
    with open(a.sarif, encoding="utf-8") as f:
        doc = json.load(f)
    dropped = 0
    for run in doc.get("runs", []):
        results = run.get("results", [])
        if len(results) > a.max_results:
            order = sorted(
                range(len(results)),
                key=lambda i: (RANK.get(results[i].get("level", "warning"), 1), i),
            )
            keep = sorted(order[: a.max_results])
            dropped += len(results) - len(keep)
            run["results"] = [results[i] for i in keep]
    # gzip size: halve the dropped tail until it fits, then grow back by bisection
    size = gz_size(doc)
    if size > a.max_gzip_bytes:
        runs = doc.get("runs", [])
        all_results = [(r, res) for r in runs for res in r.get("results", [])]
        lo, hi = 0, len(all_results)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            for r in runs:
                r["results"] = []
            for r, res in all_results[:mid]:
                r["results"].append(res)
            if gz_size(doc) <= a.max_gzip_bytes:
                lo = mid
            else:
                hi = mid - 1
        for r in runs:
            r["results"] = []
        for r, res in all_results[:lo]:
            r["results"].append(res)
        dropped += len(all_results) - lo
        size = gz_size(doc)
    if dropped:
        with open(a.sarif, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(
            f"sarif_limits: dropped {dropped} results to stay within GitHub's limits "
            f"({a.max_results} results per run, {a.max_gzip_bytes} bytes gzipped); "
            f"kept {sum(len(r.get('results', [])) for r in doc.get('runs', []))}, {size} bytes gzipped",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
