"""Evaluate one validated check on the measurements: a verdict, what was expected, what was seen."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from components.report import rules
from components.report.refs import Resolver, Sample, json_number
from components.report.rules import Outcome, fmt
from components.report.vocabulary import KINDS

HOLDS, FAILS, DEVICE, NOT_MEASURED = "holds", "fails", "device-dependent", "not measured"
VERDICTS = (HOLDS, FAILS, DEVICE, NOT_MEASURED)


@dataclass
class CheckResult:
    """The outcome of one check."""

    verdict: str
    expected: str
    reason: str
    measured: dict[str, Any] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)


def _op(v: Any) -> str:
    return fmt(float(v)) if isinstance(v, (int, float)) else str(v)


def describe(c: dict[str, Any]) -> str:
    """A human-readable statement of what the check expects."""
    if c.get("expected"):
        return str(c["expected"])
    k = c["check"]
    sym = {"below": "<", "above": ">", "at_most": "<=", "at_least": ">="}
    if k in sym:
        slack = f" {'-' if k == 'at_least' else '+'} {_op(c['tolerance'])}" if c.get("tolerance") else ""
        return f"{_op(c['value'])} {sym[k]} {_op(c['than'])}{slack}"
    if k in ("between", "exponent_between"):
        what = _op(c["value"]) if c.get("value") is not None else f"exponent of {_op(c['y'][0])}... vs x"
        lo = f"{_op(c['low'])} <= " if c["low"] is not None else ""
        hi = f" <= {_op(c['high'])}" if c["high"] is not None else ""
        return f"{lo}{what}{hi}"
    if k == "equals":
        tol = f" (+- {_op(c['tolerance'])})" if c["tolerance"] else ""
        return f"{_op(c['value'])} == {_op(c['to'])}{tol}"
    if k == "close":
        tol = (
            " + ".join(
                t
                for t in (
                    _op(c["tolerance"]) if c["tolerance"] else "",
                    f"{_op(c['rel'])} relative" if c["rel"] else "",
                )
                if t
            )
            or "0"
        )
        return f"|{_op(c['a'])} - {_op(c['b'])}| <= {tol}"
    if k == "beats":
        cmp = ">" if c["better"] == "higher" else "<"
        margin = f" by > {_op(c['margin'])}" if c["margin"] else ""
        return f"{_op(c['a'])} {cmp} {_op(c['b'])}{margin} ({c['better']} is better, multi-seed rule)"
    if k in ("flat", "cliff"):
        cmp = ">=" if k == "flat" else "<="
        floor = f", with {_op(c['base'])} >= {_op(c['base_at_least'])}" if c["base_at_least"] is not None else ""
        return f"{k}: {_op(c['value'])} {cmp} {_op(c['ratio'])} x {_op(c['base'])}{floor}"
    if k in ("increasing", "decreasing"):
        series = ", ".join(map(_op, c["values"]))
        minus = f" minus [{', '.join(map(_op, c['minus']))}]" if c["minus"] else ""
        return f"{k}: [{series}]{minus}"
    return f"{_op(c['value'])} finite (no divergence)"


def evaluate(
    c: dict[str, Any],
    resolver: Resolver,
    *,
    over: str = "seed",
    min_seeds: int = 1,
    spread_factor: float = rules.SPREAD_FACTOR,
) -> CheckResult:
    """Resolve the check's references and apply it; absent data gives 'not measured', never an error."""
    over = c.get("over") or over
    singles = {k: resolver.resolve(c[k], over) for k in _kind_refs(c) if c.get(k) is not None}
    lists = {
        k: [resolver.resolve(r, over) for r in c[k]] for k in ("values", "minus", "y") if isinstance(c.get(k), list)
    }
    samples = list(singles.values()) + [s for ss in lists.values() for s in ss]
    measured = {s.ref: s.shown() for s in samples if s.ok and not s.constant}
    run_ids = sorted({r for s in samples for r in s.run_ids})
    result = CheckResult(NOT_MEASURED, describe(c), "", measured, run_ids)
    missing = [s.missing for s in samples if not s.ok]
    if missing:
        result.reason = "; ".join(missing)
        return result
    few = [
        f"{s.ref} has {len(s.values)} seed{'s' * (len(s.values) != 1)}"
        for s in samples
        if not s.constant and len(s.values) < min_seeds
    ]
    if few:
        result.reason = f"{'; '.join(few)}: the claim needs {min_seeds}"
        return result
    outcome = _apply(c, singles, lists, spread_factor, measured)
    result.verdict = HOLDS if outcome.holds else FAILS if outcome.measurable else NOT_MEASURED
    result.reason = outcome.reason
    return result


def _kind_refs(c: dict[str, Any]) -> tuple[str, ...]:
    return KINDS[c["check"]].refs


def _series(samples: list[Sample]) -> dict[str, list[float]]:
    """Per seed, the list of values across samples (seeds measured in every sample only)."""
    labelled = [s.values for s in samples if set(s.values) != {""}]
    seeds = sorted(set.intersection(*(set(v) for v in labelled))) if labelled else [""]
    return {seed: [rules.get(s.values, seed) for s in samples] for seed in seeds}


def _apply(c, singles, lists, spread_factor, measured) -> Outcome:
    k = c["check"]
    v = singles.get("value")
    if k in ("below", "above", "at_most", "at_least"):
        return _against(v.values, singles["than"].values, k, c.get("tolerance") or 0.0)
    if k == "between":
        return rules.every(v.values, lambda x: _inside(x, c["low"], c["high"]), _interval(c))
    if k == "finite":
        return rules.every(v.values, lambda x: True, "finite")
    if k == "equals":
        return _pairwise(v.values, singles["to"].values, lambda a, b: abs(a - b) <= c["tolerance"], "equal")
    if k == "close":
        tol = lambda a, b: abs(a - b) <= c["tolerance"] + c["rel"] * max(abs(a), abs(b))  # noqa: E731
        return _pairwise(singles["a"].values, singles["b"].values, tol, "close")
    if k == "beats":
        return rules.beats(
            singles["a"].values,
            singles["b"].values,
            higher=c["better"] == "higher",
            margin=c["margin"],
            spread_factor=spread_factor if c["spread_factor"] is None else c["spread_factor"],
        )
    if k in ("flat", "cliff"):
        return _ratio(c, v.values, singles["base"].values, measured)
    if k in ("increasing", "decreasing"):
        return _trend(c, lists, measured)
    return _exponent(c, v, lists, measured)


def _inside(x: float, low: float | None, high: float | None) -> bool:
    return (low is None or x >= low) and (high is None or x <= high)


def _against(values, than, kind, tolerance: float = 0.0) -> Outcome:
    tests = {
        "below": lambda a, b: a < b,
        "above": lambda a, b: a > b,
        "at_most": lambda a, b: a <= b + tolerance,
        "at_least": lambda a, b: a >= b - tolerance,
    }
    word = {"below": "below", "above": "above", "at_most": "at most", "at_least": "at least"}[kind]
    if tolerance:
        word += f" (tolerance {fmt(tolerance)})"
    return _pairwise(values, than, tests[kind], word)


def _pairwise(a, b, test, word) -> Outcome:
    """Hold when ``test(a_s, b_s)`` for every seed s; a non-finite value never passes."""
    seeds, note = rules.pair(a, b)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a)}, B: {sorted(b)})")
    shown, bad = [], []
    for s in seeds:
        x, y = rules.get(a, s), rules.get(b, s)
        ok = math.isfinite(x) and math.isfinite(y) and test(x, y)
        entry = f"{rules.seed_name(s) + ': ' if s else ''}{fmt(x)} vs {fmt(y)}"
        (shown if ok else bad).append(entry)
    if seeds == [""]:
        return Outcome(not bad, f"{'' if shown else 'not '}{word}: {(shown or bad)[0]}")
    if bad:
        return Outcome(False, f"not {word} in {'; '.join(bad)}{note}")
    return Outcome(True, f"{word} in every seed ({'; '.join(shown)}){note}")


def _ratio(c, value, base, measured) -> Outcome:
    seeds, note = rules.pair(value, base)
    ratios, bad, weak = {}, [], []
    for s in seeds:
        x, b = rules.get(value, s), rules.get(base, s)
        r = x / b if math.isfinite(x) and math.isfinite(b) and b > 0 else math.nan
        ratios[s] = r
        name = rules.seed_name(s)
        if c["base_at_least"] is not None and not (b >= c["base_at_least"]):
            weak.append(f"{name}: base {fmt(b)}")
        elif not math.isfinite(r):
            bad.append(f"{name}: ratio undefined ({fmt(x)} / {fmt(b)})")
        elif (r < c["ratio"]) if c["check"] == "flat" else (r > c["ratio"]):
            bad.append(f"{name}: ratio {fmt(r)}")
    measured["ratio"] = {s: json_number(r) for s, r in ratios.items()}
    want = f"ratio {'>=' if c['check'] == 'flat' else '<='} {fmt(c['ratio'])}"
    if bad:
        return Outcome(False, f"not {c['check']} ({want}): {'; '.join(bad + weak)}{note}")
    if weak:  # the easy case was not learned: the curve's shape says nothing either way
        return Outcome(
            False,
            f"base below the floor {fmt(c['base_at_least'])} ({'; '.join(weak)}): the model "
            f"did not learn the easy case, so the curve's shape was not judged; train longer "
            f"or lower base_at_least{note}",
            measurable=False,
        )
    return Outcome(True, f"{want} in every seed: {', '.join(fmt(r) for r in ratios.values())}{note}")


def _trend(c, lists, measured) -> Outcome:
    series = _series(lists["values"] + lists.get("minus", []))
    n = len(c["values"])
    up = c["check"] == "increasing"
    tol = c["tolerance"]
    bad, shown = [], {}
    for s, vals in series.items():
        ys = [vals[i] - vals[n + i] for i in range(n)] if "minus" in lists else vals[:n]
        shown[s] = ys
        steps = [b - a if up else a - b for a, b in zip(ys, ys[1:])]
        total = ys[-1] - ys[0] if up else ys[0] - ys[-1]
        if not all(math.isfinite(y) for y in ys) or not total > 0 or min(steps) < -tol:
            bad.append(f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}")
    measured["series"] = {s: [json_number(y) for y in ys] for s, ys in shown.items()}
    if not series:
        return Outcome(False, "no seed measured in every entry of the series")
    if list(shown) == [""]:
        return Outcome(not bad, f"{'' if not bad else 'not '}{c['check']}: {', '.join(map(fmt, shown['']))}")
    if bad:
        return Outcome(False, f"not {c['check']} in {'; '.join(bad)}")
    return Outcome(
        True,
        f"{c['check']} in every seed: "
        + "; ".join(f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}" for s, ys in shown.items()),
    )


def _exponent(c, v: Sample | None, lists, measured) -> Outcome:
    if v is not None:
        exps = dict(v.values)
    else:
        exps = {s: rules.loglog_slope(c["x"], ys) for s, ys in _series(lists["y"]).items()}
        measured["exponent"] = {s: json_number(e) for s, e in exps.items()}
    if not exps:
        return Outcome(False, "no seed measured at every x")
    return rules.every(exps, lambda e: _inside(e, c["low"], c["high"]), "exponent " + _interval(c))


def _interval(c) -> str:
    lo = fmt(c["low"]) if c["low"] is not None else "-inf"
    hi = fmt(c["high"]) if c["high"] is not None else "inf"
    return f"in [{lo}, {hi}]"
