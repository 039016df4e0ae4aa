"""One metric of the newest run against the run before, judged against its noise.

With seeds on both sides the noise is the seed-to-seed spread within the two runs (two unchanged runs on
one machine give identical figures, so the spread across nights says nothing): Welch's t over the seeds
(``stats.two_sample`` and ``stats.decide``, the scorecard's core), two-sided at ``stats.ALPHA``; with
seeds on one side only, the prediction interval of the other side's mean from the seeded side's spread.
Seeds identical within each run (a deterministic or cached step) have no noise: any difference counts.
More diverged (non-finite) seeds than before is worse whatever the metric. With one value a run there is
no noise to measure: the change relative to the median of the runs before is held to a threshold, and
the message says so; a zero median gets the absolute change, never a percentage.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from components import stats


@dataclass
class Comparison:
    """How one metric moved: ``moved`` +1 up, -1 down, 0 within the noise; ``p`` (seed tests only) two-sided."""

    metric: str
    newest: float
    baseline: float
    moved: int
    text: str
    method: str  # "seeds", "identical", "diverged" or "threshold"
    p: float | None = None
    worse: bool = False  # worse whichever way is better (more diverged seeds)


def _finite(values) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def _shown(values) -> str:
    finite = _finite(values)
    if not finite:
        return "diverged"
    mean = sum(finite) / len(finite)
    if len(values) == 1:
        return f"{mean:.4g}"
    spread = f" ± {statistics.stdev(finite):.2g}" if len(finite) > 1 else ""
    return f"{mean:.4g}{spread} ({len(values)} seeds)"


def seeds(metric: str, now: tuple[float, ...], before: tuple[float, ...]) -> Comparison | None:
    """Judge by the seeds' spread; None when neither side has two seeds (the threshold judges then)."""
    bad_now, bad_before = len(now) - len(_finite(now)), len(before) - len(_finite(before))
    head = f"{metric}: {_shown(before)} -> {_shown(now)}"
    if bad_now != bad_before and max(len(now), len(before)) > 1:
        more = bad_now > bad_before
        text = f"{head}: {bad_now} of {len(now)} seeds diverged (before: {bad_before} of {len(before)})"
        return Comparison(metric, math.nan, math.nan, -1 if more else 1, text, "diverged", worse=more)
    a, b = _finite(now), _finite(before)
    if len(a) < 2 and len(b) < 2 or not a or not b:
        return None
    est = _estimate(a, b)
    m_now, m_before = sum(a) / len(a), sum(b) / len(b)
    if est.se == 0 or (
        _flat(a) and _flat(b)
    ):  # no spread within either run: deterministic figures, any difference is real
        moved = (est.mean > 0) - (est.mean < 0)
        text = f"{head}: {_change(est.mean)} (every seed equal within each run: no noise to allow for)"
        return Comparison(metric, m_now, m_before, moved, text, "identical", 0.0 if moved else 1.0)
    d = stats.decide(est, 0.0)
    how = "Welch t" if est.method == "welch" else "prediction interval"
    text = (
        f"{head}: {_change(est.mean)}, 95% interval of the change [{d.lo:.4g}, {d.hi:.4g}] "
        f"({how} over {len(a)} and {len(b)} seeds, p = {d.p:.2g}"
    )
    moved = (est.mean > 0) - (est.mean < 0)
    return Comparison(metric, m_now, m_before, moved, text, "seeds", d.p)


def _flat(values: list[float]) -> bool:
    """No spread beyond float rounding (as ``stats.one_sample`` tells identical seeds)."""
    mean = statistics.fmean(values)
    return len(values) < 2 or statistics.stdev(values) <= 1e-12 * max(1.0, abs(mean))


def _estimate(a: list[float], b: list[float]) -> stats.Estimate:
    """The difference of means (now - before): Welch's over two seeded runs, else the prediction
    interval of the single value from the seeded side's spread (``sd * sqrt(1/n + 1/m)``, ``n - 1`` df)."""
    if len(a) >= 2 and len(b) >= 2:
        return stats.two_sample(a, b)
    seeded, single = (a, b) if len(a) >= 2 else (b, a)
    sd = 0.0 if _flat(seeded) else statistics.stdev(seeded)
    diff = statistics.fmean(a) - statistics.fmean(b)
    se = sd * math.sqrt(1 / len(seeded) + 1 / len(single))
    return stats.Estimate(len(a) + len(b), diff, se, len(seeded) - 1, sd, 0.0, "t", (diff,))


def _change(delta: float) -> str:
    return "unchanged" if delta == 0 else f"{'up' if delta > 0 else 'down'} {abs(delta):.4g}"


def threshold(metric: str, now: float, history: list[float], limit: float) -> Comparison | None:
    """Judge one value a run against the median of the runs before by a relative ``limit``."""
    if not history:
        return None
    median = float(statistics.median(history)) if all(map(math.isfinite, history)) else math.nan
    why = f"one value a run, so no seeds to measure the noise: judged by the relative threshold {limit:.0%}"
    where = f"the median {median:.4g} of the {len(history)} run(s) before"
    if not math.isfinite(now):
        if not math.isfinite(median):
            return None
        text = f"{metric} = {now} (diverged) against {where}"
        return Comparison(metric, now, median, -1, text, "diverged", worse=True)
    if not math.isfinite(median) or now == median:
        return None
    delta = now - median
    moved = 1 if delta > 0 else -1
    if median == 0:  # no relative change of a zero median: the absolute one, and any change counts
        text = (
            f"{metric} = {now:.4g}, {_change(delta)} from {where} (the absolute change: a median of 0 has no "
            "relative one; one value a run, so no seeds to measure the noise: any change from 0 counts)"
        )
        return Comparison(metric, now, median, moved, text, "threshold")
    relative = abs(delta) / abs(median)
    if relative <= limit:
        return None
    side = "above" if delta > 0 else "below"
    text = f"{metric} = {now:.4g} is {relative:.0%} {side} {where} ({why})"
    return Comparison(metric, now, median, moved, text, "threshold")
