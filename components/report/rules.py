"""The verdict rule and small fits, on plain numbers (values keyed by seed label).

Every check reduces to a signed *margin* per seed (how far the seed lies on the claim's side of its
threshold; negative: against the claim) and, where the measurement has one, its own 95% half-width
(BLEU's bootstrap interval). Over the seeds the margins have a mean and an interval,
``mean +- sqrt((Z * sd / sqrt(n))**2 + u**2)``: the seed term shrinks with more seeds, the
measurement term ``u`` (the mean half-width: every seed is scored on the same test set) does not.

- ``holds``: every seed passes and the interval lies on the claim's side (``mean - half >= 0``);
- ``fails``: the evidence is against the claim: every seed refutes it beyond its own uncertainty,
  or the whole interval lies on the wrong side (``mean + half < 0``);
- ``inconclusive``: anything else: the seeds disagree, or the effect is inside its uncertainty.

``beats`` keeps the calibration prototypes' stricter condition for ``holds`` (every seed of A beats
every seed of B, or the mean gap exceeds ``spread_factor`` times the largest seed range). A
non-finite value is a diverged run: the worst possible outcome for its side.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import numpy as np

SPREAD_FACTOR = 3.0  # mean gap must exceed 3x the largest seed range (CALIBRATION.md)
Z = 2.0  # the interval over seeds: mean +- Z standard errors (about 95% for a normal mean)
MOST_SEEDS = 100  # a hint beyond this says the effect is too small for seeds to decide
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


@dataclass
class Outcome:
    """Whether a rule holds, and a sentence saying why."""

    holds: bool
    reason: str
    measurable: bool = True  # False: a precondition failed, so the rule could not be judged
    inconclusive: bool = False  # neither holds nor fails: the seeds disagree or the effect is in the noise
    evidence: dict = field(default_factory=dict)  # margins, interval, seeds the spread asks for

    @property
    def verdict(self) -> str:
        return HOLDS if self.holds else INCONCLUSIVE if self.inconclusive else FAILS


@dataclass
class Decision:
    """The verdict on per-seed margins, with the statistics it rests on."""

    verdict: str
    n: int
    mean: float | None
    sd: float | None
    seed_half: float | None  # Z * sd / sqrt(n)
    own_half: float  # the measurement's mean 95% half-width (0: none known)
    half: float | None  # the interval's half-width around the mean
    seeds_needed: int | None  # for an inconclusive verdict: about how many seeds the spread asks for
    why: str  # for an inconclusive verdict: what kept it from holds or fails

    def evidence(self, margins: dict[str, float], uncertainty: dict[str, float]) -> dict:
        """JSON-safe record for scorecard.json (the stability benchmark reads it)."""

        def num(v):
            return None if v is None or not math.isfinite(v) else round(float(v), 6)

        return {
            "margins": {s: num(v) if math.isfinite(v) else str(v) for s, v in margins.items()},
            "own_uncertainty": {s: num(v) for s, v in uncertainty.items() if v},
            "mean": num(self.mean),
            "sd": num(self.sd),
            "half_width": num(self.half),
            "seeds": self.n,
            "seeds_needed": self.seeds_needed,
        }


def decide(passed: dict[str, bool], margins: dict[str, float], uncertainty: dict[str, float] | None = None) -> Decision:
    """Apply the rule (module docstring) to per-seed pass flags, margins and own half-widths."""
    unc = {s: float((uncertainty or {}).get(s) or 0.0) for s in margins}
    n = len(margins)
    finite = [v for v in margins.values() if math.isfinite(v)]
    own = statistics.fmean(unc.values()) if unc else 0.0
    mean = sd = seed_half = half = None
    if finite and (len(finite) == n or len(finite) >= 2):
        mean = statistics.fmean(finite)
        sd = statistics.stdev(finite) if len(finite) >= 2 else 0.0
        seed_half = Z * sd / math.sqrt(len(finite))
        half = math.hypot(seed_half, own)
    all_pass = all(passed.values())
    refuted = all(not passed[s] and margins[s] < -unc[s] for s in margins)
    slack = 1e-9 * max(1.0, abs(mean)) if mean is not None else 0.0  # an interval that touches 0 is not across it
    if all_pass and (half is None or mean - half >= -slack):
        return Decision(HOLDS, n, mean, sd, seed_half, own, half, None, "")
    if refuted or (half is not None and mean + half < -slack):
        return Decision(FAILS, n, mean, sd, seed_half, own, half, None, "")
    against = [s for s in margins if not passed[s]]
    if against and len(against) < n:
        why = f"the seeds disagree ({len(against)} of {n} against: {', '.join(seed_name(s) for s in against)})"
    elif against:
        why = "every seed is against it, but inside its own uncertainty"
    else:
        why = "every seed passes, but the effect is inside its uncertainty"
    return Decision(INCONCLUSIVE, n, mean, sd, seed_half, own, half, _seeds_needed(mean, sd, own, n), why)


def _seeds_needed(mean: float | None, sd: float | None, own: float, n: int) -> int | None:
    """Seeds for the interval to exclude zero at the observed mean and spread: Z*sd/sqrt(N) below
    sqrt(mean^2 - own^2). None when seeds cannot decide (no spread, or the measurement's own
    uncertainty alone covers the mean)."""
    if mean is None or not sd or n < 2 or abs(mean) <= own:
        return None
    needed = math.ceil((Z * sd) ** 2 / (mean**2 - own**2))
    return max(needed, n + 1)


def interval_text(d: Decision) -> str:
    """``mean +0.107 +- 0.056 (2 SE over 3 seeds, sd 0.047; measurement +-0.015)``."""
    if d.mean is None or d.half is None or d.half == 0:  # no spread and no own uncertainty: nothing to add
        return ""
    if d.n == 1:
        return f"margin {sign(d.mean)} +- {fmt(d.own_half)} (its own 95% interval)" if d.own_half else ""
    own = f"; measurement +-{fmt(d.own_half)}" if d.own_half else ""
    return f"mean margin {sign(d.mean)} +- {fmt(d.half)} ({fmt(Z)} SE over {d.n} seeds, sd {fmt(d.sd)}{own})"


def sign(v: float) -> str:
    """A margin with its sign: ``+0.05``, ``-1.2``."""
    return ("+" if math.isfinite(v) and v >= 0 else "") + fmt(v)


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
    ua: dict[str, float] | None = None,
    ub: dict[str, float] | None = None,
) -> Outcome:
    """Apply the fair-verdict rule: does A beat B (higher or lower is better) beyond the seeds' spread?
    ``ua``/``ub``: each side's own 95% half-width per seed, where the measurement has one."""
    seeds, note = pair(a, b)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a)}, B: {sorted(b)})")
    sign_ = 1.0 if higher else -1.0
    worst = -math.inf

    def score(values, seed):  # higher is better; a diverged run scores worst
        v = get(values, seed)
        return sign_ * v if math.isfinite(v) else worst

    sa = {s: score(a, s) for s in seeds}
    sb = {s: score(b, s) for s in seeds}
    margins, passed, unc = {}, {}, {}
    for s in seeds:
        x, y = sa[s], sb[s]
        margins[s] = math.inf if y == worst and x != worst else -math.inf if x == worst else x - y - margin
        passed[s] = x > y and (x - y > margin or y == worst)
        unc[s] = math.hypot(get(ua, s) if ua else 0.0, get(ub, s) if ub else 0.0)
    d = decide(passed, margins, unc)
    finite = [(sa[s], sb[s]) for s in seeds if math.isfinite(sa[s]) and math.isfinite(sb[s])]
    fa, fb = [x for x, _ in finite], [y for _, y in finite]
    gap = float(np.mean(fa) - np.mean(fb)) if finite else math.nan
    spread = max(max(fa) - min(fa), max(fb) - min(fb)) if finite else math.nan
    stats = interval_text(d)
    stats = f"; {stats}" if stats and len(seeds) > 1 else ""
    evidence = d.evidence(margins, unc)
    losing = [seed_name(s) for s in seeds if not passed[s]]
    word = f"by more than {fmt(margin)} " if margin else ""
    if losing:
        reason = f"A does not beat B {word}in {', '.join(losing)}{note}{stats}"
        if d.verdict == FAILS:
            return Outcome(False, reason, evidence=evidence)
        return Outcome(False, reason, inconclusive=True, evidence=evidence | {"why": d.why})
    own = d.own_half
    if not finite:
        return Outcome(True, f"B diverged in every seed, A did not{note}", evidence=evidence)
    if own and gap - margin < own:  # the gap itself is inside the measurement's own interval
        return Outcome(
            False,
            f"A beats B in every seed, but the mean gap {fmt(gap)} is inside the measurement's own "
            f"+-{fmt(own)}{note}{stats}",
            inconclusive=True,
            evidence=evidence | {"why": "every seed passes, but the effect is inside its uncertainty"},
        )
    if len(finite) == 1:
        return Outcome(True, f"gap {fmt(gap)} in the only seed (no seed spread to compare){note}", evidence=evidence)
    if min(fa) > max(fb):
        return Outcome(True, f"every seed of A beats every seed of B (mean gap {fmt(gap)}){note}", evidence=evidence)
    if gap > spread_factor * spread:
        return Outcome(
            True, f"mean gap {fmt(gap)} > {fmt(spread_factor)} x seed range {fmt(spread)}{note}", evidence=evidence
        )
    # the effect shows in every seed, but not beyond the spread: more seeds can settle it
    needed = _seeds_needed(gap - margin, _paired_sd(sa, sb, seeds), own, len(finite)) if d.n > 1 else None
    return Outcome(
        False,
        f"effect in every seed, but mean gap {fmt(gap)} <= {fmt(spread_factor)} x "
        f"seed range {fmt(spread)} and the seeds overlap{note}{stats}",
        inconclusive=True,
        evidence=evidence | {"seeds_needed": needed or d.seeds_needed, "why": "the effect is inside the seeds' spread"},
    )


def _paired_sd(sa: dict[str, float], sb: dict[str, float], seeds: list[str]) -> float | None:
    diffs = [sa[s] - sb[s] for s in seeds if math.isfinite(sa[s]) and math.isfinite(sb[s])]
    return statistics.stdev(diffs) if len(diffs) >= 2 else None


def judged(
    passed: dict[str, bool],
    margins: dict[str, float],
    unc: dict[str, float] | None,
    ok_text: str,
    bad_text: str,
) -> Outcome:
    """An Outcome from per-seed margins: ``ok_text`` when it holds, ``bad_text`` (the seeds against,
    with their numbers) otherwise, each followed by the interval the verdict rests on."""
    d = decide(passed, margins, unc)
    stats = interval_text(d)
    evidence = d.evidence(margins, unc or {})
    if d.verdict == HOLDS:
        return Outcome(True, ok_text + (f"; {stats}" if stats else ""), evidence=evidence)
    text = bad_text if not all(passed.values()) else ok_text
    text += f"; {stats}" if stats else ""
    if d.verdict == FAILS:
        return Outcome(False, text, evidence=evidence)
    return Outcome(False, text, inconclusive=True, evidence=evidence | {"why": d.why})


def every(
    values: dict[str, float], test, what: str, margin=None, uncertainty: dict[str, float] | None = None
) -> Outcome:
    """Hold when ``test(v)`` is true for every seed beyond the spread; a non-finite value never passes.
    ``margin(v)``: how far ``v`` is on the passing side (default 0 for a pass, -inf for a failure)."""
    passed = {s: math.isfinite(v) and bool(test(v)) for s, v in values.items()}
    margins = {
        s: (margin(v) if margin and math.isfinite(v) else 0.0 if passed[s] else -math.inf) for s, v in values.items()
    }
    bad = [(s, v) for s, v in sorted(values.items()) if not passed[s]]
    shown_bad = ", ".join(f"{seed_name(s)}: {fmt(v)}" if s else fmt(v) for s, v in bad)
    shown = ", ".join(fmt(v) for v in values.values())
    ok = f"{what} in every seed ({shown})" if len(values) > 1 else f"{what} ({shown})"
    return judged(passed, margins, uncertainty, ok, f"not {what} ({shown_bad})")


def loglog_slope(x: list[float], y: list[float]) -> float:
    """Fit ``y ~ c * x^k`` by least squares on logs; return k (NaN if any value is not positive)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 2 or not (np.all(xs > 0) and np.all(ys > 0) and np.all(np.isfinite(ys))):
        return math.nan
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
