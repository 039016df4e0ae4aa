"""Power calibration: ``stats.power`` (what the seeds-needed hint rests on) against the real test, simulated.

    nice python benchmarks/power_calibration.py                 # 4000 sims a cell (about a minute)
    nice python benchmarks/power_calibration.py --sims 500      # a smoke run
    nice python benchmarks/power_calibration.py --json out.json

The model. A seed's quantity is ``effect + sd * z_s + u * w``: ``z_s`` per seed, ``w`` one draw per
simulated experiment, shared by every seed (the test-set error: every seed is scored on the same test
sentences, so more seeds do not average it away). The per-seed variance is 1, ``u^2 = share`` of it
(``share`` 0: no shared error), ``sd^2 = 1 - share``; ``effect`` is in those units. The test is the
scorecard's own: ``stats.one_sample(values, own_se=[u_hat] * n, own_df=own_df)`` then
``stats.decide(estimate, 0.0, level=level)`` (what ``report.rules.judge`` runs for a threshold check),
the own standard error recorded as known (``u_hat = u``, own_df infinite: a bootstrap interval) or,
in the second table, estimated on ``own_df`` degrees of freedom (``u_hat = u * sqrt(chi2 / own_df)``,
drawn once per experiment, as a fit's residuals give it). The Welch rows simulate two independent
groups (``stats.two_sample``, each with its own shared error, ``u / sqrt(2)`` each) with one seed of A
minus one of B of variance 1. A simulated power is the rate of ``holds`` over ``--sims`` experiments.

Columns: ``old nct``: the noncentral t that ``stats.power`` used before, df ``groups * (n - 1)``,
noncentrality ``effect / sqrt(groups * sd^2 / n + u^2)``; ``power``: ``stats.power`` (the shared error
that does not shrink with seeds, the seeds' variance on its ``n - 1`` df, the own term known or on
``own_df``, Student's t on the test's df rule); ``simulated``: the real test's rate ± its Monte Carlo
standard error ``sqrt(p (1 - p) / N)``; ``z``: (simulated - power) in units of the MCSE a test with
exactly ``power`` would have, ``sqrt(q (1 - q) / N)``. A ``z`` beyond ``Z_FLAG`` (the Bonferroni bound
for 5% over the table's cells) is flagged ``!`` and the script exits 1.

Levels: ``single``, one look at ``ALPHA / 2`` (2.5%); ``first look``, the first look of the pipelines'
planned design (3 -> 6 -> 10 seeds, Pocock-type spending: ``sequential.Design``), about 1.04%.

``stats.seeds_needed`` (the inconclusive hint, computed after the verdict) is stubbed while simulating:
the verdicts do not depend on it. Every draw comes from numpy's ``default_rng`` seeded from
``--rng-seed`` and the cell's name, so a run repeats exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RNG_SEED = 20240611
SEEDS = (3, 6, 10)
SHARES = (0.0, 0.5, 0.8)
EFFECTS = (2.0, 4.0, 6.0)
OWN_DF = 4  # the second table: the own term estimated on this many df
PLANNED = (3, 10, "pocock")  # the pipelines' design (until_decided: 3 -> 6 -> 10 seeds, Pocock-type)


def levels() -> dict[str, float]:
    """The one-sided levels of the table: a single look, and the planned design's first look."""
    from components import stats
    from components.report.sequential import Design

    first, last, spending = PLANNED
    return {"single": stats.ALPHA / 2, "first look": Design.planned(first, last, spending=spending).levels[0]}


def cells() -> list[dict]:
    """Every cell: the main table (one group, own term known) and the second (own term on OWN_DF df;
    Welch's two groups)."""
    out = []
    lv = levels()
    for name, level in lv.items():
        for n in SEEDS:
            for share in SHARES:
                for effect in EFFECTS:
                    out.append(dict(table="known", look=name, level=level, n=n, share=share, effect=effect))
    for name, level in lv.items():
        for n in SEEDS:
            for effect in (4.0,):
                out.append(
                    dict(table="own_df", look=name, level=level, n=n, share=0.8, effect=effect, own_df=float(OWN_DF))
                )
            for share in (0.0, 0.5):
                out.append(dict(table="welch", look=name, level=level, n=n, share=share, effect=2.0, groups=2))
    return out


def _spread(cell: dict) -> tuple[float, float]:
    """Per-group seed sd and the shared error's sd: a seed's quantity (Welch: a seed of A minus one of
    B) has variance 1, ``share`` of it shared."""
    groups = cell.get("groups", 1)
    return math.sqrt((1 - cell["share"]) / groups), math.sqrt(cell["share"])


def old_power(effect: float, sd: float, n: int, own_se: float = 0.0, *, groups: int = 1, level: float) -> float:
    """The formula ``stats.power`` used before: a noncentral t on ``groups * (n - 1)`` df."""
    from scipy import stats as sps

    se = math.sqrt(groups * sd**2 / n + own_se**2)
    df = groups * (n - 1)
    return float(sps.nct.sf(sps.t.isf(level, df), df, abs(effect) / se))


def model_power(cell: dict) -> float:
    from components import stats

    sd, u = _spread(cell)
    return stats.power(
        cell["effect"],
        sd,
        cell["n"],
        u,
        groups=cell.get("groups", 1),
        level=cell["level"],
        own_df=cell.get("own_df", math.inf),
    )


@contextlib.contextmanager
def seeds_needed_skipped():
    """Skip ``stats.seeds_needed`` (computed after the verdict, for an inconclusive one): verdicts unchanged."""
    from components import stats

    real = stats.seeds_needed
    stats.seeds_needed = lambda decision: None
    try:
        yield
    finally:
        stats.seeds_needed = real


def _rng(cell: dict, seed: int) -> np.random.Generator:
    name = "|".join(f"{k}={cell[k]}" for k in sorted(cell) if k != "level")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),)))


def simulate(cell: dict, sims: int, seed: int = RNG_SEED) -> int:
    """The number of ``holds`` of the real test over ``sims`` simulated experiments of the cell."""
    from components import stats

    n, level, effect = cell["n"], cell["level"], cell["effect"]
    own_df = cell.get("own_df", math.inf)
    sd, u = _spread(cell)
    rng = _rng(cell, seed)
    holds = 0
    with seeds_needed_skipped():
        for _ in range(sims):
            if cell.get("groups", 1) == 2:
                half = u / math.sqrt(2)
                a = effect + sd * rng.standard_normal(n) + half * rng.standard_normal()
                b = sd * rng.standard_normal(n) + half * rng.standard_normal()
                est = stats.two_sample(a, b, [half] * n, [half] * n)
            else:
                vals = effect + sd * rng.standard_normal(n) + u * rng.standard_normal()
                u_hat = u * math.sqrt(rng.chisquare(own_df) / own_df) if math.isfinite(own_df) else u
                est = stats.one_sample(vals, [u_hat] * n, own_df=own_df)
            holds += stats.decide(est, 0.0, level=level).verdict == stats.HOLDS
    return holds


def run(sims: int, seed: int = RNG_SEED, progress: bool = True) -> list[dict]:
    rows = []
    todo = cells()
    start = time.perf_counter()
    for i, cell in enumerate(todo):
        sd, u = _spread(cell)
        groups = cell.get("groups", 1)
        q = model_power(cell)
        k = simulate(cell, sims, seed)
        p = k / sims
        row = dict(cell, sims=sims, holds=k, simulated=p, mcse=math.sqrt(p * (1 - p) / sims), power=q)
        row["old_nct"] = old_power(cell["effect"], sd, cell["n"], u, groups=groups, level=cell["level"])
        model_se = math.sqrt(q * (1 - q) / sims)
        row["z"] = (p - q) / model_se if model_se > 0 else (0.0 if p == q else math.inf)
        rows.append(row)
        if progress and (i + 1) % 12 == 0:
            print(
                f"[power] {i + 1}/{len(todo)} cells, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True
            )
    return rows


def z_flag(cells_count: int) -> float:
    """The |z| beyond which a cell is flagged: Bonferroni for 5% over the table's cells (two-sided)."""
    return statistics.NormalDist().inv_cdf(1 - 0.05 / (2 * cells_count))


def render(rows: list[dict], seed: int, wall_s: float) -> tuple[str, list[str]]:
    import scipy

    flag = z_flag(len(rows))
    lv = levels()
    out, missed = [], []
    out.append("Power calibration: stats.power against the real test (stats.one_sample / two_sample + stats.decide)")
    out.append(
        f"numpy {np.__version__}, scipy {scipy.__version__}; RNG seed {seed} (per cell: SeedSequence(seed, "
        f"spawn_key=(crc32(cell),))); {rows[0]['sims'] if rows else 0} sims a cell; wall {wall_s:.0f} s"
    )
    out.append(
        "A seed's quantity: effect + sd * z_seed + u * w (w drawn once per experiment, shared by all seeds); "
        "sd^2 + u^2 = 1, u^2 = share. Levels: "
        + ", ".join(f"{k} {v:.4g}" for k, v in lv.items())
        + f" (the first look of {PLANNED[0]} -> 6 -> {PLANNED[1]} seeds, {PLANNED[2]}-type spending)."
    )
    out.append(
        "old nct: the noncentral t stats.power used before; power: stats.power now; simulated: rate of holds "
        f"± MCSE; z: (simulated - power) / sqrt(power (1 - power) / N), '!' beyond {flag:.2f} (Bonferroni, 5%)."
    )
    titles = {
        "known": "One group, own term known (own_df infinite: a bootstrap interval)",
        "own_df": f"One group, own term estimated on {OWN_DF} df (own_df = {OWN_DF}: t on min(n - 1, {OWN_DF}) df)",
        "welch": "Two groups, Welch (paired: false), each group's shared error u / sqrt(2)",
    }
    head = (
        f"{'look':>10} {'seeds':>5} {'share':>5} {'effect':>6} | {'old nct':>7} {'power':>7} | "
        f"{'simulated':>15} {'z':>6}"
    )
    for table, title in titles.items():
        sub = [r for r in rows if r["table"] == table]
        if not sub:
            continue
        out.append("")
        out.append(title)
        out.append(head)
        out.append("-" * len(head))
        for r in sub:
            bad = abs(r["z"]) > flag
            mark = "!" if bad else ""
            out.append(
                f"{r['look']:>10} {r['n']:>5} {r['share']:>5.1f} {r['effect']:>6.1f} | {r['old_nct']:7.4f} "
                f"{r['power']:7.4f} | {r['simulated']:7.4f} ±{r['mcse']:6.4f} {r['z']:6.2f}{mark}"
            )
            if bad:
                missed.append(f"{table} {r['look']} n={r['n']} share={r['share']} effect={r['effect']}: z={r['z']:.2f}")
    worst_old = max(rows, key=lambda r: abs(r["old_nct"] - r["simulated"]))
    worst_new = max(rows, key=lambda r: abs(r["power"] - r["simulated"]))
    out.append("")
    out.append(
        f"Largest gap to the simulation: old nct {worst_old['old_nct'] - worst_old['simulated']:+.4f} "
        f"({worst_old['table']}, {worst_old['look']}, {worst_old['n']} seeds, share {worst_old['share']}, "
        f"effect {worst_old['effect']}); power {worst_new['power'] - worst_new['simulated']:+.4f} "
        f"({worst_new['table']}, {worst_new['look']}, {worst_new['n']} seeds, share {worst_new['share']}, "
        f"effect {worst_new['effect']})"
    )
    out.append("Cells flagged: " + ("; ".join(missed) if missed else "none"))
    return "\n".join(out), missed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=4000, help="simulated experiments per cell")
    ap.add_argument("--rng-seed", type=int, default=RNG_SEED, help="the seed of every cell's generator")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    if args.sims < 1:
        ap.error("--sims must be at least 1")
    start = time.perf_counter()
    rows = run(args.sims, args.rng_seed)
    wall = time.perf_counter() - start
    text, missed = render(rows, args.rng_seed, wall)
    print(text, flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "missed": missed, "wall_s": wall}, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
