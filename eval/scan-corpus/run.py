#!/usr/bin/env python3
"""Measure `kplan scan` recall on real AMD portability fixes and precision on portable trees.

Reads cases.toml and precision.toml next to this script. Nothing third-party is kept in the
repository: every file is taken from the projects' public git history (bare mirrors under
--mirrors, one per repository, at MIRRORS/<owner>+<name>/repo or MIRRORS/<owner>+<name>) at
measurement time, into a temporary directory, at its real relative path.

Per case, the directory that holds the file is extracted as it was in the parent of the fix
commit (recursively when it is small, else its own files only), so headers next to the file
(a WARP_SIZE definition, a vendor shim) are seen. The tree is scanned with
`kplan scan --format json --targets ... --fail-on never`. A case is FOUND when a finding of
severity error or warning lies within --slack lines of one of the case's hazard lines, in the
case's file. The same directory at the fix commit is scanned too, and the result says whether
the findings that matched are still reported on the same source text (informational).

Per portable tree: findings by severity and rule, non-blank lines of the files kplan reads,
errors per 10,000 such lines, and every error with its source line, for a person to judge.

Standard library only (Python 3.11+). Exit status: 0 when the measurement ran (whatever the
figures), 2 on bad arguments or input files.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TARGETS = "gfx942,gfx90a,gfx1100,sm_90a,sm_80"
# The extensions kplan scan reads in a directory walk (docs/scan.md).
SCANNED_EXT = {
    ".cu",
    ".cuh",
    ".hip",
    ".h",
    ".hpp",
    ".cc",
    ".cpp",
    ".cxx",
    ".C",
    ".c++",
    ".inl",
    ".hh",
    ".hxx",
    ".py",
}
# A case directory is extracted recursively when it is at most this big, else flat.
MAX_RECURSIVE_FILES = 600
MAX_RECURSIVE_BYTES = 24 * 1024 * 1024
MAX_FILE_BYTES = 4 * 1024 * 1024
SPLITS = ("dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "holdout6", "holdout7", "holdout8")
# The splits that the hash rule in cases.toml assigns; holdout2 to holdout8 are fixed sets,
# never re-derived.
RULE_SPLITS = ("dev", "holdout")


class InputError(Exception):
    pass


def split_list(value: str) -> str:
    """`--split`: `all`, one split, or several joined by commas."""
    if value == "all":
        return value
    bad = [v for v in value.split(",") if v not in SPLITS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown split {', '.join(bad)} (choose from {', '.join(SPLITS)} or all)"
        )
    return value


# ---------------------------------------------------------------------------------------------
# input files


def load_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: not found")
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: {e}")


CASE_KEYS = {
    "id": str,
    "repo": str,
    "fix": str,
    "parent": str,
    "path": str,
    "lines": list,
    "class": str,
    "hazard": str,
    "split": str,
}
TREE_KEYS = {"id": str, "repo": str, "commit": str, "subdir": str, "note": str}


def check_table(kind: str, path: Path, i: int, t: dict, keys: dict) -> None:
    for k, ty in keys.items():
        if k not in t:
            raise InputError(f"{path}: {kind} #{i + 1}: missing key `{k}`")
        if not isinstance(t[k], ty):
            raise InputError(
                f"{path}: {kind} #{i + 1} ({t.get('id')}): `{k}` must be {ty.__name__}"
            )


def load_cases(path: Path) -> list[dict]:
    cases = load_toml(path).get("case", [])
    if not cases:
        raise InputError(f"{path}: no [[case]] tables")
    seen = set()
    for i, c in enumerate(cases):
        check_table("case", path, i, c, CASE_KEYS)
        if c["id"] in seen:
            raise InputError(f"{path}: duplicate case id `{c['id']}`")
        seen.add(c["id"])
        if c["split"] not in SPLITS:
            raise InputError(f"{path}: case `{c['id']}`: split must be one of {', '.join(SPLITS)}")
        if not c["lines"] or not all(isinstance(n, int) and n > 0 for n in c["lines"]):
            raise InputError(f"{path}: case `{c['id']}`: lines must be positive integers")
        if "/" not in c["repo"]:
            raise InputError(f"{path}: case `{c['id']}`: repo must be owner/name")
    return cases


def load_trees(path: Path) -> list[dict]:
    trees = load_toml(path).get("tree", [])
    for i, t in enumerate(trees):
        check_table("tree", path, i, t, TREE_KEYS)
    return trees


def expected_split(cases: list[dict]) -> dict[str, str]:
    """The split rule stated in cases.toml: per class with >= 4 cases, the round(n/4) cases
    with the smallest sha256(id) are holdout; smaller classes are all dev. Only the dev and
    holdout cases take part (and are returned): holdout2 to holdout8 are fixed sets outside
    the rule."""
    by_class = collections.defaultdict(list)
    for c in cases:
        if c["split"] in RULE_SPLITS:
            by_class[c["class"]].append(c["id"])
    out = {}
    for ids in by_class.values():
        ids = sorted(ids, key=lambda s: hashlib.sha256(s.encode()).hexdigest())
        k = round(len(ids) / 4) if len(ids) >= 4 else 0
        for j, cid in enumerate(ids):
            out[cid] = "holdout" if j < k else "dev"
    return out


# ---------------------------------------------------------------------------------------------
# git


def mirror_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+")
    for cand in (base / "repo", base):
        if (cand / "objects").is_dir() and (cand / "HEAD").exists():
            return cand
    return None


def git(gd: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", f"--git-dir={gd}", *args], capture_output=True, text=not binary, check=False
    )


def has_commit(gd: Path, sha: str) -> bool:
    return git(gd, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def list_blobs(gd: Path, commit: str, directory: str, recursive: bool) -> list[tuple[str, int]]:
    """(path, size) of the regular files under directory at commit (symlinks left out)."""
    args = ["ls-tree", "-l", "-z"]
    if recursive:
        args.append("-r")
    args.append(commit)
    if directory:
        args += ["--", directory.rstrip("/") + "/"]
    r = git(gd, *args)
    out = []
    for entry in r.stdout.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, typ, _sha, size = meta.split()
        if typ != "blob" or mode not in ("100644", "100755"):
            continue
        out.append((path, int(size) if size.isdigit() else 0))
    return out


def extract_blobs(gd: Path, commit: str, paths: list[str], dest: Path) -> None:
    if not paths:
        return
    req = "".join(f"{commit}:{p}\n" for p in paths).encode()
    r = subprocess.run(
        ["git", f"--git-dir={gd}", "cat-file", "--batch"],
        input=req,
        capture_output=True,
        check=False,
    )
    data = r.stdout
    pos = 0
    for p in paths:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        pos = nl + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        blob = data[pos : pos + size]
        pos += size + 1
        target = dest / p
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)


def extract_case_dir(gd: Path, commit: str, file_path: str, dest: Path) -> tuple[bool, str]:
    """Extract the directory that holds file_path at commit. Returns (file present, mode)."""
    directory = os.path.dirname(file_path)
    blobs = list_blobs(gd, commit, directory, recursive=True)
    mode = "recursive"
    code = [(p, s) for p, s in blobs if Path(p).suffix in SCANNED_EXT and s <= MAX_FILE_BYTES]
    if len(code) > MAX_RECURSIVE_FILES or sum(s for _, s in code) > MAX_RECURSIVE_BYTES:
        blobs = list_blobs(gd, commit, directory, recursive=False)
        code = [(p, s) for p, s in blobs if Path(p).suffix in SCANNED_EXT and s <= MAX_FILE_BYTES]
        mode = "flat"
    paths = {p for p, _ in code}
    present = any(p == file_path for p, _ in blobs)
    if present:
        paths.add(file_path)  # whatever its extension
    extract_blobs(gd, commit, sorted(paths), dest)
    return present, mode


def extract_tree(gd: Path, commit: str, subdir: str, dest: Path) -> int:
    """Extract the regular files of subdir at commit (git archive); returns files written."""
    r = git(gd, "archive", "--format=tar", commit, "--", subdir, binary=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode(errors="replace").strip())
    n = 0
    with tarfile.open(fileobj=io.BytesIO(r.stdout), mode="r:") as tar:
        for m in tar:
            if not m.isreg() or m.name.startswith("/") or ".." in Path(m.name).parts:
                continue
            target = dest / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            f = tar.extractfile(m)
            target.write_bytes(f.read() if f else b"")
            n += 1
    return n


# ---------------------------------------------------------------------------------------------
# kplan


def run_kplan(
    kplan: str, root: Path, scan_path: str, targets: str
) -> tuple[dict | None, str, float]:
    t0 = time.monotonic()
    r = subprocess.run(
        [kplan, "scan", "--format", "json", "--targets", targets, "--fail-on", "never", scan_path],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    dt = time.monotonic() - t0
    if r.returncode not in (0, 1):
        return None, f"kplan exit {r.returncode}: {r.stderr.strip()[:500]}", dt
    try:
        return json.loads(r.stdout), r.stderr, dt
    except json.JSONDecodeError as e:
        return None, f"kplan output is not JSON: {e}", dt


def norm(p: str) -> str:
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


def file_lines(path: Path) -> list[str]:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").split("\n")
    except OSError:
        return []


# ---------------------------------------------------------------------------------------------
# cases


def measure_case(case: dict, args) -> dict:
    res = {k: case[k] for k in ("id", "repo", "path", "class", "split", "lines", "hazard")}
    res["fix"], res["parent"] = case["fix"], case["parent"]
    gd = mirror_dir(args.mirrors, case["repo"])
    if gd is None:
        res["status"] = "skipped: mirror absent"
        return res
    for key in ("parent", "fix"):
        if not has_commit(gd, case[key]):
            res["status"] = f"skipped: {key} commit absent from mirror"
            return res
    with tempfile.TemporaryDirectory(prefix="kplan-case-") as tmp:
        tmp = Path(tmp)
        before_root, after_root = tmp / "before", tmp / "after"
        before_root.mkdir()
        after_root.mkdir()
        present, mode = extract_case_dir(gd, case["parent"], case["path"], before_root)
        if not present:
            res["status"] = "skipped: file absent at parent"
            return res
        after_present, _ = extract_case_dir(gd, case["fix"], case["path"], after_root)
        res["extracted"] = mode
        scan_dir = os.path.dirname(case["path"]) or "."
        rep, err, dt = run_kplan(args.kplan, before_root, scan_dir, args.targets)
        res["scan_seconds"] = round(dt, 3)
        if rep is None:
            res["status"] = f"error: {err}"
            return res
        target = norm(case["path"])
        in_file = [f for f in rep.get("findings", []) if norm(f["path"]) == target]
        src = file_lines(before_root / case["path"])
        want = set()
        for n in case["lines"]:
            want.update(range(n - args.slack, n + args.slack + 1))
        hits = [f for f in in_file if f["line"] in want and f["severity"] in ("error", "warning")]
        notes = [f for f in in_file if f["line"] in want and f["severity"] == "note"]
        res["status"] = "found" if hits else "missed"
        res["hits"] = [
            {"rule": f["rule"], "severity": f["severity"], "line": f["line"]} for f in hits
        ]
        res["notes_on_lines"] = sorted({f["rule"] for f in notes})
        res["findings_in_file"] = collections.Counter(
            f"{f['severity']}:{f['rule']}" for f in in_file
        )
        # After the fix: are the matched findings still reported on the same source text?
        if not hits:
            return res
        if not after_present:
            res["after"] = "file removed by the fix"
            return res
        rep2, err2, _ = run_kplan(args.kplan, after_root, scan_dir, args.targets)
        if rep2 is None:
            res["after"] = f"error: {err2}"
            return res
        src2 = file_lines(after_root / case["path"])
        after_f = [f for f in rep2.get("findings", []) if norm(f["path"]) == target]
        after_keys = {
            (f["rule"], src2[f["line"] - 1].strip() if 0 < f["line"] <= len(src2) else "")
            for f in after_f
        }
        persisting = []
        for f in hits:
            text = src[f["line"] - 1].strip() if 0 < f["line"] <= len(src) else ""
            if (f["rule"], text) in after_keys:
                persisting.append({"rule": f["rule"], "line": f["line"]})
        res["after"] = "still reported" if persisting else "gone"
        res["after_persisting"] = persisting
        res["after_findings_in_file"] = len(after_f)
    return res


# ---------------------------------------------------------------------------------------------
# precision trees


def count_lines(root: Path) -> tuple[int, int]:
    files = lines = 0
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            if Path(n).suffix in SCANNED_EXT:
                files += 1
                for ln in file_lines(Path(dirpath) / n):
                    if ln.strip():
                        lines += 1
    return files, lines


def measure_tree(tree: dict, args) -> dict:
    res = {k: tree[k] for k in ("id", "repo", "commit", "subdir")}
    gd = mirror_dir(args.mirrors, tree["repo"])
    if gd is None:
        res["status"] = "skipped: mirror absent"
        return res
    if not has_commit(gd, tree["commit"]):
        res["status"] = "skipped: commit absent from mirror"
        return res
    with tempfile.TemporaryDirectory(prefix="kplan-tree-") as tmp:
        tmp = Path(tmp)
        try:
            nfiles = extract_tree(gd, tree["commit"], tree["subdir"], tmp)
        except RuntimeError as e:
            res["status"] = f"error: git archive: {e}"
            return res
        if nfiles == 0:
            res["status"] = "skipped: subdir empty or absent"
            return res
        files, lines = count_lines(tmp / tree["subdir"])
        rep, err, dt = run_kplan(args.kplan, tmp, tree["subdir"], args.targets)
        if rep is None:
            res["status"] = f"error: {err}"
            return res
        findings = rep.get("findings", [])
        res["status"] = "measured"
        res["scan_seconds"] = round(dt, 3)
        res["files"] = files
        res["nonblank_lines"] = lines
        res["kplan_files_scanned"] = rep.get("files_scanned")
        res["kplan_lines_scanned"] = rep.get("lines_scanned")
        res["by_severity"] = dict(collections.Counter(f["severity"] for f in findings))
        res["by_rule"] = dict(
            sorted(collections.Counter(f"{f['severity']}:{f['rule']}" for f in findings).items())
        )
        nerr = res["by_severity"].get("error", 0)
        res["errors_per_10k_lines"] = round(nerr * 10000 / lines, 3) if lines else None
        errs = []
        cache: dict[str, list[str]] = {}
        for f in findings:
            if f["severity"] != "error":
                continue
            p = norm(f["path"])
            if p not in cache:
                cache[p] = file_lines(tmp / p)
            src = cache[p]
            text = src[f["line"] - 1].strip() if 0 < f["line"] <= len(src) else ""
            errs.append(
                {
                    "path": p,
                    "line": f["line"],
                    "rule": f["rule"],
                    "message": f["message"],
                    "source": text[:200],
                    "targets": f.get("targets", []),
                }
            )
        res["errors"] = errs
    return res


def check_extraction(case: dict, mirrors: Path) -> tuple[str, str]:
    """Extract a case's directory at the parent and at the fix commit, without scanning.
    Returns (status, detail): status is "ok", "skipped" (mirror or commit absent) or "bad"
    (file absent at the parent, or a hazard line past the end of the file)."""
    gd = mirror_dir(mirrors, case["repo"])
    if gd is None:
        return "skipped", "mirror absent"
    for key in ("parent", "fix"):
        if not has_commit(gd, case[key]):
            return "skipped", f"{key} commit absent from mirror"
    with tempfile.TemporaryDirectory(prefix="kplan-extract-") as tmp:
        tmp = Path(tmp)
        before, after = tmp / "before", tmp / "after"
        present, mode = extract_case_dir(gd, case["parent"], case["path"], before)
        if not present:
            return "bad", "file absent at parent"
        n = len(file_lines(before / case["path"]))
        past = [x for x in case["lines"] if x > n]
        if past:
            return "bad", f"hazard lines {past} past the end of the file ({n} lines)"
        after_present, _ = extract_case_dir(gd, case["fix"], case["path"], after)
        files = sum(1 for p in before.rglob("*") if p.is_file())
        return "ok", (
            f"{mode}, {files} files, {n} lines"
            + ("" if after_present else "; file removed by the fix")
        )


# ---------------------------------------------------------------------------------------------
# reporting


def recall_table(results: list[dict], split: str) -> dict:
    rows = [r for r in results if r["split"] == split]
    per = collections.defaultdict(lambda: {"found": 0, "measured": 0, "skipped": 0})
    for r in rows:
        d = per[r["class"]]
        if r["status"] in ("found", "missed"):
            d["measured"] += 1
            d["found"] += r["status"] == "found"
        else:
            d["skipped"] += 1
    tot = {
        "found": sum(d["found"] for d in per.values()),
        "measured": sum(d["measured"] for d in per.values()),
        "skipped": sum(d["skipped"] for d in per.values()),
    }
    tot["recall"] = round(tot["found"] / tot["measured"], 4) if tot["measured"] else None
    for d in per.values():
        d["recall"] = round(d["found"] / d["measured"], 4) if d["measured"] else None
    return {"overall": tot, "per_class": dict(sorted(per.items()))}


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def write_summary(
    out: Path,
    meta: dict,
    results: list[dict],
    recall: dict,
    trees: list[dict],
    reveal_holdout: bool,
) -> None:
    L = []
    L.append("# kplan scan evaluation")
    L.append("")
    L.append(f"- date (UTC): {meta['date']}")
    L.append(f"- kplan: `{meta['kplan']}` (sha256 {meta['kplan_sha256'][:16]}...)")
    L.append(
        f"- targets: `{meta['targets']}`; a case is found by an error or warning within "
        f"+-{meta['slack']} lines of a hazard line"
    )
    L.append(f"- command: `{meta['command']}`")
    L.append(f"- machine: {meta['machine']}")
    L.append("")
    if recall:
        L.append("## Recall")
        L.append("")
        L.append("| split | found | measured | recall | skipped |")
        L.append("|---|---|---|---|---|")
        for s, t in recall.items():
            o = t["overall"]
            L.append(
                f"| {s} | {o['found']} | {o['measured']} | {pct(o['recall'])} | {o['skipped']} |"
            )
        L.append("")
        classes = sorted({c for t in recall.values() for c in t["per_class"]})
        L.append("| class | " + " | ".join(f"{s} found/measured" for s in recall) + " |")
        L.append("|---|" + "---|" * len(recall))
        for c in classes:
            cells = []
            for s in recall:
                d = recall[s]["per_class"].get(c)
                cells.append(
                    "-"
                    if d is None
                    else f"{d['found']}/{d['measured']}"
                    + (f" (+{d['skipped']} skipped)" if d["skipped"] else "")
                )
            L.append(f"| {c} | " + " | ".join(cells) + " |")
        L.append("")
        shown = [r for r in results if reveal_holdout or r["split"] == "dev"]
        L.append(
            "## Cases"
            + (
                ""
                if reveal_holdout
                else " (dev split; the holdout cases are counted above only)"
            )
        )
        L.append("")
        L.append("| id | class | status | rules on the hazard lines | after the fix |")
        L.append("|---|---|---|---|---|")
        for r in sorted(shown, key=lambda r: (r["class"], r["id"])):
            rules = ", ".join(sorted({f"{h['rule']} ({h['severity']})" for h in r.get("hits", [])}))
            if not rules and r.get("notes_on_lines"):
                rules = "notes only: " + ", ".join(r["notes_on_lines"])
            L.append(
                f"| {r['id']} | {r['class']} | {r['status']} | {rules} | {r.get('after', '')} |"
            )
        L.append("")
    if trees:
        L.append("## Precision on portable trees")
        L.append("")
        L.append(
            "| tree | commit | files | non-blank lines | errors | warnings | notes | errors / 10k lines | seconds |"
        )
        L.append("|---|---|---|---|---|---|---|---|---|")
        for t in trees:
            if t["status"] != "measured":
                L.append(
                    f"| {t['id']} ({t['repo']} `{t['subdir']}`) | {t['commit'][:10]} | {t['status']} | | | | | | |"
                )
                continue
            s = t["by_severity"]
            L.append(
                f"| {t['id']} ({t['repo']} `{t['subdir']}`) | {t['commit'][:10]} | {t['files']} | {t['nonblank_lines']} | "
                f"{s.get('error', 0)} | {s.get('warning', 0)} | {s.get('note', 0)} | {t['errors_per_10k_lines']} | {t['scan_seconds']} |"
            )
        m = [t for t in trees if t["status"] == "measured"]
        if m:
            e = sum(t["by_severity"].get("error", 0) for t in m)
            n = sum(t["nonblank_lines"] for t in m)
            L.append(
                f"| all | | {sum(t['files'] for t in m)} | {n} | {e} | "
                f"{sum(t['by_severity'].get('warning', 0) for t in m)} | "
                f"{sum(t['by_severity'].get('note', 0) for t in m)} | "
                f"{round(e * 10000 / n, 3) if n else 'n/a'} | |"
            )
        L.append("")
        L.append("Findings by rule:")
        L.append("")
        for t in m:
            L.append(f"- {t['id']}: " + ", ".join(f"{k} {v}" for k, v in t["by_rule"].items()))
        L.append("")
        L.append("Every error is listed in `precision-errors.md` for a person to judge.")
        L.append("")
    (out / "summary.md").write_text("\n".join(L))


def write_errors(out: Path, trees: list[dict]) -> None:
    L = [
        "# Errors reported on the portable trees",
        "",
        "One row per error; `verdict` is left for the reader (true / false).",
        "",
    ]
    for t in trees:
        if t["status"] != "measured":
            continue
        L.append(
            f"## {t['id']} ({t['repo']} {t['commit'][:10]} `{t['subdir']}`): {len(t['errors'])} errors"
        )
        L.append("")
        if t["errors"]:
            L.append("| location | rule | source | verdict |")
            L.append("|---|---|---|---|")
            for e in t["errors"]:
                src = e["source"].replace("|", "\\|").replace("`", "'")
                L.append(f"| {e['path']}:{e['line']} | {e['rule']} | `{src}` | |")
            L.append("")
    (out / "precision-errors.md").write_text("\n".join(L))


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kplan", help="path to the kplan binary")
    ap.add_argument(
        "--mirrors",
        type=Path,
        default=Path("/work/.mirror"),
        help="directory of bare git mirrors, <owner>+<name>[/repo] (default /work/.mirror)",
    )
    ap.add_argument(
        "--split",
        type=split_list,
        default="all",
        help="cases to run: a split, several joined by commas, or all (default; each split is "
        "reported separately)",
    )
    ap.add_argument(
        "--out", type=Path, help="output directory (results.json, summary.md, precision-errors.md)"
    )
    ap.add_argument("--targets", default=DEFAULT_TARGETS)
    ap.add_argument(
        "--slack", type=int, default=2, help="lines of slack around a hazard line (default 2)"
    )
    ap.add_argument("--cases", type=Path, default=HERE / "cases.toml")
    ap.add_argument("--precision", type=Path, default=HERE / "precision.toml")
    ap.add_argument("--no-precision", action="store_true", help="skip the portable trees")
    ap.add_argument("--no-recall", action="store_true", help="skip the fix-commit cases")
    ap.add_argument("--only", help="comma-separated case ids to run")
    ap.add_argument(
        "--reveal-holdout",
        action="store_true",
        help="list holdout and holdout2 to holdout8 cases one by one in summary.md "
        "(default: counts only)",
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument(
        "--fetch-list",
        action="store_true",
        help="print the owner/name of every repository the corpus needs, and exit",
    )
    ap.add_argument(
        "--check-split",
        action="store_true",
        help="check that every dev/holdout case's split follows the rule in cases.toml "
        "(holdout2 to holdout8 are fixed sets and are left alone), and exit",
    )
    ap.add_argument(
        "--extract-only",
        action="store_true",
        help="extract every selected case at its parent and fix commits, check that the file "
        "is there and the hazard lines lie within it, and exit; kplan is not run",
    )
    args = ap.parse_args(argv)

    try:
        cases = load_cases(args.cases)
        trees = load_trees(args.precision)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    if args.fetch_list:
        for r in sorted({c["repo"] for c in cases} | {t["repo"] for t in trees}, key=str.lower):
            print(r)
        return 0
    if args.check_split:
        exp = expected_split(cases)
        bad = [c["id"] for c in cases if c["id"] in exp and exp[c["id"]] != c["split"]]
        for cid in bad:
            print(f"{args.cases}: case `{cid}`: split should be {exp[cid]}", file=sys.stderr)
        n = collections.Counter(c["split"] for c in cases)
        print(
            f"{len(cases)} cases: {n['dev']} dev, {n['holdout']} holdout, "
            f"{n['holdout2']} holdout2, {n['holdout3']} holdout3, {n['holdout4']} holdout4, "
            f"{n['holdout5']} holdout5, {n['holdout6']} holdout6, {n['holdout7']} holdout7 and {n['holdout8']} holdout8 "
            "(fixed, not checked); "
            f"{'split follows the rule' if not bad else f'{len(bad)} do not follow the rule'}"
        )
        return 1 if bad else 0

    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {c["id"] for c in cases}
        if unknown:
            print(f"error: --only: unknown case ids: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c["id"] in wanted]
    if args.split != "all":
        cases = [c for c in cases if c["split"] in args.split.split(",")]
    if args.extract_only:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            checked = list(ex.map(lambda c: check_extraction(c, args.mirrors), cases))
        counts = collections.Counter(st for st, _ in checked)
        for c, (st, detail) in zip(cases, checked):
            if st != "ok":
                print(f"{c['id']} ({c['split']}): {st}: {detail}", file=sys.stderr)
        by_split = collections.Counter(c["split"] for c in cases)
        print(
            f"{len(cases)} cases ("
            + ", ".join(f"{by_split[s]} {s}" for s in SPLITS if by_split[s])
            + f"): {counts['ok']} extracted, {counts['skipped']} skipped, {counts['bad']} bad"
        )
        return 1 if counts["bad"] else 0

    if not args.kplan or not args.out:
        print(
            "error: --kplan and --out are required "
            "(unless --fetch-list, --check-split or --extract-only)",
            file=sys.stderr,
        )
        return 2
    kplan = shutil.which(args.kplan) or args.kplan
    if not os.path.isfile(kplan) or not os.access(kplan, os.X_OK):
        print(f"error: --kplan {args.kplan}: not an executable file", file=sys.stderr)
        return 2
    args.kplan = os.path.abspath(kplan)
    args.out.mkdir(parents=True, exist_ok=True)

    t0 = time.monotonic()
    results: list[dict] = []
    if not args.no_recall:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            results = list(ex.map(lambda c: measure_case(c, args), cases))
    tree_res: list[dict] = []
    if not args.no_precision:
        tree_res = [measure_tree(t, args) for t in trees]

    splits = [s for s in SPLITS if args.split == "all" or s in args.split.split(",")]
    recall = {s: recall_table(results, s) for s in splits} if results else {}
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "kplan": args.kplan,
        "kplan_sha256": hashlib.sha256(Path(args.kplan).read_bytes()).hexdigest(),
        "targets": args.targets,
        "slack": args.slack,
        "split": args.split,
        "command": "python3 eval/scan-corpus/run.py " + " ".join(argv),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "seconds": round(time.monotonic() - t0, 1),
    }
    shown = results if args.reveal_holdout else [r for r in results if r["split"] == "dev"]
    doc = {
        "meta": meta,
        "recall": recall,
        "cases": shown,
        "holdout_cases_listed": bool(args.reveal_holdout),
        "precision": tree_res,
    }
    (args.out / "results.json").write_text(json.dumps(doc, indent=1, default=dict) + "\n")
    write_summary(args.out, meta, results, recall, tree_res, args.reveal_holdout)
    if tree_res:
        write_errors(args.out, tree_res)
    for s, t in recall.items():
        o = t["overall"]
        print(
            f"recall {s}: {o['found']}/{o['measured']} = {pct(o['recall'])} (skipped {o['skipped']})"
        )
    for t in tree_res:
        if t["status"] == "measured":
            print(
                f"precision {t['id']}: {t['by_severity'].get('error', 0)} errors, "
                f"{t['errors_per_10k_lines']} per 10k lines ({t['nonblank_lines']} lines)"
            )
        else:
            print(f"precision {t['id']}: {t['status']}")
    skipped = [r for r in results if r["status"].startswith(("skipped", "error"))]
    for r in skipped:
        print(f"  {r['id']}: {r['status']}", file=sys.stderr)
    print(
        f"wrote {args.out}/summary.md, results.json" + (", precision-errors.md" if tree_res else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
