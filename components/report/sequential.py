"""Planned group-sequential decisions: seeds added look by look, the error spent across the looks.

Looking again after adding seeds is a second test: run at 2.5% each time, three looks at 3, 6 and 10
seeds give a false ``holds`` about 6% of the time, not 2.5%. A group-sequential design fixes the
looks in advance and spends the one-sided error ``ALPHA / 2`` across them (Jennison & Turnbull 2000,
ch. 7; Lan & DeMets 1983):

- :func:`looks`: the seed counts of the looks, from the first look and the largest count, roughly
  doubling (3 -> 6 -> 10), at most ``MOST_LOOKS``.
- :func:`spend`: the Lan-DeMets spending function, O'Brien-Fleming type (little error early) or
  Pocock type (about even), over the information fractions ``t_k = n_k / n_max``.
- :func:`boundaries`: each look's normal boundary ``c_k``, solved so that the chance of a first
  crossing at look ``k`` under the null is the error spent there, from the canonical joint
  distribution of the looks' statistics (``corr(Z_j, Z_k) = sqrt(t_j / t_k)``) by the recursive
  numerical integration of Jennison & Turnbull ch. 19 (Armitage, McPherson & Rowe 1969): exact to
  about 1e-9, deterministic, and checked against ``scipy.stats.multivariate_normal.cdf`` in the tests.
- each interim look's nominal level ``p_k = 1 - Phi(c_k)``: a look decides when its test's one-sided
  p-value (Student's t at the look's seeds, as in ``stats.decide``) is at most ``p_k``. A t p-value is
  uniform under the null at any df, so each look's own false rate is exact; but the looks' t statistics
  are less correlated than the normal ones the boundaries assume (each look estimates its own spread),
  and with the normal design's levels throughout, 3 -> 6 -> 10 seeds gave 2.6% false holds (400,000
  simulations, MCSE 0.03%), not 2.5%. Calibrated: the last look's level is what the interim looks
  leave, ``p_K = ALPHA / 2 - sum(p_k, k < K)`` (0.0212 instead of 0.0238 for 3 -> 6 -> 10), so the false
  rate is at most ``ALPHA / 2`` by the union bound whatever the looks' dependence: for t tests at any
  df, the exact sign test of a diverged seed, Welch's test, a claim's several checks. It costs about 2
  points of power at 3 -> 6 -> 10 (0.7 at 5 -> 10); ``benchmarks/sequential_calibration.py`` measures it.

``holds`` and ``fails`` are two symmetric one-sided tests, each with its own boundaries at
``ALPHA / 2``, as the fixed design's are. A look is re-judged from the first ``n_k`` seeds (seed labels
in natural order), so a rerun with the same seeds walks the same looks to the same answer: a nightly
run continues where the last one stopped, and the looks already taken count in the error spent.

:func:`walk` takes the looks one by one up to the seeds available and stops at the first that
decides. Its stage-wise p-value orders outcomes by the look they stop at, then by the p-value there
(the stagewise ordering of Jennison & Turnbull 8.4), with the union bound for the chance of stopping
earlier: ``p = sum(p_j, j < k) + p_look``. It is a valid one-sided p-value for the whole sequential
test (``P(p <= u) <= u`` under the null, whatever the looks' dependence), so Holm's adjustment across
the scorecard stays valid when it reads it in place of the fixed design's p; it is at most the error
spent by look ``k`` exactly when look ``k`` decides.

Futility (non-binding): at an interim look that did not decide, the conditional power at the last
look under the current trend (Lan, Simon & Halperin 1982; in the B-value form of Lan & Wittes 1988:
``1 - Phi((c_K - z_k / sqrt(t_k)) / sqrt(1 - t_k))``) is computed for both directions; when both are
below ``futility`` the walk stops as ``futile``. The boundaries are computed as if it never stopped
for futility, so stopping (or ignoring it and going on) never raises the false rates of holds and
fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it is used: `check` reads these modules without it
    import numpy as np

from components.stats import (  # the scorecard's words for why looks stopped come from the core
    ALPHA,
    DECIDED,
    FAILS,
    FUTILE,
    HOLDS,
    INCONCLUSIVE,
    MAX_SEEDS,
    NOT_MEASURED,
    OPEN,
    STOPS,
)

ONE_SIDED = ALPHA / 2  # each verdict's error over all its looks, as the fixed design's
SPENDINGS = ("obrien-fleming", "pocock")
MOST_LOOKS = 4  # more looks than this buy little (Jennison & Turnbull 2000, 7.2) and cost runs
FUTILITY = 0.05  # stop when neither verdict reaches this conditional power at the last look
BEFORE_FIRST = 1e-12  # the level of a judgement before the first look: it spends nothing to speak of
_LOW = -9.0  # the integration grid's floor on the z scale (below it the mass is under 1e-18)
_HIGH = 9.0  # its ceiling where a look has no boundary to stop at
_POINTS = 1201  # grid points per look (Simpson's rule, odd)


def looks(first: int, max_seeds: int) -> list[int]:
    """The planned seed counts: ``first``, then doubling while below ``max_seeds``, then ``max_seeds``.

    An interim look is dropped when the step after it to ``max_seeds`` would add less than a quarter of
    ``max_seeds`` (a look at 8 then 10 of 10 buys little). When doubling would give more than
    ``MOST_LOOKS`` looks, they are ``MOST_LOOKS`` evenly spaced on a log scale instead. ``first >=
    max_seeds`` is a single look at ``first``.

    ``looks(3, 10) == [3, 6, 10]``, ``looks(5, 10) == [5, 10]``, ``looks(2, 20) == [2, 4, 8, 20]``,
    ``looks(5, 11) == [5, 11]``, ``looks(2, 40) == [2, 5, 15, 40]``."""
    if isinstance(first, bool) or isinstance(max_seeds, bool) or int(first) != first or int(max_seeds) != max_seeds:
        raise ValueError(f"looks: the seed counts must be whole numbers, got {first!r} and {max_seeds!r}")
    first, max_seeds = int(first), int(max_seeds)
    if first < 1 or max_seeds < 1:
        raise ValueError(f"looks: the seed counts must be at least 1, got first {first} and max_seeds {max_seeds}")
    if first >= max_seeds:
        return [first]
    out = [first]
    while 2 * out[-1] < max_seeds:
        out.append(2 * out[-1])
    while len(out) > 1 and 4 * (max_seeds - out[-1]) < max_seeds:
        out.pop()
    if len(out) < MOST_LOOKS:
        return out + [max_seeds]
    ratio = (max_seeds / first) ** (1 / (MOST_LOOKS - 1))  # too many doublings: evenly spaced on a log scale
    return sorted({first, max_seeds} | {round(first * ratio**k) for k in range(1, MOST_LOOKS - 1)})


def fractions(counts: Sequence[int]) -> list[float]:
    """The information fractions ``t_k = n_k / n_max`` of planned seed counts."""
    if not counts or any(b <= a for a, b in zip(counts, counts[1:])):
        raise ValueError(f"the looks must be increasing seed counts, got {list(counts)}")
    return [n / counts[-1] for n in counts]


def spend(t: float, alpha: float = ONE_SIDED, spending: str = "obrien-fleming") -> float:
    """The error spent by information fraction ``t`` (Lan & DeMets 1983; Kim & DeMets 1987):
    O'Brien-Fleming type ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``, Pocock type ``alpha ln(1 + (e - 1) t)``."""
    from scipy import stats

    if not 0 < t <= 1:
        raise ValueError(f"spend: the information fraction must be in (0, 1], got {t}")
    if spending == "obrien-fleming":
        return float(2 * stats.norm.sf(stats.norm.isf(alpha / 2) / math.sqrt(t)))
    if spending == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"spend: spending must be one of {', '.join(SPENDINGS)}, got {spending!r}")


def _simpson(upper: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid points on [_LOW, upper] and their Simpson weights."""
    import numpy as np

    z = np.linspace(_LOW, upper, _POINTS)
    h = (upper - _LOW) / (_POINTS - 1)
    w = np.full(_POINTS, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return z, w * h / 3


class _Recursion:
    """The sub-density of the look statistics under the null on the continuation region, look by look
    (Jennison & Turnbull 2000, 19.2): ``Z_k = (S_1 + ... ) / sqrt(t_k)`` with independent normal
    increments, so ``Z_k * sqrt(t_k) - Z_{k-1} * sqrt(t_{k-1}) ~ N(0, t_k - t_{k-1})``."""

    def __init__(self, t: Sequence[float]):
        self.t = list(t)
        self.grids: list[tuple[np.ndarray, np.ndarray]] = []  # per look passed: points, weight x density

    def cross(self, k: int, c: float) -> float:
        """P(no crossing before look k, Z_k >= c) under the null (k from 0; looks before k added)."""
        import numpy as np
        from scipy import stats

        if k == 0:
            return float(stats.norm.sf(c))
        z, wf = self.grids[k - 1]
        tk, tj = self.t[k], self.t[k - 1]
        arg = (c * math.sqrt(tk) - z * math.sqrt(tj)) / math.sqrt(tk - tj)
        return float(np.dot(wf, stats.norm.sf(arg)))

    def add(self, c: float) -> None:
        """Pass the next look with boundary ``c``: its density on (-inf, c) becomes the next grid."""
        from scipy import stats

        k = len(self.grids)
        y, w = _simpson(min(c, _HIGH))
        if k == 0:
            self.grids.append((y, w * stats.norm.pdf(y)))
            return
        z, wf = self.grids[k - 1]
        tk, tj = self.t[k], self.t[k - 1]
        sd = math.sqrt(tk - tj)
        kernel = stats.norm.pdf((y[:, None] * math.sqrt(tk) - z[None, :] * math.sqrt(tj)) / sd) * math.sqrt(tk) / sd
        self.grids.append((y, w * (kernel @ wf)))


def crossings(bounds: Sequence[float], t: Sequence[float]) -> list[float]:
    """P(the first crossing of the upper boundaries is at look k) under the null, for each look."""
    rec, out = _Recursion(t), []
    for k, c in enumerate(bounds):
        out.append(rec.cross(k, c))
        if k + 1 < len(bounds):
            rec.add(c)
    return out


@lru_cache(maxsize=64)
def _solve(t: tuple[float, ...], alpha: float, spending: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    from scipy import optimize, stats

    spent = [spend(x, alpha, spending) for x in t]
    rec, bounds = _Recursion(t), []
    for k, total in enumerate(spent):
        step = total - (spent[k - 1] if k else 0.0)
        if k == 0:
            c = float(stats.norm.isf(step))
        else:
            c = float(optimize.brentq(lambda x, k=k, step=step: rec.cross(k, x) - step, -5.0, 40.0, xtol=1e-12))
        bounds.append(c)
        if k + 1 < len(t):
            rec.add(c)
    return tuple(bounds), tuple(spent)


def boundaries(t: Sequence[float], alpha: float = ONE_SIDED, spending: str = "obrien-fleming") -> list[float]:
    """The upper z boundaries ``c_k`` of a one-sided design at information fractions ``t`` (the last 1):
    P(first crossing at look k | null) equals the error spent between look k - 1 and look k."""
    t = tuple(float(x) for x in t)
    if not t or t[-1] != 1.0 or any(b <= a for a, b in zip(t, t[1:])) or t[0] <= 0:
        raise ValueError(f"boundaries: the information fractions must increase to 1, got {list(t)}")
    return list(_solve(t, float(alpha), spending)[0])


@dataclass(frozen=True)
class Design:
    """A planned group-sequential design over seed counts: its looks, boundaries and nominal levels.

    ``bounds`` are the Lan-DeMets normal boundaries; ``levels[k]`` is the one-sided level look ``k`` is
    tested at (``1 - Phi(c_k)`` at an interim look, what the interim looks leave at the last), and
    ``spent[k]`` the error spent by look ``k`` (per direction: the sum of the levels so far, which
    bounds the chance of a false verdict by then; ``alpha`` at the last look)."""

    looks: tuple[int, ...]
    spending: str = "obrien-fleming"
    alpha: float = ONE_SIDED
    futility: float = FUTILITY
    bounds: tuple[float, ...] = field(init=False)
    spent: tuple[float, ...] = field(init=False)
    levels: tuple[float, ...] = field(init=False)

    def __post_init__(self):
        import numpy as np
        from scipy import stats

        if self.spending not in SPENDINGS:
            raise ValueError(f"spending must be one of {', '.join(SPENDINGS)}, got {self.spending!r}")
        if not 0 <= self.futility < 1:
            raise ValueError(f"futility must be a conditional power in [0, 1), got {self.futility!r}")
        counts = tuple(int(n) for n in self.looks)
        bounds, _ = _solve(tuple(fractions(counts)), float(self.alpha), self.spending)
        levels = [float(stats.norm.sf(c)) for c in bounds[:-1]]
        levels.append(float(self.alpha) - sum(levels))  # the union bound: at most alpha over all looks
        object.__setattr__(self, "looks", counts)
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "levels", tuple(levels))
        object.__setattr__(self, "spent", tuple(float(x) for x in np.cumsum(levels)))

    @classmethod
    def planned(cls, first: int, max_seeds: int, **kw) -> Design:
        """The design of :func:`looks` ``(first, max_seeds)``."""
        return cls(tuple(looks(first, max_seeds)), **kw)

    @property
    def fractions(self) -> list[float]:
        return fractions(self.looks)

    def stagewise_p(self, k: int, p: float | None) -> float | None:
        """The stage-wise p-value of a walk that stopped at look ``k`` (from 0) with one-sided p-value
        ``p`` there: the levels of the looks passed before it plus ``p`` (at most ``spent[k]`` exactly
        when look ``k`` decides)."""
        if p is None or not math.isfinite(p):
            return None
        return float(min(1.0, (self.spent[k - 1] if k else 0.0) + max(0.0, p)))

    def conditional_power(self, k: int, p: float | None) -> float | None:
        """The chance that the last look decides this direction, given a one-sided p-value ``p`` at
        look ``k`` and the current trend (B-value form; None at the last look or without a p)."""
        from scipy import stats

        t = self.fractions[k]
        if p is None or not math.isfinite(p) or t >= 1:
            return None
        z = float(stats.norm.isf(min(1.0, max(0.0, p))))
        if math.isinf(z):
            return 1.0 if z > 0 else 0.0
        last = float(stats.norm.isf(self.levels[-1]))  # the last look's boundary as it is tested
        return float(stats.norm.sf((last - z / math.sqrt(t)) / math.sqrt(1 - t)))


@dataclass
class Walk:
    """What walking the looks did: the looks planned and taken, the seeds the last one used, the error
    spent by it, why it stopped, and the seeds of the next planned look."""

    design: Design
    taken: list[int]
    seeds: int
    stopped: str
    next_seeds: int | None
    result: Any  # what judge_at returned at the last look taken
    verdict: str
    p_holds: float | None  # stage-wise, over the looks taken
    p_fails: float | None
    look_p: tuple[float | None, float | None]  # the last look's own one-sided p-values (holds, fails)
    power: tuple[float | None, float | None] = (None, None)  # conditional power at the last look

    @property
    def spent(self) -> float:
        return self.design.spent[len(self.taken) - 1] if self.taken else 0.0

    @property
    def level(self) -> float | None:
        return self.design.levels[len(self.taken) - 1] if self.taken else None

    @property
    def p(self) -> float | None:
        """The two-sided stage-wise p-value ``2 * min(p_holds, p_fails)`` (what Holm reads)."""
        if self.p_holds is None or self.p_fails is None:
            return None
        return min(1.0, 2 * min(self.p_holds, self.p_fails))

    def block(self) -> dict[str, Any]:
        """The ``sequential`` entry of a claim in scorecard.json."""
        d = self.design
        return {
            "looks": list(d.looks),
            "taken": list(self.taken),
            "seeds": self.seeds,
            "spent": _round(self.spent),
            "stopped": self.stopped,
            "next_seeds": self.next_seeds,
            "level": _round(self.level),
            "levels": [_round(x) for x in d.levels],
            "spending": d.spending,
            "p_look": {"holds": _round(self.look_p[0]), "fails": _round(self.look_p[1])},
            "conditional_power": None
            if self.power == (None, None)
            else {"holds": _round(self.power[0]), "fails": _round(self.power[1])},
        }


def _round(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.6g}")


def _read(result: Any) -> tuple[str, float | None, float | None]:
    """A verdict and its one-sided p-values from a claim entry (a mapping) or ``(verdict, p_holds, p_fails, ...)``."""
    if isinstance(result, Mapping):
        return result["verdict"], result.get("p_holds"), result.get("p_fails")
    verdict, p_holds, p_fails = result[:3]
    return verdict, p_holds, p_fails


def walk(judge_at: Callable[[int, float], Any], design: Design, available: int) -> Walk:
    """Judge the looks ``design.looks`` in order, each on its first ``n_k`` seeds at its nominal level
    (``judge_at(n_k, level_k)``), up to the largest look within ``available`` seeds; stop at the first
    look that decides (``holds`` or ``fails``), at a futile one, or at the last one taken.

    Fewer seeds than the first look: judged on those at level ``BEFORE_FIRST`` (1e-12: no error spent
    to speak of; only an exact or identical outcome decides), ``open`` with the first look's seeds next
    (also when too few seeds leave it not measured). A look whose claim is not measured stops the walk
    (``not_measured``)."""
    reachable = [n for n in design.looks if n <= available]
    if not reachable:
        result = judge_at(available, BEFORE_FIRST)
        verdict, ph, pf = _read(result)
        stopped = DECIDED if verdict in (HOLDS, FAILS) else OPEN  # not measured too: a claim's min_seeds
        nxt = design.looks[0] if stopped == OPEN else None
        return Walk(design, [], available, stopped, nxt, result, verdict, None, None, (ph, pf))
    taken: list[int] = []
    for k, n in enumerate(reachable):
        result = judge_at(n, design.levels[k])
        taken.append(n)
        verdict, ph, pf = _read(result)
        out = Walk(
            design,
            list(taken),
            n,
            DECIDED,
            None,
            result,
            verdict,
            design.stagewise_p(k, ph),
            design.stagewise_p(k, pf),
            (ph, pf),
        )
        if verdict in (HOLDS, FAILS):
            return out
        if verdict != INCONCLUSIVE:
            out.stopped = NOT_MEASURED
            return out
        last = k == len(design.looks) - 1
        if last:
            out.stopped = MAX_SEEDS
            return out
        out.power = (design.conditional_power(k, ph), design.conditional_power(k, pf))
        futile = [cp for cp in out.power if cp is not None]
        if design.futility > 0 and len(futile) == 2 and max(futile) < design.futility:
            out.stopped = FUTILE
            return out
        if k == len(reachable) - 1:
            out.stopped, out.next_seeds = OPEN, design.looks[k + 1]
            return out
    raise AssertionError("unreachable: the last reachable look returns")


def validate_design(design: Any, where: str = "report.scorecard: design") -> dict[str, Any]:
    """Check a design parameter ``{max_seeds, first_look, spending, futility}`` and return it with its
    defaults; a ValueError names what is wrong."""
    if not isinstance(design, Mapping):
        raise ValueError(f"{where} must be a mapping such as {{max_seeds: 10, first_look: {{m: 3}}}}, got {design!r}")
    known = {"max_seeds", "first_look", "spending", "futility"}
    unknown = sorted(set(design) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(sorted(known))})")
    if "max_seeds" not in design:
        raise ValueError(f"{where} needs max_seeds: the largest seed count its looks may reach")
    max_seeds = design["max_seeds"]
    if isinstance(max_seeds, bool) or not isinstance(max_seeds, int) or max_seeds < 2:
        raise ValueError(f"{where}: max_seeds must be a whole number of seeds, at least 2, got {max_seeds!r}")
    first_look = design.get("first_look") or {}
    if not isinstance(first_look, Mapping):
        raise ValueError(f"{where}: first_look must map measurement names to seed counts, got {first_look!r}")
    for name, n in first_look.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{where}: first_look[{name!r}] must be a whole number of seeds, at least 1, got {n!r}")
    spending = design.get("spending", "obrien-fleming")
    if spending not in SPENDINGS:
        raise ValueError(f"{where}: spending must be one of {', '.join(SPENDINGS)}, got {spending!r}")
    futility = design.get("futility", FUTILITY)
    if isinstance(futility, bool) or not isinstance(futility, (int, float)) or not 0 <= futility < 1:
        raise ValueError(f"{where}: futility must be a conditional power in [0, 1) (0: never futile), got {futility!r}")
    return {
        "max_seeds": max_seeds,
        "first_look": {str(k): int(v) for k, v in first_look.items()},
        "spending": spending,
        "futility": float(futility),
    }


__all__ = [
    "BEFORE_FIRST",
    "DECIDED",
    "Design",
    "FUTILE",
    "FUTILITY",
    "MAX_SEEDS",
    "MOST_LOOKS",
    "NOT_MEASURED",
    "ONE_SIDED",
    "OPEN",
    "SPENDINGS",
    "STOPS",
    "Walk",
    "boundaries",
    "crossings",
    "fractions",
    "looks",
    "spend",
    "validate_design",
    "walk",
]
