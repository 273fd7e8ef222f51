#!/usr/bin/env python3
"""Run `kplan plan` over the spec suite and score the plans against expect.toml.

    python3 eval/specs/run.py --kplan target/release/kplan --split dev [--out DIR]

Splits: dev, holdout, holdout2 to holdout8 (the directories next to this
file), or all.

For every spec of the split it runs `kplan plan SPEC --format json -o TMP/x.json` and reports:
- accepted or rejected (exit code and the first error line);
- verdict match: the plan's verdict (`custom-kernel` counts as `write-kernel`) is one of the
  spec's expected verdicts;
- libraries: the fraction of expected libraries (any alternative of "A|B") named anywhere in
  the plan JSON, leaving out what names libraries whatever the op: the echo of the spec
  (`kernel`, `verdict.inputs`, `strategy.inputs`), `sources`, `header`, the efficiency
  table's citation text, and the alternatives that were not chosen;
- risk topics: the fraction of expected topics (any keyword of "a|b") found in the risk
  register entries (id, title, mitigation, fallback, evidence), case-insensitive, each keyword
  matched at the start of a word;
- the risk-id distribution: the share of the most common risk id among all risk entries;
- for a rejected spec, every blocker behind the first error (unless --no-peel): on a temporary
  copy, what the error points at is removed (a key, an array element; a dtype becomes fp32; an
  unknown op becomes `custom`), and the spec is planned again, until it plans or nothing more
  can be removed. The spec files are never changed. The plans of these peeled specs are scored
  too, in a separate table: what kplan makes of the part of the intent it understands.

Rejected specs score 0 on verdict, libraries and risks in the "of all" figures; the
"of accepted" figures look at accepted specs only. Writes results.json and summary.md to --out
(default: a new temporary directory, printed at the end), and every plan under plans/<split>/
(NAME.json as planned, NAME.peeled.json with the blockers removed). Standard library only (Python 3.11+).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLITS = ("dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "holdout6", "holdout7", "holdout8")
VERDICT_ALIASES = {"custom-kernel": "write-kernel"}


def keyword_re(alt: str) -> re.Pattern[str]:
    """A keyword that must start a word (so `tie` does not match `properties`)."""
    return re.compile(r"(?<![a-z0-9])" + re.escape(alt.lower()))


def library_re(alt: str) -> re.Pattern[str]:
    """A library name that must stand as a whole word (so `CK` does not match `check`)."""
    return re.compile(r"(?<![a-z0-9])" + re.escape(alt.lower()) + r"(?![a-z0-9])")


def any_match(topic: str, text: str, make) -> bool:
    return any(make(alt.strip()).search(text) for alt in topic.split("|") if alt.strip())


def first_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else ""


def normalise_reason(line: str) -> str:
    """Group rejection messages: drop the file:line:col prefix, name values as `_`."""
    msg = re.sub(r"^.*?:\d+:\d+:\s*", "", line)
    msg = re.sub(r"^error:\s*", "", msg)
    msg = re.sub(r"\(did you mean[^)]*\)", "", msg)
    msg = re.sub(r"`[^`]*`", "`_`", msg)
    msg = re.split(r", expected|; expected| \(", msg)[0]
    return msg.strip()


def risk_text(risk: dict) -> str:
    parts = [risk.get("id") or "", risk.get("title") or "", risk.get("mitigation") or ""]
    fallback = risk.get("fallback")
    if fallback is not None:
        parts.append(fallback if isinstance(fallback, str) else json.dumps(fallback))
    parts.extend(str(e) for e in risk.get("evidence") or [])
    return "\n".join(parts).lower()


def library_text(plan: dict) -> str:
    """The plan text libraries are looked for in: everything but the echo of the spec
    (`kernel`, `verdict.inputs`), the bibliography (`sources`), the generated header text, the
    efficiency table's citation text (`performance[].efficiency.basis`), the kernel's own name,
    and the alternatives that were not chosen (the alternatives table names every abstraction level, CUTLASS
    included, for every op)."""
    body = {k: v for k, v in plan.items() if k not in ("kernel", "sources", "header")}
    name = str((plan.get("kernel") or {}).get("name") or "")
    verdict = dict(body.get("verdict") or {})
    verdict.pop("inputs", None)
    body["verdict"] = verdict
    strategy = dict(body.get("strategy") or {})
    strategy["alternatives"] = [a for a in strategy.get("alternatives") or []
                                if isinstance(a, dict) and a.get("outcome") == "chosen"]
    strategy.pop("inputs", None)
    body["strategy"] = strategy
    perf = []
    for p in body.get("performance") or []:
        p = dict(p) if isinstance(p, dict) else p
        if isinstance(p, dict) and isinstance(p.get("efficiency"), dict):
            p["efficiency"] = {k: v for k, v in p["efficiency"].items() if k != "basis"}
        perf.append(p)
    body["performance"] = perf
    text = json.dumps(body, ensure_ascii=False).lower()
    # the kernel's own name (in CI commands, file paths) is not a library being named
    return text.replace(name.lower(), " ") if name else text


def run_spec(kplan: str, spec: Path, tmp: Path, timeout: int) -> dict:
    out = tmp / (spec.stem + ".json")
    try:
        proc = subprocess.run(
            [kplan, "plan", str(spec), "--format", "json", "-o", str(out)],
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": f"timeout after {timeout}s", "plan": None}
    plan = None
    if proc.returncode == 0 and out.exists():
        try:
            plan = json.loads(out.read_text())
        except json.JSONDecodeError as e:
            return {"exit": proc.returncode, "error": f"plan is not JSON: {e}", "plan": None}
    err = "" if plan is not None else first_error_line(proc.stderr) or f"exit {proc.returncode}"
    try:
        err = err.replace(str(spec), str(spec.relative_to(HERE)))
    except ValueError:
        pass
    return {"exit": proc.returncode, "error": err, "plan": plan}


ERR_RE = re.compile(r"^(?P<path>.*?):(?P<line>\d+):(?P<col>\d+):\s*error:\s*(?P<msg>.*)$")


def blocker_of(line: str) -> tuple[str, str]:
    """(kind, value) of a rejection: `unknown field`, `latency_us`; the value carries kplan's
    "did you mean" hint when it gave one: `int32 (did you mean int8?)`."""
    msg = ERR_RE.match(line)
    text = msg.group("msg") if msg else line
    kind = normalise_reason(line)
    kind = re.sub(r"\s*`_`.*$", "", kind) or kind
    value = re.search(r"`([^`]*)`", text)
    value = value.group(1) if value else ""
    hint = re.search(r"did you mean `([^`]*)`", text)
    if hint:
        value += f" (did you mean {hint.group(1)}?)"
    return kind, value


def peel_once(src: str, line: str) -> str | None:
    """Remove what the error points at, so the next run shows the next blocker. Returns the
    edited spec, or None when the error cannot be located or removed."""
    m = ERR_RE.match(line)
    if not m:
        return None
    lines = src.split("\n")
    ln, col = int(m.group("line")) - 1, int(m.group("col")) - 1
    if not 0 <= ln < len(lines) or not 0 <= col <= len(lines[ln]):
        return None
    text = lines[ln]
    if m.group("msg").startswith("unknown op"):
        out = []
        for t in lines:
            if re.match(r"\s*op\s*=", t):
                t = 'op = "custom"'
            elif re.match(r"\s*problem\s*=", t):
                t = "problem = { flops = 1e9, bytes = 1e9 }"
            out.append(t)
        return "\n".join(out)
    rest = text[col:]
    if rest.startswith('"'):
        end = rest.find('"', 1)
        if end < 0:
            return None
        if re.match(r"\s*dtypes\s*=", text):
            # keep the positions (storage, compute, output) of the other dtypes
            lines[ln] = text[:col] + '"fp32"' + rest[end + 1:]
        else:
            after = rest[end + 1:]
            after = re.sub(r"^\s*,\s*", "", after)
            before = text[:col]
            if not after.lstrip().startswith("]") or not re.search(r",\s*$", before):
                lines[ln] = before + after
            else:
                lines[ln] = re.sub(r",\s*$", "", before) + after
        return "\n".join(lines)
    key = re.match(r"[A-Za-z0-9_\-]+", rest)
    if not key:
        return None
    if not text[:col].strip():
        del lines[ln]
        return "\n".join(lines)
    pair = re.compile(r"\s*" + re.escape(key.group(0)) + r'\s*=\s*("[^"]*"|[^,}]+)\s*,?')
    pm = pair.match(text, col)
    if not pm:
        return None
    before, after = text[:col], text[pm.end():]
    if after.lstrip().startswith("}"):
        before = re.sub(r",\s*$", " ", before)
    lines[ln] = before + after
    return "\n".join(lines)


def peel(kplan: str, spec: Path, first_error: str, tmp: Path, timeout: int,
         limit: int = 20) -> dict:
    """Every blocker of a rejected spec, one run per blocker, on a temporary copy."""
    src = spec.read_text()
    blockers, err = [], first_error
    work = tmp / f"peel-{spec.stem}.toml"
    for _ in range(limit):
        blockers.append(blocker_of(err))
        edited = peel_once(src, err)
        if edited is None or edited == src:
            return {"blockers": blockers, "accepted_after_peel": False, "stuck_on": err}
        src = edited
        work.write_text(src)
        res = run_spec(kplan, work, tmp, timeout)
        if res["plan"] is not None:
            return {"blockers": blockers, "accepted_after_peel": True, "stuck_on": None,
                    "peeled_result": res}
        err = res["error"].replace(str(work), f"{spec.parent.name}/{spec.name} (peeled)")
    return {"blockers": blockers, "accepted_after_peel": False, "stuck_on": err}


def score(name: str, split: str, exp: dict, res: dict) -> dict:
    plan = res["plan"]
    libs = [(backend, lib) for backend, names in (exp.get("libraries") or {}).items()
            for lib in names]
    topics = exp.get("risks") or []
    row = {
        "spec": f"{split}/{name}.toml", "split": split, "name": name,
        "op_class": exp.get("op_class", "?"), "accepted": plan is not None,
        "exit": res["exit"], "error": res["error"],
        "expected_verdict": exp.get("verdict", []),
        "verdict": None, "verdict_ok": False,
        "libraries_expected": [f"{b}:{lib}" for b, lib in libs], "libraries_named": [],
        "risks_expected": topics, "risks_matched": [], "risk_ids": [],
    }
    if plan is None:
        return row
    decision = (plan.get("verdict") or {}).get("decision")
    row["verdict"] = decision
    row["verdict_ok"] = VERDICT_ALIASES.get(decision, decision) in exp.get("verdict", [])
    text = library_text(plan)
    row["libraries_named"] = [f"{b}:{lib}" for b, lib in libs if any_match(lib, text, library_re)]
    risks = plan.get("risks") or []
    rtext = "\n\n".join(risk_text(r) for r in risks)
    row["risks_matched"] = [t for t in topics if any_match(t, rtext, keyword_re)]
    row["risk_ids"] = [r.get("id", "?") for r in risks]
    return row


PEELED_KEYS = ("accepted", "verdict_match", "verdict_match_of_accepted", "libraries_named",
               "libraries_of_accepted", "risk_topics_matched", "risk_topics_of_accepted",
               "risk_entries", "risk_ids_distinct", "top_risk_id", "top_risk_id_share",
               "risk_ids_top10", "verdicts")


def frac(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def aggregate(rows: list[dict]) -> dict:
    acc = [r for r in rows if r["accepted"]]
    lib_exp = sum(len(r["libraries_expected"]) for r in rows)
    lib_exp_acc = sum(len(r["libraries_expected"]) for r in acc)
    lib_hit = sum(len(r["libraries_named"]) for r in rows)
    risk_exp = sum(len(r["risks_expected"]) for r in rows)
    risk_exp_acc = sum(len(r["risks_expected"]) for r in acc)
    risk_hit = sum(len(r["risks_matched"]) for r in rows)
    ids = collections.Counter(i for r in acc for i in r["risk_ids"])
    total_ids = sum(ids.values())
    top = ids.most_common(1)[0] if ids else (None, 0)
    reasons = collections.Counter(normalise_reason(r["error"]) for r in rows if not r["accepted"])
    verdicts = collections.Counter(r["verdict"] for r in acc)
    blockers: dict[str, collections.Counter] = {}
    for r in rows:
        for kind, value in r.get("blockers") or []:
            blockers.setdefault(kind, collections.Counter())[value] += 1
    return {
        "specs": len(rows),
        "accepted": len(acc),
        "rejected": len(rows) - len(acc),
        "accepted_fraction": frac(len(acc), len(rows)),
        "verdict_match": sum(r["verdict_ok"] for r in rows),
        "verdict_match_of_all": frac(sum(r["verdict_ok"] for r in rows), len(rows)),
        "verdict_match_of_accepted": frac(sum(r["verdict_ok"] for r in acc), len(acc)),
        # what a planner that always answers write-kernel would score
        "verdict_always_write_kernel": frac(
            sum("write-kernel" in r["expected_verdict"] for r in rows), len(rows)),
        "libraries_expected": lib_exp,
        "libraries_named": lib_hit,
        "libraries_of_all": frac(lib_hit, lib_exp),
        "libraries_of_accepted": frac(lib_hit, lib_exp_acc),
        "risk_topics_expected": risk_exp,
        "risk_topics_matched": risk_hit,
        "risk_topics_of_all": frac(risk_hit, risk_exp),
        "risk_topics_of_accepted": frac(risk_hit, risk_exp_acc),
        "risk_entries": total_ids,
        "risk_ids_distinct": len(ids),
        "top_risk_id": top[0],
        "top_risk_id_share": frac(top[1], total_ids),
        "risk_ids_top10": ids.most_common(10),
        "verdicts": dict(verdicts),
        "rejection_reasons": reasons.most_common(),
        "blockers_total": sum(sum(c.values()) for c in blockers.values()),
        "blockers_by_kind": {k: c.most_common() for k, c in
                             sorted(blockers.items(), key=lambda kv: -sum(kv[1].values()))},
        "accepted_after_peel": sum(1 for r in rows if r.get("accepted_after_peel")),
        "stuck_after_peel": [r["stuck_on"] for r in rows if r.get("stuck_on")],
        "by_op_class": {
            c: {"specs": sum(1 for r in rows if r["op_class"] == c),
                "accepted": sum(1 for r in acc if r["op_class"] == c)}
            for c in sorted({r["op_class"] for r in rows})
        },
    }


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def markdown(meta: dict, aggs: dict, rows: list[dict], detail: set[str]) -> str:
    out = ["# kplan spec suite results", ""]
    out += [f"- {k}: {v}" for k, v in meta.items()]
    out.append("")
    out += ["| metric | " + " | ".join(aggs) + " |", "|---|" + "---|" * len(aggs)]

    def line(label, f):
        out.append(f"| {label} | " + " | ".join(f(a) for a in aggs.values()) + " |")

    line("specs", lambda a: str(a["specs"]))
    line("accepted", lambda a: f"{a['accepted']} ({pct(a['accepted_fraction'])})")
    line("verdict match (of all)", lambda a: f"{a['verdict_match']} ({pct(a['verdict_match_of_all'])})")
    line("verdict match (of accepted)", lambda a: pct(a["verdict_match_of_accepted"]))
    line("verdict match if always write-kernel", lambda a: pct(a["verdict_always_write_kernel"]))
    line("libraries named (of all)",
         lambda a: f"{a['libraries_named']}/{a['libraries_expected']} ({pct(a['libraries_of_all'])})")
    line("libraries named (of accepted)", lambda a: pct(a["libraries_of_accepted"]))
    line("risk topics matched (of all)",
         lambda a: f"{a['risk_topics_matched']}/{a['risk_topics_expected']} "
                   f"({pct(a['risk_topics_of_all'])})")
    line("risk topics matched (of accepted)", lambda a: pct(a["risk_topics_of_accepted"]))
    line("risk entries / distinct ids", lambda a: f"{a['risk_entries']} / {a['risk_ids_distinct']}")
    line("most common risk id (share)",
         lambda a: f"`{a['top_risk_id']}` ({pct(a['top_risk_id_share'])})" if a["top_risk_id"]
         else "n/a")
    if all("peeled" in a for a in aggs.values()):
        out += ["", "The same specs with their blockers removed (what kplan plans from the part of",
                "the intent it understands; accepted specs as they are):", "",
                "| metric | " + " | ".join(aggs) + " |", "|---|" + "---|" * len(aggs)]
        line("planned", lambda a: str(a["peeled"]["accepted"]))
        line("verdict match", lambda a: f"{a['peeled']['verdict_match']} "
             f"({pct(a['peeled']['verdict_match_of_accepted'])})")
        line("libraries named", lambda a: f"{a['peeled']['libraries_named']}/"
             f"{a['libraries_expected']} ({pct(a['peeled']['libraries_of_accepted'])})")
        line("risk topics matched", lambda a: f"{a['peeled']['risk_topics_matched']}/"
             f"{a['risk_topics_expected']} ({pct(a['peeled']['risk_topics_of_accepted'])})")
        line("risk entries / distinct ids",
             lambda a: f"{a['peeled']['risk_entries']} / {a['peeled']['risk_ids_distinct']}")
        line("most common risk id (share)",
             lambda a: f"`{a['peeled']['top_risk_id']}` ({pct(a['peeled']['top_risk_id_share'])})"
             if a["peeled"]["top_risk_id"] else "n/a")
        line("top 5 risk ids", lambda a: ", ".join(
            f"`{i}` {n}" for i, n in a["peeled"]["risk_ids_top10"][:5]))
        line("verdicts", lambda a: ", ".join(
            f"{v} {n}" for v, n in sorted(a["peeled"]["verdicts"].items(), key=lambda x: -x[1])))
    out.append("")
    for split, a in aggs.items():
        if split not in detail:
            continue
        out += [f"## {split}", "", "Rejection reasons:", ""]
        out += [f"- {n} x {reason}" for reason, n in a["rejection_reasons"]] or ["- none"]
        if a["blockers_total"]:
            out += ["", f"Every blocker behind the rejections ({a['blockers_total']} in all; "
                    f"{a['accepted_after_peel']} rejected specs plan once theirs are removed):",
                    ""]
            for kind, values in a["blockers_by_kind"].items():
                n = sum(c for _, c in values)
                out.append(f"- {n} x {kind}: " + ", ".join(
                    f"`{v}` {c}" if v else str(c) for v, c in values))
            for stuck in a["stuck_after_peel"]:
                out.append(f"- could not remove: {stuck}")
        out += ["", "Risk ids (top 10): " + ", ".join(f"`{i}` {n}" for i, n in a["risk_ids_top10"]),
                "", "| spec | class | accepted | verdict | libraries | risks | first error |",
                "|---|---|---|---|---|---|---|"]
        for r in rows:
            if r["split"] != split:
                continue
            verdict = "-" if r["verdict"] is None else (
                f"{r['verdict']} {'ok' if r['verdict_ok'] else 'x'}")
            err = r["error"].replace("|", "\\|")
            if len(err) > 160:
                err = err[:157] + "..."
            out.append(
                f"| {r['name']} | {r['op_class']} | {'yes' if r['accepted'] else 'no'} | "
                f"{verdict} | {len(r['libraries_named'])}/{len(r['libraries_expected'])} | "
                f"{len(r['risks_matched'])}/{len(r['risks_expected'])} | {err} |")
        out.append("")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kplan", required=True, help="path to the kplan binary")
    ap.add_argument("--split", choices=(*SPLITS, "all"), default="dev",
                    help="one split, or all of them (each reported in its own column, plus all)")
    ap.add_argument("--out", help="directory for results.json and summary.md")
    ap.add_argument("--expect", default=str(HERE / "expect.toml"))
    ap.add_argument("--timeout", type=int, default=60, help="seconds per spec")
    ap.add_argument("--no-peel", action="store_true",
                    help="do not look for the blockers behind a rejected spec's first error")
    ap.add_argument("--detail", default="dev",
                    help="comma-separated splits whose per-spec table goes into summary.md")
    args = ap.parse_args()

    kplan = os.path.abspath(args.kplan)
    if not os.access(kplan, os.X_OK):
        print(f"error: {args.kplan} is not an executable kplan binary", file=sys.stderr)
        return 2
    try:
        expect = tomllib.loads(Path(args.expect).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        print(f"error: {args.expect}: {e}", file=sys.stderr)
        return 2
    splits = SPLITS if args.split == "all" else (args.split,)
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kplan-specs-"))
    out_dir.mkdir(parents=True, exist_ok=True)

    rows: list[dict] = []
    # the plan of each spec with its blockers removed (the original when it was accepted)
    peeled_rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="kplan-plans-") as tmp:
        for split in splits:
            specs = sorted((HERE / split).glob("*.toml"))
            missing = {s.stem for s in specs} - set(expect.get(split, {}))
            if missing:
                print(f"error: {args.expect}: no entry for {split}: {sorted(missing)}",
                      file=sys.stderr)
                return 2
            for spec in specs:
                res = run_spec(kplan, spec, Path(tmp), args.timeout)
                plans = out_dir / "plans" / split
                plans.mkdir(parents=True, exist_ok=True)
                if res["plan"] is not None:
                    (plans / f"{spec.stem}.json").write_text(json.dumps(res["plan"], indent=1))
                row = score(spec.stem, split, expect[split][spec.stem], res)
                peeled = row
                if not row["accepted"] and not args.no_peel:
                    info = peel(kplan, spec, row["error"], Path(tmp), args.timeout)
                    res_p = info.pop("peeled_result", None)
                    row.update(info)
                    if res_p is not None:
                        (plans / f"{spec.stem}.peeled.json").write_text(
                            json.dumps(res_p["plan"], indent=1))
                        peeled = score(spec.stem, split, expect[split][spec.stem], res_p)
                        row["peeled"] = {k: peeled[k] for k in (
                            "verdict", "verdict_ok", "libraries_named", "risks_matched",
                            "risk_ids")}
                rows.append(row)
                peeled_rows.append(peeled)

    aggs = {s: aggregate([r for r in rows if r["split"] == s]) for s in splits}
    if len(splits) > 1:
        aggs["all"] = aggregate(rows)
    if not args.no_peel:
        for s in list(aggs):
            part = [r for r in peeled_rows if s == "all" or r["split"] == s]
            aggs[s]["peeled"] = {k: v for k, v in aggregate(part).items() if k in PEELED_KEYS}
    try:
        version = subprocess.run([kplan, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        version = "unknown"
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kplan": version,
        "command": "python3 eval/specs/run.py " + " ".join(sys.argv[1:]),
    }
    (out_dir / "results.json").write_text(
        json.dumps({"meta": meta, "aggregate": aggs, "specs": rows}, indent=1) + "\n")
    detail = {s.strip() for s in args.detail.split(",") if s.strip()}
    (out_dir / "summary.md").write_text(markdown(meta, aggs, rows, detail))
    for split, a in aggs.items():
        print(f"{split}: {a['accepted']}/{a['specs']} accepted, verdict "
              f"{pct(a['verdict_match_of_all'])}, libraries {pct(a['libraries_of_all'])}, "
              f"risk topics {pct(a['risk_topics_of_all'])}, top risk id "
              f"{a['top_risk_id']} {pct(a['top_risk_id_share'])}")
    print(f"wrote {out_dir / 'results.json'} and {out_dir / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
