"""Verdicts on per-seed numbers: a check's quantity and region handed to the statistical core
(``components/stats.py``), and the sentence that says why.

Every check reduces to a quantity per seed (a margin past a threshold, a value, a paired difference,
a log ratio) with, where the measurement records one, its own standard error, and a region the
claim says the quantity lies in (``> 0``, or ``[low, high]``). ``holds`` when the 95% interval of
the quantity's mean lies inside the region, ``fails`` when it lies wholly outside, ``inconclusive``
otherwise, with the seeds a decision would need. A non-finite value is a diverged run: the worst
possible outcome for its side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: `check` reads these modules without it
    import numpy as np

from components import stats
from components.stats import FAILS, HOLDS, INCONCLUSIVE, MOST_SEEDS, Z95

SPREAD_FACTOR = 3.0  # accepted from older pipelines (``spread_factor:``); the verdict no longer uses it
__all__ = ["FAILS", "HOLDS", "INCONCLUSIVE", "MOST_SEEDS", "SPREAD_FACTOR", "Z95"]


@dataclass
class Outcome:
    """Whether a rule holds, and a sentence saying why."""

    holds: bool
    reason: str
    measurable: bool = True  # False: a precondition failed, so the rule could not be judged
    inconclusive: bool = False  # neither holds nor fails
    evidence: dict = field(default_factory=dict)  # the quantity per seed, its interval, p-values, seeds needed

    @property
    def verdict(self) -> str:
        return HOLDS if self.holds else INCONCLUSIVE if self.inconclusive else FAILS


def judge(
    values: dict[str, float],
    own_se: dict[str, float] | None,
    ok_text: str,
    bad_text: str,
    *,
    low: float | None = 0.0,
    high: float | None = None,
    strict: bool = False,
    exact: bool = False,
    quantity: str = "margin",
    level: float = stats.ALPHA / 2,
    own_df: float = math.inf,
    bounds: tuple[float, float] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
) -> Outcome:
    """Decide whether the per-seed ``values`` lie in ``[low, high]`` (default: above 0) and say why.

    ``ok_text`` leads the reason when the seeds sit on the claim's side, ``bad_text`` otherwise;
    the interval, the test and its p-value follow. ``level``: each verdict's one-sided level;
    ``own_df``: the own errors' degrees of freedom; ``bounds``: the quantity's range where known;
    ``replicates``: per seed, the quantity on the measurement's bootstrap resamples (shared by the
    seeds), whose covariance between seeds is the test-set error every seed shares."""
    est = estimate(values, own_se, exact=exact, own_df=own_df, bounds=bounds, replicates=replicates)
    decision = stats.decide(est, low, high, strict=strict, level=level)
    return outcome(decision, values, own_se, ok_text, bad_text, quantity, strict=strict)


def estimate(
    values: dict[str, float],
    own_se: dict[str, float] | None,
    *,
    exact: bool = False,
    own_df: float = math.inf,
    bounds: tuple[float, float] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
) -> stats.Estimate:
    """The per-seed values' estimate (``stats.one_sample``), the replicates used only where every seed has them."""
    seeds = list(values)
    own = [float((own_se or {}).get(s) or 0.0) for s in seeds]
    reps = [replicates[s] for s in seeds] if replicates and all(s in replicates for s in seeds) else None
    return stats.one_sample([values[s] for s in seeds], own, exact=exact, own_df=own_df, bounds=bounds, replicates=reps)


def judge_all(
    parts: list[tuple[str, dict[str, float], dict[str, float] | None]],
    ok_text: str,
    bad_text: str,
    *,
    exact: bool = False,
    level: float = stats.ALPHA / 2,
    replicates: list[dict[str, np.ndarray] | None] | None = None,
) -> Outcome:
    """A claim that is several statements at once (each part's quantity above 0): it holds when every
    part holds (an intersection-union test: the largest p), fails when any part fails beyond a
    Bonferroni correction over the parts, and is inconclusive otherwise. The reason and evidence are
    the deciding part's: the weakest for holds, the strongest against. ``replicates``: per part, as
    in :func:`judge`."""
    decisions = []
    for j, (_, values, own_se) in enumerate(parts):
        reps = replicates[j] if replicates else None
        est = estimate(values, own_se, exact=exact, replicates=reps)
        decisions.append(stats.decide(est, 0.0, strict=True, level=level))
    k = len(decisions)
    p_holds = max(d.p_holds for d in decisions)
    p_fails = min(1.0, min(d.p_fails for d in decisions) * k)
    if p_fails <= level and p_fails < p_holds:
        i = min(range(k), key=lambda j: decisions[j].p_fails)
    else:
        i = max(range(k), key=lambda j: decisions[j].p_holds)
    d = decisions[i]
    verdict = HOLDS if p_holds <= level else FAILS if p_fails <= level else INCONCLUSIVE
    d.p_holds, d.p_fails, d.verdict = p_holds, p_fails, verdict
    if verdict == INCONCLUSIVE and not d.why:
        if d.lo is not None:
            d.why, d.seeds_needed = stats._why(d), stats.seeds_needed(d)
        else:
            d.why = f"a part fails on its own, but not after the correction over the {k} parts (p = {p_fails:.3g})"
    label, values, own_se = parts[i]
    out = outcome(d, values, own_se, ok_text, bad_text, label, strict=True)
    out.evidence["parts"] = k
    return out


def outcome(
    d: stats.Decision,
    values: dict[str, float],
    own_se: dict[str, float] | None,
    ok_text: str,
    bad_text: str,
    quantity: str = "margin",
    *,
    strict: bool = False,
) -> Outcome:
    """An Outcome from a decision: the reason names the seeds and the test. ``ok_text`` leads it when
    every seed lies on the claim's side (past its edge when ``strict``: a tie beats nothing)."""
    low, high = d.region

    def inside(v: float) -> bool:
        if math.isnan(v):
            return False
        above = low is None or (v > low if strict else v >= low)
        return above and (high is None or (v < high if strict else v <= high))

    on_side = all(inside(v) for v in values.values())
    text = ok_text if on_side else bad_text
    detail = interval_text(d, quantity)
    reason = text + (f"; {detail}" if detail else "")
    evidence = d.evidence() | {
        "values": {s: _json(v) for s, v in values.items()},
        "quantity": quantity,
        "region": [_json(b) if b is not None else None for b in d.region],
    }
    if own_se and any(own_se.values()):
        evidence["own_se"] = {s: round(float(u), 6) for s, u in own_se.items() if u}
    if d.verdict == INCONCLUSIVE:
        if d.estimate.method == "single":
            reason += f"; {d.why}"
        return Outcome(False, reason, inconclusive=True, evidence=evidence)
    return Outcome(d.verdict == HOLDS, reason, evidence=evidence)


def _json(v: float) -> float | str:
    return round(float(v), 6) if math.isfinite(v) else str(v)


def interval_text(d: stats.Decision, quantity: str = "margin") -> str:
    """``mean margin +0.107, 95% CI [+0.05, +0.16] (t, 2 df, 3 seeds, sd 0.02; own se 0.01), p = 0.004``."""
    e = d.estimate
    if e.method in ("exact", "single"):
        return (
            "exact value"
            if e.method == "exact" and e.n == 1
            else ("exact in every seed" if e.method == "exact" else "")
        )
    if e.method == "median":
        k = d.extra.get("on_side", 0)
        return d.why or (
            f"median {quantity} {sign(e.mean)}, {stats._cover(d.level)} CI [{sign(d.lo)}, {sign(d.hi)}] "
            f"(exact sign test, {k} of {e.n} seeds on the claim's side), p = {d.p:.2g}"
        )
    if e.method in ("identical", "sign"):
        test = {"bounded": "bounded-mean betting test", "ranks": "exact rank test", "sign": "exact sign test"}
        return d.why or (
            f"{'identical in all' if e.method == 'identical' else 'a seed diverged:'} {e.n} seeds, "
            f"{test.get(d.test, d.test)}, p = {fmt(d.p)}"
        )
    own = f"; own se {fmt(e.own_se)}" if e.own_se else ""
    if e.method == "own":
        test = "its own interval"
    else:
        df = "inf" if not math.isfinite(e.df) else f"{e.df:.3g}"
        test = f"{'Welch' if e.method == 'welch' else 't'}, {df} df, {e.n} seeds, sd {fmt(e.sd)}{own}"
    low, high = d.region
    crit = ""
    if d.verdict == INCONCLUSIVE and e.se > 0 and d.t_crit is not None and (low is None or high is None):
        bound = low if low is not None else high
        crit = f", t = {abs(e.mean - bound) / e.se:.3g} below the critical {d.t_crit:.3g}"
    own_df = f", own {e.own_df:.3g} df" if e.own_se and math.isfinite(e.own_df) and e.method == "own" else ""
    shared = "; shared test-set error from the bootstrap replicates" if e.variance == "shared" else ""
    cover = stats._cover(d.level)
    nearer = ""
    if low is not None and high is not None:  # two bounds: the table's margin, to the nearer one, said here too
        m_lo, m_hi = d.margin_interval
        nearer = f"; margin to the nearer bound {sign(d.margin)} [{sign(m_lo)}, {sign(m_hi)}]"
    return (
        f"mean {quantity} {sign(e.mean)}, {cover} CI [{sign(d.lo)}, {sign(d.hi)}] ({test}{own_df}{shared}){crit}"
        f"{nearer}, p = {d.p:.2g}"
    )


def sign(v: float) -> str:
    """A margin with its sign: ``+0.05``, ``-1.2``."""
    return ("+" if math.isfinite(v) and v >= 0 else "") + fmt(v)


def fmt(v: float) -> str:
    """Format a measured number compactly (4 significant digits; nan/inf by name)."""
    if v is None:
        return "?"
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
    ua: dict[str, float] | None = None,
    ub: dict[str, float] | None = None,
    pair_se: dict[str, float] | None = None,
    paired: bool | None = None,
    level: float = stats.ALPHA / 2,
    bounds: tuple[float, float] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
) -> Outcome:
    """Does A beat B (higher or lower is better) by more than ``margin``? Seeds with the same label
    are paired (same seed, same data: a paired t test on the differences) unless ``paired`` is
    False, which compares the two groups by Welch's test. ``ua``/``ub``: each side's own standard
    error per seed; ``pair_se``: the difference's own standard error per seed where a paired test
    on the same test sentences measured it (it replaces ``ua``/``ub``, which ignore the pairing).
    ``bounds``: the range of A and B where known (proportions), for seeds with no spread;
    ``replicates``: per seed, A - B on the bootstrap resamples every seed shares."""
    import numpy as np

    sgn = 1.0 if higher else -1.0
    word = f"by more than {fmt(margin)} " if margin else ""
    constant = set(a) == {""} or set(b) == {""}
    if paired is False and not constant:
        return _welch(a, b, sgn, margin, ua, ub, word, level)
    seeds, note = pair(a, b)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a)}, B: {sorted(b)})")
    diffs, own = {}, {}
    for s in seeds:
        x, y = get(a, s), get(b, s)
        if not math.isfinite(x):
            diffs[s] = -math.inf  # A diverged: the worst outcome for A
        elif not math.isfinite(y):
            diffs[s] = math.inf
        else:
            diffs[s] = sgn * (x - y) - margin
        if pair_se and s in pair_se:
            own[s] = pair_se[s]
        else:
            own[s] = math.hypot(_at(ua, s), _at(ub, s))
    shown = "; ".join(f"{seed_name(s)}: {fmt(get(a, s))} vs {fmt(get(b, s))}" for s in seeds)
    losing = [seed_name(s) for s in seeds if not diffs[s] > 0]
    ok = f"A beats B {word}in every seed ({shown}){note}"
    if all(not math.isfinite(get(b, s)) for s in seeds) and all(math.isfinite(get(a, s)) for s in seeds):
        ok = f"B diverged in every seed, A did not ({shown}){note}"
    bad = f"A does not beat B {word}in {', '.join(losing)} ({shown}){note}"
    quantity = "paired difference" + (" past the margin" if margin else "") if len(seeds) > 1 else "difference"
    span = None
    if bounds is not None:
        lo_b, hi_b = bounds
        span = (sgn * (lo_b - hi_b) - margin, sgn * (hi_b - lo_b) - margin)
        span = (min(span), max(span))
    reps = None
    if replicates:
        reps = {s: sgn * np.asarray(replicates[s], dtype=float) - margin for s in seeds if s in replicates}
    return judge(
        diffs, own, ok, bad, low=0.0, strict=True, quantity=quantity, level=level, bounds=span, replicates=reps
    )


def _at(values: dict[str, float] | None, seed: str) -> float:
    if not values:
        return 0.0
    return float(values.get("", 0.0) if set(values) == {""} else values.get(seed, 0.0))


def _welch(a, b, sgn, margin, ua, ub, word, level=stats.ALPHA / 2) -> Outcome:
    va = [sgn * v for v in a.values()]
    vb = [sgn * v + margin for v in b.values()]
    shown = f"A: {', '.join(fmt(v) for v in a.values())}; B: {', '.join(fmt(v) for v in b.values())}"
    if len(va) < 2 or len(vb) < 2 or not all(math.isfinite(v) for v in va + vb):
        return Outcome(
            False,
            f"unpaired comparison ({shown}) needs 2 or more finite values a side",
            inconclusive=True,
            evidence={"why": "Welch's test needs 2 finite values a side", "seeds_needed": 2},
        )
    est = stats.two_sample(va, vb, list((ua or {}).values()), list((ub or {}).values()))
    d = stats.decide(est, 0.0, None, strict=True, level=level)
    ok = f"A beats B {word}on average, unpaired ({shown})"
    bad = f"A does not beat B {word}on average, unpaired ({shown})"
    return outcome(d, {"mean": est.mean}, None, ok if est.mean > 0 else bad, bad, "difference of means")


def every(
    values: dict[str, float],
    test,
    what: str,
    margin=None,
    uncertainty: dict[str, float] | None = None,
    exact: bool = False,
    level: float = stats.ALPHA / 2,
) -> Outcome:
    """Hold when ``test(v)`` is true beyond the seeds' spread; a non-finite value never passes.
    ``margin(v)``: how far ``v`` is on the passing side (without it, the pass/fail outcome itself:
    +1 or -1 per seed, decided only when every seed agrees)."""
    passed = {s: math.isfinite(v) and bool(test(v)) for s, v in values.items()}
    margins = {
        s: (margin(v) if margin and math.isfinite(v) else (1.0 if passed[s] else -math.inf)) for s, v in values.items()
    }
    bad = [(s, v) for s, v in sorted(values.items()) if not passed[s]]
    shown_bad = ", ".join(f"{seed_name(s)}: {fmt(v)}" if s else fmt(v) for s, v in bad)
    shown = ", ".join(fmt(v) for v in values.values())
    ok = f"{what} in every seed ({shown})" if len(values) > 1 else f"{what} ({shown})"
    return judge(margins, uncertainty, ok, f"not {what} ({shown_bad})", exact=exact, level=level)


def loglog_slope(x: list[float], y: list[float]) -> float:
    """Fit ``y ~ c * x^k`` by least squares on logs; return k (NaN if any value is not positive)."""
    return loglog_fit(x, y)[0]


def loglog_fit_se(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """``(k, se, df)``: the log-log slope, its standard error and its degrees of freedom (points - 2,
    ``scipy.stats.linregress`` on the logs); se and df are NaN with two points or fewer."""
    import numpy as np
    from scipy import stats as sps

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 2 or not (np.all(xs > 0) and np.all(ys > 0) and np.all(np.isfinite(ys))):
        return math.nan, math.nan, math.nan
    if len(xs) == 2:
        return float(np.polyfit(np.log(xs), np.log(ys), 1)[0]), math.nan, math.nan
    fit = sps.linregress(np.log(xs), np.log(ys))
    return float(fit.slope), float(fit.stderr), float(len(xs) - 2)


def loglog_fit(x: list[float], y: list[float]) -> tuple[float, float]:
    """``(k, half)``: the log-log slope and its 95% half-width (Student t with points - 2 df on the
    fit's residuals, ``scipy.stats.linregress``); the half-width is NaN with two points, which leave
    no residual to judge the fit by."""
    import numpy as np
    from scipy import stats as sps

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 2 or not (np.all(xs > 0) and np.all(ys > 0) and np.all(np.isfinite(ys))):
        return math.nan, math.nan
    if len(xs) == 2:
        return float(np.polyfit(np.log(xs), np.log(ys), 1)[0]), math.nan
    fit = sps.linregress(np.log(xs), np.log(ys))
    return float(fit.slope), float(sps.t.ppf(1 - stats.ALPHA / 2, len(xs) - 2) * fit.stderr)
