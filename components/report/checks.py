"""Evaluate one validated check on the measurements: a verdict, what was expected, what was seen."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from components.report import rules
from components.report.refs import Resolver, Sample, json_number
from components.report.rules import Outcome, fmt
from components.report.vocabulary import KINDS

HOLDS, FAILS, INCONCLUSIVE = rules.HOLDS, rules.FAILS, rules.INCONCLUSIVE
DEVICE, NOT_MEASURED = "device-dependent", "not measured"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, DEVICE, NOT_MEASURED)
CI_SUFFIX = "_ci"  # a summary key ``name_ci/rest`` beside ``name/rest`` holds its 95% half-width


@dataclass
class CheckResult:
    """The outcome of one check."""

    verdict: str
    expected: str
    reason: str
    measured: dict[str, Any] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # margins per seed, their interval, seeds needed


def _op(v: Any) -> str:
    return fmt(float(v)) if isinstance(v, (int, float)) else str(v)


def describe(c: dict[str, Any]) -> str:
    """A human-readable statement of what the check expects."""
    if c.get("expected"):
        return str(c["expected"])
    k = c["check"]
    sym = {"below": "<", "above": ">", "at_most": "<=", "at_least": ">="}
    if k in sym:
        pm = "-" if k == "at_least" else "+"
        slack = f" {pm} {_op(c['tolerance'])}" if c.get("tolerance") else ""
        slack += f" {pm} {_op(c['rel'])} x |{_op(c['than'])}|" if c.get("rel") else ""
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
    for sample in samples:
        if not sample.constant:
            sample.uncertainty = _uncertainty(resolver, sample, over)
    outcome = _apply(c, singles, lists, spread_factor, measured)
    result.verdict = outcome.verdict if outcome.measurable else NOT_MEASURED
    result.reason = outcome.reason
    result.evidence = outcome.evidence
    return result


def uncertainty_ref(ref: str) -> str | None:
    """The reference of ``ref``'s own 95% half-width: ``bleu[*].bleu/x/longest`` -> ``bleu[*].bleu_ci/x/longest``
    (the first segment of the summary key gets ``_ci``); None for a constant."""
    cut = ref.find("/")
    head = ref if cut < 0 else ref[:cut]
    dot = head.rfind(".")
    if dot < 0:
        return None
    return head + CI_SUFFIX + ref[len(head) :] if cut >= 0 else ref + CI_SUFFIX


def _uncertainty(resolver: Resolver, sample: Sample, over: str) -> dict[str, float]:
    """Per seed, the measurement's own half-width where its summary records one (else empty)."""
    ref = uncertainty_ref(sample.ref)
    if ref is None:
        return {}
    found = resolver.resolve(ref, over)
    if not found.ok:
        return {}
    return {s: abs(v) for s, v in found.values.items() if math.isfinite(v)}


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
        return _against(v, singles["than"], k, c.get("tolerance") or 0.0, c.get("rel") or 0.0)
    if k == "between":
        return rules.every(
            v.values,
            lambda x: _inside(x, c["low"], c["high"]),
            _interval(c),
            margin=lambda x: _inside_by(x, c["low"], c["high"]),
            uncertainty=v.uncertainty,
        )
    if k == "finite":
        return rules.every(v.values, lambda x: True, "finite")
    if k == "equals":
        tol = c["tolerance"]
        return _pairwise(
            v, singles["to"], lambda a, b: abs(a - b) <= tol, "equal", margin=lambda a, b: tol - abs(a - b)
        )
    if k == "close":
        allowed = lambda a, b: c["tolerance"] + c["rel"] * max(abs(a), abs(b))  # noqa: E731
        return _pairwise(
            singles["a"],
            singles["b"],
            lambda a, b: abs(a - b) <= allowed(a, b),
            "close",
            margin=lambda a, b: allowed(a, b) - abs(a - b),
        )
    if k == "beats":
        return rules.beats(
            singles["a"].values,
            singles["b"].values,
            higher=c["better"] == "higher",
            margin=c["margin"],
            spread_factor=spread_factor if c["spread_factor"] is None else c["spread_factor"],
            ua=singles["a"].uncertainty or None,
            ub=singles["b"].uncertainty or None,
        )
    if k in ("flat", "cliff"):
        return _ratio(c, v, singles["base"], measured)
    if k in ("increasing", "decreasing"):
        return _trend(c, lists, measured)
    return _exponent(c, v, lists, measured)


def _inside(x: float, low: float | None, high: float | None) -> bool:
    return (low is None or x >= low) and (high is None or x <= high)


def _inside_by(x: float, low: float | None, high: float | None) -> float:
    """How far ``x`` lies inside [low, high] (negative: outside)."""
    sides = [x - low] if low is not None else []
    sides += [high - x] if high is not None else []
    return min(sides)


def _own(sample: Sample, seed: str) -> float:
    """The sample's own half-width at ``seed`` (0 where none is recorded)."""
    u = sample.uncertainty
    if not u:
        return 0.0
    return u.get("", 0.0) if set(u) == {""} else u.get(seed, 0.0)


def _against(value: Sample, than: Sample, kind, tolerance: float = 0.0, rel: float = 0.0) -> Outcome:
    slack = lambda b: tolerance + rel * abs(b)  # noqa: E731
    margins = {
        "below": lambda a, b: b - a,
        "above": lambda a, b: a - b,
        "at_most": lambda a, b: b + slack(b) - a,
        "at_least": lambda a, b: a - (b - slack(b)),
    }[kind]
    strict = kind in ("below", "above")
    word = {"below": "below", "above": "above", "at_most": "at most", "at_least": "at least"}[kind]
    if tolerance or rel:
        parts = [fmt(tolerance)] if tolerance else []
        parts += [f"{fmt(rel)} relative"] if rel else []
        word += f" (tolerance {' + '.join(parts)})"
    test = (lambda a, b: margins(a, b) > 0) if strict else (lambda a, b: margins(a, b) >= 0)
    return _pairwise(value, than, test, word, margin=margins)


def _pairwise(a: Sample, b: Sample, test, word, margin=None) -> Outcome:
    """Hold when ``test(a_s, b_s)`` for every seed s beyond the spread; a non-finite value never passes.
    ``margin(a, b)``: how far a seed is on the passing side (its unit is the check's)."""
    seeds, note = rules.pair(a.values, b.values)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a.values)}, B: {sorted(b.values)})")
    shown, bad = [], []
    passed, margins, unc = {}, {}, {}
    for s in seeds:
        x, y = rules.get(a.values, s), rules.get(b.values, s)
        ok = math.isfinite(x) and math.isfinite(y) and test(x, y)
        passed[s] = ok
        margins[s] = margin(x, y) if margin and math.isfinite(x) and math.isfinite(y) else 0.0 if ok else -math.inf
        unc[s] = math.hypot(_own(a, s), _own(b, s))
        entry = f"{rules.seed_name(s) + ': ' if s else ''}{fmt(x)} vs {fmt(y)}"
        (shown if ok else bad).append(entry)
    if seeds == [""]:
        ok_text, bad_text = f"{word}: {(shown or bad)[0]}", f"not {word}: {(shown or bad)[0]}"
    else:
        ok_text = f"{word} in every seed ({'; '.join(shown)}){note}"
        bad_text = f"not {word} in {'; '.join(bad)}{note}"
    return rules.judged(passed, margins, unc, ok_text, bad_text)


def _ratio(c, value: Sample, base: Sample, measured) -> Outcome:
    seeds, note = rules.pair(value.values, base.values)
    ratios, bad, weak, weak_seeds = {}, [], [], set()
    passed, margins, unc = {}, {}, {}
    flat = c["check"] == "flat"
    for s in seeds:
        x, b = rules.get(value.values, s), rules.get(base.values, s)
        r = x / b if math.isfinite(x) and math.isfinite(b) and b > 0 else math.nan
        ratios[s] = r
        name = rules.seed_name(s)
        if c["base_at_least"] is not None and not (b >= c["base_at_least"]):
            weak.append(f"{name}: base {fmt(b)}")
            weak_seeds.add(s)
        elif not math.isfinite(r):
            bad.append(f"{name}: ratio undefined ({fmt(x)} / {fmt(b)})")
        elif (r < c["ratio"]) if flat else (r > c["ratio"]):
            bad.append(f"{name}: ratio {fmt(r)}")
        passed[s] = math.isfinite(r) and ((r >= c["ratio"]) if flat else (r <= c["ratio"]))
        margins[s] = (r - c["ratio"] if flat else c["ratio"] - r) if math.isfinite(r) else -math.inf
        # the ratio's own half-width from its parts' (first order: relative errors add in quadrature)
        ux, ub = _own(value, s), _own(base, s)
        unc[s] = (math.hypot(ux / x if x else 0.0, ub / b) * abs(r) if x else ux / b) if math.isfinite(r) else 0.0
    measured["ratio"] = {s: json_number(r) for s, r in ratios.items()}
    want = f"ratio {'>=' if flat else '<='} {fmt(c['ratio'])}"
    if weak and not bad:  # the easy case was not learned: the curve's shape says nothing either way
        return Outcome(
            False,
            f"base below the floor {fmt(c['base_at_least'])} ({'; '.join(weak)}): the model "
            f"did not learn the easy case, so the curve's shape was not judged; train longer "
            f"or lower base_at_least{note}",
            measurable=False,
        )
    ok_text = f"{want} in every seed: {', '.join(fmt(r) for r in ratios.values())}{note}"
    bad_text = f"not {c['check']} ({want}): {'; '.join(bad + weak)}{note}"
    if weak:  # judged on the seeds that learned the easy case; the others keep it from holding
        judged = [s for s in seeds if s not in weak_seeds]
        out = rules.judged(*({s: d[s] for s in judged} for d in (passed, margins, unc)), ok_text, bad_text)
        if out.holds:
            out.holds, out.inconclusive = False, True
        return out
    return rules.judged(passed, margins, unc, ok_text, bad_text)


def _trend(c, lists, measured) -> Outcome:
    every = lists["values"] + lists.get("minus", [])
    series = _series(every)
    n = len(c["values"])
    up = c["check"] == "increasing"
    tol = c["tolerance"]
    bad, shown = [], {}
    passed, margins, unc = {}, {}, {}
    for s, vals in series.items():
        ys = [vals[i] - vals[n + i] for i in range(n)] if "minus" in lists else vals[:n]
        shown[s] = ys
        steps = [b - a if up else a - b for a, b in zip(ys, ys[1:])]
        total = ys[-1] - ys[0] if up else ys[0] - ys[-1]
        ok = all(math.isfinite(y) for y in ys) and total > 0 and min(steps) >= -tol
        passed[s] = ok
        margins[s] = min(total, min(steps) + tol) if all(math.isfinite(y) for y in ys) else -math.inf
        # the total change's own half-width: first and last entries (and their minus terms)
        ends = [every[0], every[n - 1]] + ([every[n], every[-1]] if "minus" in lists else [])
        unc[s] = math.sqrt(sum(_own(x, s) ** 2 for x in ends))
        if not ok:
            bad.append(f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}")
    measured["series"] = {s: [json_number(y) for y in ys] for s, ys in shown.items()}
    if not series:
        return Outcome(False, "no seed measured in every entry of the series")
    if list(shown) == [""]:
        text = f"{c['check']}: {', '.join(map(fmt, shown['']))}"
        return rules.judged(passed, margins, unc, text, "not " + text)
    ok_text = f"{c['check']} in every seed: " + "; ".join(
        f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}" for s, ys in shown.items()
    )
    return rules.judged(passed, margins, unc, ok_text, f"not {c['check']} in {'; '.join(bad)}")


def _exponent(c, v: Sample | None, lists, measured) -> Outcome:
    if v is not None:
        exps, unc = dict(v.values), v.uncertainty
    else:
        exps = {s: rules.loglog_slope(c["x"], ys) for s, ys in _series(lists["y"]).items()}
        measured["exponent"] = {s: json_number(e) for s, e in exps.items()}
        unc = {}
    if not exps:
        return Outcome(False, "no seed measured at every x")
    return rules.every(
        exps,
        lambda e: _inside(e, c["low"], c["high"]),
        "exponent " + _interval(c),
        margin=lambda e: _inside_by(e, c["low"], c["high"]),
        uncertainty=unc,
    )


def _interval(c) -> str:
    lo = fmt(c["low"]) if c["low"] is not None else "-inf"
    hi = fmt(c["high"]) if c["high"] is not None else "inf"
    return f"in [{lo}, {hi}]"
