"""Sequential calibration: the false-verdict rates and the power of seeds added look by look.

    nice python benchmarks/sequential_calibration.py               # 4000 sims a cell (a few minutes)
    nice python benchmarks/sequential_calibration.py --sims 300    # a smoke run

Each simulated claim goes through the real code: ``report.scorecard``'s claim path
(``scorecard.judge_sequential``: the design of ``sequential.Design``, the walk of ``sequential.walk``,
each look judged by ``claims.judge`` on a ``refs.Resolver`` restricted to the look's first seeds, at the
look's level) over a simulated matrixed step ``{"m": {"seed=0": {"x": ...}, ..., "seed=9": {...}}}``
and the claim ``at_least m[*].x than 0``. Nothing of the decision is re-implemented here.

The model: ``x_s = delta + z_s`` (one seed standard deviation; no shared test-set error). ``delta = 0``
is the null on the boundary, where both verdicts are wrong: ``holds`` and ``fails`` are counted over
all the looks a walk takes (target at most 2.5% each); ``delta > 0`` are known effects (the rate of
``holds``: the power). The same draws are judged four ways:

- ``3->6->10`` and ``5->10``: the sequential designs (O'Brien-Fleming-type spending, futility 0.05);
- ``fixed 10``: one look at all 10 seeds at 2.5% (the design of the same largest seed count);
- ``naive 3,5,10``: looking again at 3, 5 and 10 seeds at 2.5% each, stopping at the first decision
  (what adding seeds until a verdict comes does without a design: above 2.5%).

``seeds`` is the mean seed count a walk used (the last look it took); ``futile`` the rate of walks
stopped for futility. MCSE = sqrt(p (1 - p) / N). A false rate is flagged when it is above 2.5% by more
than 3 MCSE of a 2.5% rate; the script exits 1 when a sequential design's rate is flagged. Draws come
from numpy's ``default_rng(--rng-seed)``, so a run repeats exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TARGET = 0.025
DELTAS = (0.0, 0.5, 1.0, 1.5)
DESIGNS = ((3, 10), (5, 10))
NAIVE = (3, 5, 10)
MOST = 10
CLAIM = {"id": "sim", "claim": "x is positive", "check": "at_least", "value": "m[*].x", "than": 0}


@contextlib.contextmanager
def seeds_needed_skipped():
    """Skip ``stats.seeds_needed`` (the inconclusive hint, computed after the verdict: about 5 ms of
    noncentral-t scans a decision); verdicts and p-values are untouched."""
    from components import stats

    real = stats.seeds_needed
    stats.seeds_needed = lambda decision: None
    try:
        yield
    finally:
        stats.seeds_needed = real


def _measurements(x: np.ndarray) -> dict:
    return {"m": {f"seed={s}": {"x": float(v)} for s, v in enumerate(x)}}


def _first(n: int, x: np.ndarray) -> dict:
    return _measurements(x[:n])


def simulate(delta: float, sims: int, rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Judge ``sims`` draws at truth ``delta`` every way; counts of holds, fails, futile, seeds used."""
    from components.report.claims import judge
    from components.report.refs import Resolver
    from components.report.scorecard import judge_sequential
    from components.report.vocabulary import validate_expectations

    claim = validate_expectations([CLAIM])[0]
    ways = [f"{a}->{b}" if a * 2 >= b else f"{a}->{2 * a}->{b}" for a, b in DESIGNS] + ["fixed 10", "naive 3,5,10"]
    out = {w: {"holds": 0, "fails": 0, "futile": 0, "seeds": 0} for w in ways}
    for _ in range(sims):
        x = delta + rng.standard_normal(MOST)
        resolver = Resolver(_measurements(x))
        for way, (first, most) in zip(ways, DESIGNS):
            design = {"max_seeds": most, "first_look": {"m": first}, "spending": "obrien-fleming", "futility": 0.05}
            entry = judge_sequential(claim, resolver, design, "cpu", 1, "")
            _count(out[way], entry["verdict"], entry["sequential"]["seeds"], entry["sequential"]["stopped"])
        entry = judge(claim, resolver, device="cpu", min_seeds=1)
        _count(out["fixed 10"], entry["verdict"], MOST, "")
        for n in NAIVE:
            entry = judge(claim, Resolver(_first(n, x)), device="cpu", min_seeds=1)
            if entry["verdict"] in ("holds", "fails") or n == NAIVE[-1]:
                _count(out["naive 3,5,10"], entry["verdict"], n, "")
                break
    return {w: {k: v / sims for k, v in c.items()} for w, c in out.items()}


def _count(cell: dict, verdict: str, seeds: int, stopped: str) -> None:
    cell["holds"] += verdict == "holds"
    cell["fails"] += verdict == "fails"
    cell["futile"] += stopped == "futile"
    cell["seeds"] += seeds


def mcse(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def render(results: dict[float, dict], sims: int) -> tuple[str, bool]:
    """The table, and whether a sequential design's false rate is flagged."""
    from components.report.sequential import Design

    lines = ["Nominal one-sided levels per look (O'Brien-Fleming-type spending, the last look's by the union bound):"]
    for first, most in DESIGNS:
        d = Design.planned(first, most)
        levels = ", ".join(f"{n} seeds: {p:.3g}" for n, p in zip(d.looks, d.levels))
        bounds = ", ".join(f"{c:.3f}" for c in d.bounds)
        lines.append(f"  {' -> '.join(map(str, d.looks))}: {levels} (normal boundaries {bounds})")
    lines += [
        "",
        f"{sims} simulations a cell; x_s = delta + N(0, 1) per seed; claim: mean x > 0; MCSE in brackets.",
        "",
        "| truth | design | holds | fails | futile | mean seeds | flag |",
        "|---|---|---|---|---|---|---|",
    ]
    flagged = False
    limit = TARGET + 3 * mcse(TARGET, sims)
    for delta, cells in results.items():
        truth = "null (on the boundary)" if delta == 0 else f"effect {delta:g} sd"
        for way, c in cells.items():
            flag = ""
            if delta == 0:
                bad = [k for k in ("holds", "fails") if c[k] > limit]
                flag = f"MISS ({', '.join(bad)})" if bad else "ok"
                flagged |= bool(bad) and "->" in way
            else:
                flag = "power"
            lines.append(
                f"| {truth} | {way} | {_pct(c['holds'], sims)} | {_pct(c['fails'], sims)} | "
                f"{c['futile']:.1%} | {c['seeds']:.2f} | {flag} |"
            )
    return "\n".join(lines), flagged


def _pct(p: float, n: int) -> str:
    return f"{p:.2%} ({mcse(p, n):.2%})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=4000, help="simulations a cell (default 4000)")
    ap.add_argument("--rng-seed", type=int, default=20261204)
    args = ap.parse_args(argv)
    t0 = time.time()
    results = {}
    with seeds_needed_skipped():
        for i, delta in enumerate(DELTAS):
            results[delta] = simulate(delta, args.sims, np.random.default_rng([args.rng_seed, i]))
    table, flagged = render(results, args.sims)
    print(table)
    print(f"\n{time.time() - t0:.0f} s")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
