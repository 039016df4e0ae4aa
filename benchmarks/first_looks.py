"""First looks from calibration seeds: how many seeds each claim's steps should start with.

Reads the ``scorecard.json`` of a run on calibration seeds (``bottlenecks run
pipelines/four_bottlenecks.yaml --profile calibration``, seeds that never give a verdict) and, for
every check the scorecard tested with a t or Welch interval, the power (``components.stats.power``:
the test as the scorecard runs it, the shared test-set error that does not shrink with seeds
included) of that check's test at the first look of the planned sequential design (``looks(n,
max_seeds)``, Pocock-type spending unless told otherwise) for each candidate first look ``n``, at the
calibration's observed effect (its margin) and spread. A check decided without a spread (every seed
equal: the exact or identical path, or a bounded mean at its bound) decides at any count; a sign or
rank test needs ``0.5 ** n`` below the look's level. A claim's first look is the smallest ``n`` at
which every check reaches the target power (0.8, the hints' ``POWER``); a measurement's is the
largest over the claims that read it. The observed effect is the calibration's own estimate, so the
power is what the design expects if the verdict seeds behave as the calibration seeds did.

    python benchmarks/first_looks.py .bottlenecks/work/scorecard-<key>/scorecard.json
    python benchmarks/first_looks.py CARD --max-seeds 10 --candidates 3 4 5 6 8 10 --claims 2 7 8 19
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components import stats  # noqa: E402
from components.report.sequential import Design  # noqa: E402


def first_look_level(n: int, max_seeds: int, spending: str) -> float:
    return Design.planned(n, max_seeds, spending=spending).levels[0]


def shared_se(ev: dict, reason: str) -> float:
    """The test-set error shared by the seeds: the evidence's ``own_se`` (a number), else the one the
    reason states (``own se 0.0478``: the shared part the test added once)."""
    own = ev.get("own_se")
    if isinstance(own, (int, float)):
        return float(own)
    found = re.search(r"own se ([0-9.eE+-]+)", reason or "")
    return float(found.group(1)) if found else 0.0


def check_power(ev: dict, n: int, level: float, reason: str = "") -> float | None:
    """The power of one check's test at ``n`` seeds (per group), or None where it has no spread model."""
    method = ev.get("method")
    if ev.get("interval") == "exact" or method == "exact":  # a structural value: decided as measured
        return 1.0
    if method in ("identical", "bounded"):  # no spread: the exact test decides from the count it names
        need = ev.get("seeds_needed")
        return None if need is None else float(n >= need)
    if method in ("sign", "ranks", "median"):
        return 1.0 if 0.5**n <= level else 0.0
    if method not in ("t", "welch") or ev.get("sd") is None or ev.get("margin") is None:
        return None
    groups = 2 if method == "welch" else 1
    spread = float(ev["sd"]) / math.sqrt(groups)
    own = shared_se(ev, reason)
    own_df = float(ev.get("own_df") or math.inf) if groups == 1 else math.inf
    return stats.power(abs(float(ev["margin"])), spread, n, own, groups=groups, level=level, own_df=own_df)


def sources(check: dict) -> set[str]:
    """The measurement names a check reads (from the references its ``expected`` text names)."""
    return set(re.findall(r"\b([A-Za-z_][\w-]*)(?:\[[^\]]*\])?\.[A-Za-z_]", check.get("expected", "")))


def _num(v) -> str:
    return f"{v:9.4g}" if isinstance(v, (int, float)) else f"{'-':>9}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("card", type=Path)
    ap.add_argument("--max-seeds", type=int, default=10)
    ap.add_argument("--spending", default="pocock", choices=("pocock", "obrien-fleming"))
    ap.add_argument("--candidates", type=int, nargs="+", default=[3, 4, 5, 6, 8, 10])
    ap.add_argument("--claims", nargs="*", help="only these claim ids")
    ap.add_argument("--target", type=float, default=stats.POWER)
    args = ap.parse_args(argv)
    card = json.loads(args.card.read_text())
    levels = {n: first_look_level(n, args.max_seeds, args.spending) for n in args.candidates}
    print(
        f"First looks from {args.card} ({card.get('settings', {}).get('profile', '?')}): power of each check at "
        f"its design's first look (looks(n, {args.max_seeds}), {args.spending}); target {args.target}"
    )
    print("first-look levels: " + ", ".join(f"n={n}: {lv:.4g}" for n, lv in levels.items()))
    header = (
        f"{'claim':>6} {'check':<10} {'method':<8} {'margin':>9} {'sd':>8} {'own_se':>8} | "
        + " ".join(f"{'n=' + str(n):>6}" for n in args.candidates)
        + " | first look"
    )
    print(header)
    print("-" * len(header))
    chosen: dict[str, int] = {}
    for claim in card["claims"]:
        if args.claims and str(claim["id"]) not in args.claims:
            continue
        needs = 0
        for check in claim.get("checks", []):
            ev = check.get("evidence") or {}
            powers = {n: check_power(ev, n, lv, check.get("reason", "")) for n, lv in levels.items()}
            enough = [n for n, p in powers.items() if p is not None and p >= args.target]
            first = min(enough) if enough else None
            needs = max(needs, first if first is not None else 10**6)
            cells = " ".join(f"{p:6.3f}" if p is not None else f"{'-':>6}" for p in powers.values())
            own = shared_se(ev, check.get("reason", ""))
            print(
                f"{claim['id']!s:>6} {check['check']:<10} {str(ev.get('method')):<8} {_num(ev.get('margin'))} "
                f"{_num(ev.get('sd'))[1:]} {_num(own)[1:]} | {cells} | {first if first else 'none'}"
            )
        shown = "none reaches the target" if needs >= 10**6 else str(needs)
        print(f"{'':>6} claim {claim['id']}: first look {shown}")
        if needs < 10**6:
            for check in claim.get("checks", []):
                for name in sources(check):
                    chosen[name] = max(chosen.get(name, 0), needs)
    print("\nBy measurement (the largest first look of the claims reading it):")
    for name, n in sorted(chosen.items()):
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
