"""The fair-verdict rule and small fits, on plain numbers (values keyed by seed label).

Rule (from the calibration prototypes): A beats B when the effect shows in every seed and either
the mean gap exceeds ``spread_factor`` times the largest seed range, or every seed of A beats every
seed of B. A non-finite value is a diverged run: the worst possible outcome for its side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SPREAD_FACTOR = 3.0  # mean gap must exceed 3x the largest seed range (CALIBRATION.md)


@dataclass
class Outcome:
    """Whether a rule holds, and a sentence saying why."""

    holds: bool
    reason: str
    measurable: bool = True  # False: a precondition failed, so the rule could not be judged


def fmt(v: float) -> str:
    """Format a measured number compactly (4 significant digits; nan/inf by name)."""
    if not math.isfinite(v):
        return str(v)
    return f"{v:.4g}"


def seed_name(seed: str) -> str:
    """Name a seed label in a sentence: ``seed 0``, or ``the value`` for a single measurement."""
    return f"seed {seed}" if seed else "the value"


def pair(a: dict[str, float], b: dict[str, float]) -> tuple[list[str], str]:
    """Return the seed labels to compare and a note on seeds one side lacks.

    A single unlabelled value (a constant or a non-matrixed step) is compared with every seed.
    """
    if set(a) == {""} or set(b) == {""}:
        return sorted(b if set(a) == {""} else a), ""
    common = sorted(set(a) & set(b))
    dropped = sorted(set(a) ^ set(b))
    note = f" (seeds {', '.join(dropped)} measured on one side only, left out)" if dropped else ""
    return common, note


def get(values: dict[str, float], seed: str) -> float:
    return values[""] if set(values) == {""} else values[seed]


def beats(
    a: dict[str, float],
    b: dict[str, float],
    *,
    higher: bool = True,
    margin: float = 0.0,
    spread_factor: float = SPREAD_FACTOR,
) -> Outcome:
    """Apply the fair-verdict rule: does A beat B (higher or lower is better) in every seed?"""
    seeds, note = pair(a, b)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a)}, B: {sorted(b)})")
    sign = 1.0 if higher else -1.0
    worst = -math.inf

    def score(values, seed):  # higher is better; a diverged run scores worst
        v = get(values, seed)
        return sign * v if math.isfinite(v) else worst

    sa = [score(a, s) for s in seeds]
    sb = [score(b, s) for s in seeds]
    losing = [seed_name(s) for s, x, y in zip(seeds, sa, sb) if not (x > y and (x - y > margin or y == worst))]
    if losing:
        word = f"by more than {fmt(margin)} " if margin else ""
        return Outcome(False, f"A does not beat B {word}in {', '.join(losing)}{note}")
    finite = [(x, y) for x, y in zip(sa, sb) if math.isfinite(x) and math.isfinite(y)]
    if not finite:
        return Outcome(True, f"B diverged in every seed, A did not{note}")
    fa, fb = [x for x, _ in finite], [y for _, y in finite]
    gap = float(np.mean(fa) - np.mean(fb))
    spread = max(max(fa) - min(fa), max(fb) - min(fb))
    if len(finite) == 1:
        return Outcome(True, f"gap {fmt(gap)} in the only seed (no seed spread to compare){note}")
    if min(fa) > max(fb):
        return Outcome(True, f"every seed of A beats every seed of B (mean gap {fmt(gap)}){note}")
    if gap > spread_factor * spread:
        return Outcome(True, f"mean gap {fmt(gap)} > {fmt(spread_factor)} x seed range {fmt(spread)}{note}")
    return Outcome(
        False,
        f"effect in every seed, but mean gap {fmt(gap)} <= {fmt(spread_factor)} x "
        f"seed range {fmt(spread)} and the seeds overlap{note}",
    )


def every(values: dict[str, float], test, what: str) -> Outcome:
    """Hold when ``test(v)`` is true for every seed; a non-finite value never passes."""
    bad = [(s, v) for s, v in sorted(values.items()) if not (math.isfinite(v) and test(v))]
    if bad:
        shown = ", ".join(f"{seed_name(s)}: {fmt(v)}" if s else fmt(v) for s, v in bad)
        return Outcome(False, f"not {what} ({shown})")
    shown = ", ".join(fmt(v) for v in values.values())
    return Outcome(True, f"{what} in every seed ({shown})" if len(values) > 1 else f"{what} ({shown})")


def loglog_slope(x: list[float], y: list[float]) -> float:
    """Fit ``y ~ c * x^k`` by least squares on logs; return k (NaN if any value is not positive)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 2 or not (np.all(xs > 0) and np.all(ys > 0) and np.all(np.isfinite(ys))):
        return math.nan
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
