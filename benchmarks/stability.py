"""Verdict stability: run a profile N times from empty stores, then print per claim the verdicts and
the spread of the figure each verdict rests on, with the date, the machine and its load.

    python benchmarks/stability.py --runs 3 --out stability-runs              # three quick runs
    python benchmarks/stability.py --runs 2 --profile standard --set data_dir=PATH --out std-runs
    python benchmarks/stability.py --reuse stability-runs/run-*               # re-judge: new report code only
    python benchmarks/stability.py --reuse stability-runs/run-* --no-run      # print what is recorded

Each run gets its own state folder (``DIR/run-K/home``: its Prefect and MLflow stores and step
cache), kept afterwards. ``--reuse`` runs the pipeline again in existing folders: every training
and probe step comes from that folder's cache, so only steps whose code or parameters changed
(the report after an edit to ``components/report``) are recomputed; ``--no-run`` only reads the
scorecards already there. ``DIR/stability.json`` records every run (command, wall clock, load,
environment, verdicts, figures); the table goes to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from flows.track.environment import describe  # noqa: E402

PIPELINE = "pipelines/four_bottlenecks.yaml"


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def pipeline_name(pipeline: str) -> str:
    """The pipeline's ``name:`` (its MLflow experiment)."""
    import yaml

    return str(yaml.safe_load((REPO / pipeline).read_text()).get("name", ""))


def newest_scorecard(home: Path, experiment: str) -> Path | None:
    """The scorecard.json the pipeline's latest run in ``home`` recorded on its MLflow runs (else the
    newest one in the step work folders)."""
    for pattern in (f"mlartifacts/{experiment}/*/artifacts/scorecard.json", "work/*/scorecard.json"):
        found = sorted(home.glob(pattern), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    return None


def run_once(folder: Path, pipeline: str, profile: str | None, sets: list[str], timeout: float) -> dict[str, Any]:
    """Run the pipeline once with ``folder/home`` as its state folder; return what the run recorded."""
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("bottlenecks")
    cmd = (
        ([exe] if exe else [sys.executable, "-m", "flows.cli"])
        + ["run", pipeline]
        + (["--profile", profile] if profile else [])
    )
    for s in sets:
        cmd += ["--set", s]
    env = {**os.environ, "BOTTLENECKS_HOME": str(home)}
    started, load = time.monotonic(), _load()
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with open(folder / "run.log", "a") as log:
        log.write(f"\n# {stamp} {' '.join(cmd)}\n")
        log.flush()
        try:
            rc = subprocess.run(
                cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    record = {
        "folder": str(folder),
        "command": " ".join(cmd),
        "started": stamp,
        "load_at_start": load,
        "load_at_end": _load(),
        "wall_s": round(time.monotonic() - started, 1),
        "exit": rc,
    }
    (folder / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def figures(claim: dict[str, Any]) -> dict[str, Any]:
    """The figure a claim's verdict rests on: per check, its per-seed quantity (``evidence.values``;
    ``margins`` in scorecards before the t-test rule) and the interval of its mean where the scorecard
    records them, else the first measured reference."""
    out: dict[str, Any] = {}
    for i, check in enumerate(claim.get("checks") or []):
        ev = check.get("evidence")
        if ev and (ev.get("margins") or ev.get("values")):
            out[f"{i}:{check['check']}"] = ev
    if not out and claim.get("measured"):
        ref, values = next(iter(claim["measured"].items()))
        out[ref] = {"values": values}
    return out


def _numbers(values: Any) -> list[float]:
    if isinstance(values, dict):
        return [x for v in values.values() for x in _numbers(v)]
    if isinstance(values, list):
        return [x for v in values for x in _numbers(v)]
    try:
        v = float(values)
    except (TypeError, ValueError):
        return []
    return [v] if math.isfinite(v) else []


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def collect(folders: list[Path], experiment: str) -> list[dict[str, Any]]:
    """One entry per state folder: its run record (if any) and its newest scorecard."""
    runs = []
    for folder in folders:
        card_path = newest_scorecard(folder / "home", experiment)
        record = json.loads((folder / "run.json").read_text()) if (folder / "run.json").is_file() else {}
        card = json.loads(card_path.read_text()) if card_path else None
        runs.append({"folder": str(folder), "record": record, "scorecard": str(card_path or ""), "card": card})
    return runs


def table(runs: list[dict[str, Any]]) -> list[str]:
    """Per claim: the verdict of every run, whether they agree, and the spread of its figures."""
    cards = [r["card"] for r in runs if r["card"]]
    if not cards:
        return ["no scorecard found in any folder"]
    ids = [c["id"] for c in cards[0]["claims"]]
    lines = [
        "| claim | "
        + " | ".join(f"run {i + 1}" for i in range(len(cards)))
        + " | stable | figure: per run (mean), range |",
        "|---|" + "---|" * len(cards) + "---|---|",
    ]
    for cid in ids:
        entries = [next((c for c in card["claims"] if c["id"] == cid), None) for card in cards]
        verdicts = [e["verdict"] if e else "absent" for e in entries]
        kinds = set(verdicts)
        stable = "yes" if len(kinds) == 1 else ("FLIP" if {"holds", "fails"} <= kinds else "changes")
        parts = []
        names = {name for e in entries if e for name in figures(e)}
        for name in sorted(names):
            per_run, every = [], []
            for e in entries:
                fig = figures(e).get(name) if e else None
                nums = _numbers((fig or {}).get("margins", (fig or {}).get("values")))
                every += nums
                per_run.append(_fmt(statistics.fmean(nums)) if nums else "-")
            if every:
                parts.append(f"{name}: {' / '.join(per_run)}, {_fmt(min(every))}..{_fmt(max(every))}")
        lines.append(f"| {cid} | " + " | ".join(verdicts) + f" | {stable} | {'; '.join(parts)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs from empty stores (default 3)")
    ap.add_argument("--out", type=Path, default=Path("stability-runs"), help="folder for the runs' state folders")
    ap.add_argument("--pipeline", default=PIPELINE)
    ap.add_argument("--profile", default=None, help="the profile to run (default: the pipeline's)")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="a parameter override, as for run")
    ap.add_argument("--reuse", type=Path, nargs="+", help="existing run folders: rerun there (cache) or only read")
    ap.add_argument("--no-run", action="store_true", help="with --reuse: only read the recorded scorecards")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds one run may take (default 3600)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    if args.no_run and not args.reuse:
        ap.error("--no-run reads existing folders: give them with --reuse")
    if args.reuse:
        folders = [f.resolve() for f in args.reuse]
        missing = [str(f) for f in folders if not (f / "home").is_dir()]
        if missing:
            ap.error(f"not a run folder of this script (no home/ inside): {', '.join(missing)}")
        out = folders[0].parent
    else:
        out = args.out.resolve()
        taken = sorted(p.name for p in out.glob("run-*")) if out.is_dir() else []
        if taken:
            ap.error(f"{out} already holds {', '.join(taken)}: choose an empty --out, or --reuse those folders")
        folders = [out / f"run-{i + 1}" for i in range(args.runs)]
    env = describe(REPO)
    print(f"# verdict stability, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {env['machine']} (machine id {env['machine_id']}); load now {_load()}")
    print(f"commit {env['git_commit']}{' (uncommitted changes)' if env['git_dirty'] else ''}")
    records = []
    if not args.no_run:
        for folder in folders:
            print(f"running {args.pipeline} in {folder} ...", flush=True)
            rec = run_once(folder, args.pipeline, args.profile, args.sets, args.timeout)
            records.append(rec)
            print(f"  exit {rec['exit']}, {rec['wall_s']:.0f} s, load {rec['load_at_start']} -> {rec['load_at_end']}")
    runs = collect(folders, pipeline_name(args.pipeline))
    print()
    for i, r in enumerate(runs):
        rec = r["record"]
        card = r["card"]
        s = card["summary"] if card else {}
        counts = ", ".join(f"{s[k]} {k.replace('_', ' ')}" for k in ("holds", "inconclusive", "fails") if k in s)
        print(
            f"run {i + 1}: {r['folder']}: {rec.get('started', '?')}, {rec.get('wall_s', '?')} s, "
            f"load {rec.get('load_at_start', '?')}; {counts or 'no scorecard'}"
        )
    print()
    print("\n".join(table(runs)))
    report = {"environment": env, "runs": [{k: v for k, v in r.items() if k != "card"} for r in runs]}
    report["table"] = table(runs)
    (out / "stability.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    flips = [line for line in report["table"] if "| FLIP |" in line]
    return 1 if flips else 0


if __name__ == "__main__":
    raise SystemExit(main())
