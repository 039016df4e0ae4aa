"""Evaluate one validated check on the measurements: a verdict, what was expected, what was seen."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it is used: `check` reads these modules without it
    import numpy as np

from components.report import rules
from components.report.refs import Resolver, Sample, json_number
from components.report.rules import Outcome, fmt
from components.report.vocabulary import KINDS

HOLDS, FAILS, INCONCLUSIVE = rules.HOLDS, rules.FAILS, rules.INCONCLUSIVE
DEVICE, NOT_MEASURED = "device-dependent", "not measured"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, DEVICE, NOT_MEASURED)
CI_SUFFIX = "_ci"  # a summary key ``name_ci/rest`` beside ``name/rest`` holds its 95% half-width
DF_SUFFIX = "_df"  # ``name_df/rest``: the degrees of freedom of that half-width (absent: a bootstrap's, infinite)
REP_SUFFIX = "_rep_"  # ``name_rep_<b>/rest``: the value on bootstrap resample b (the same resamples in every seed)
DIFF_SUFFIX = "_diff_ci"  # ``name_diff_ci/A/B/rest``: the 95% half-width of A - B from a paired test


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
    """A human-readable statement of what the check expects (``of: median``: in the typical seed)."""
    if c.get("expected"):
        return str(c["expected"])
    said = _describe(c)
    return f"{said} in most seeds (median)" if c.get("of") == "median" else said


def _describe(c: dict[str, Any]) -> str:
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
        return f"{_op(c['a'])} {cmp} {_op(c['b'])}{margin} ({c['better']} is better)"
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
    exact: bool = False,
    level: float = rules.stats.ALPHA / 2,
) -> CheckResult:
    """Resolve the check's references and apply it; absent data gives 'not measured', never an error.
    ``level``: the one-sided level the check's verdict is tested at."""
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
            sample.own_df = _own_df(resolver, sample, over)
            sample.replicates = _replicates(resolver, sample, over)
    with rules.stats.summary(c.get("of") or "mean"):
        outcome = _apply(c | ({"exact": True} if exact else {}), singles, lists, resolver, over, measured, level)
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


def _suffixed(ref: str, suffix: str) -> str | None:
    """``ref`` with ``suffix`` after the first segment of its summary key (None for a constant)."""
    cut = ref.find("/")
    head = ref if cut < 0 else ref[:cut]
    if head.rfind(".") < 0:
        return None
    return head + suffix + ref[len(head) :] if cut >= 0 else ref + suffix


def _own_df(resolver: Resolver, sample: Sample, over: str) -> float:
    """The degrees of freedom of the sample's own half-width (``name_df/rest``; the smallest over the
    seeds), infinite where none is recorded (a bootstrap over many resamples)."""
    ref = _suffixed(sample.ref, DF_SUFFIX)
    found = resolver.resolve(ref, over) if ref and sample.uncertainty else None
    if found is None or not found.ok:
        return math.inf
    dfs = [v for v in found.values.values() if math.isfinite(v) and v > 0]
    return min(dfs) if dfs else math.inf


def _replicates(resolver: Resolver, sample: Sample, over: str) -> dict[str, np.ndarray]:
    """Per seed, the value on each recorded bootstrap resample (``name_rep_<b>/rest``, as ``eval.bleu``
    writes them), in resample order; empty unless every seed has the same number (2 or more)."""
    import numpy as np

    ref = _suffixed(sample.ref, REP_SUFFIX + "*")
    if ref is None:
        return {}
    found = resolver.resolve(ref, over)
    if not found.ok:
        return {}
    per: dict[str, dict[int, float]] = {}
    for label, v in found.values.items():
        seed, _, b = label.rpartition("/")
        if not b.isdigit():
            return {}
        per.setdefault(seed, {})[int(b)] = v
    out = {seed: np.array([reps[b] for b in sorted(reps)], dtype=float) for seed, reps in per.items()}
    sizes = {len(r) for r in out.values()}
    if len(sizes) != 1 or sizes.pop() < 2 or set(out) != set(sample.values):
        return {}
    return out


def _reps(sample: Sample, seed: str):
    """The sample's replicates at ``seed`` (a constant: its value), None where it has none."""
    if sample.constant:
        return rules.get(sample.values, seed)
    reps = getattr(sample, "replicates", None) or {}
    return reps.get("" if set(reps) == {""} else seed)


def _range(sample: Sample) -> tuple[float, float] | None:
    """The sample's range where it is known: a constant's value, or [0, 1] for a proportion (every value
    in [0, 1], one of them exactly 0 or 1: a value at a bound of its range). None otherwise."""
    vals = list(sample.values.values())
    if sample.constant:
        return (vals[0], vals[0])
    if vals and all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in vals) and any(v in (0.0, 1.0) for v in vals):
        return (0.0, 1.0)
    return None


def _kind_refs(c: dict[str, Any]) -> tuple[str, ...]:
    return KINDS[c["check"]].refs


def _series(samples: list[Sample]) -> dict[str, list[float]]:
    """Per seed, the list of values across samples (seeds measured in every sample only)."""
    labelled = [s.values for s in samples if set(s.values) != {""}]
    seeds = sorted(set.intersection(*(set(v) for v in labelled))) if labelled else [""]
    return {seed: [rules.get(s.values, seed) for s in samples] for seed in seeds}


def _apply(c, singles, lists, resolver, over, measured, level=rules.stats.ALPHA / 2) -> Outcome:
    import numpy as np

    k = c["check"]
    v = singles.get("value")
    exact = bool(c.get("exact"))
    if k in ("below", "above", "at_most", "at_least"):
        than = singles["than"]
        return _against(
            v,
            than,
            k,
            c.get("tolerance") or 0.0,
            c.get("rel") or 0.0,
            _pair_se(resolver, v, than, over),
            exact,
            level=level,
        )
    if k == "between":
        return _in_interval(c, v.values, _se(v), _interval(c), exact, "value", level, _df_of(v), _range(v), _reps_of(v))
    if k == "finite":
        return rules.every(v.values, lambda x: True, "finite", exact=exact, level=level)
    if k == "equals":
        return _difference(v, singles["to"], lambda a, b: c["tolerance"], "equal", resolver, over, exact, level)
    if k == "close":
        return _difference(
            singles["a"],
            singles["b"],
            lambda a, b: c["tolerance"] + c["rel"] * max(abs(a), abs(b)),
            "close",
            resolver,
            over,
            exact,
            level,
        )
    if k == "beats":
        a, b = singles["a"], singles["b"]
        if exact:
            return _against(
                a, b, "above" if c["better"] == "higher" else "below", exact=True, margin=c["margin"], level=level
            )
        ra, rb = _range(a), _range(b)
        seeds, _ = rules.pair(a.values, b.values)
        reps = {s: _reps(a, s) - _reps(b, s) for s in seeds if _reps(a, s) is not None and _reps(b, s) is not None}
        return rules.beats(
            a.values,
            b.values,
            higher=c["better"] == "higher",
            margin=c["margin"],
            ua=_se(a) or None,
            ub=_se(b) or None,
            pair_se=_pair_se(resolver, a, b, over),
            paired=c.get("paired"),
            level=level,
            bounds=(min(ra[0], rb[0]), max(ra[1], rb[1])) if ra and rb else None,
            replicates={s: r for s, r in reps.items() if isinstance(r, np.ndarray)} or None,
        )
    if k in ("flat", "cliff"):
        return _ratio(c, v, singles["base"], measured, exact, level)
    if k in ("increasing", "decreasing"):
        return _trend(c, lists, measured, exact, level)
    return _exponent(c, v, lists, measured, exact, level)


def _df_of(sample: Sample) -> float:
    return getattr(sample, "own_df", math.inf)


def _reps_of(sample: Sample) -> dict[str, np.ndarray] | None:
    return getattr(sample, "replicates", None) or None


def _inside(x: float, low: float | None, high: float | None) -> bool:
    return (low is None or x >= low) and (high is None or x <= high)


def _se(sample: Sample) -> dict[str, float]:
    """The sample's own standard errors per seed: its recorded 95% half-widths over the normal 1.96, or
    over Student's t quantile where the half-width's degrees of freedom are recorded (``name_df``)."""
    return {s: u / _crit(_df_of(sample)) for s, u in (sample.uncertainty or {}).items()}


def _crit(df: float) -> float:
    """The 97.5% quantile a 95% half-width of ``df`` degrees of freedom was built with."""
    if not math.isfinite(df):
        return rules.Z95
    from scipy import stats as sps

    return float(sps.t.ppf(0.975, df))


def _own(sample: Sample, seed: str) -> float:
    """The sample's own standard error at ``seed`` (0 where none is recorded)."""
    u = _se(sample)
    if not u:
        return 0.0
    return u.get("", 0.0) if set(u) == {""} else u.get(seed, 0.0)


def paired_ref(ref_a: str, ref_b: str) -> list[str]:
    """References of the paired difference's 95% half-width, where both operands are one measurement
    of two systems on the same test set: ``bleu[*].bleu/A/longest`` and ``bleu[*].bleu/B/longest`` ->
    ``bleu[*].bleu_diff_ci/A/B/longest`` (and the B/A order); empty when the references are not so."""
    cut_a, cut_b = ref_a.find("/"), ref_b.find("/")
    if cut_a < 0 or cut_b < 0 or ref_a[:cut_a] != ref_b[:cut_b]:
        return []
    head = ref_a[:cut_a]
    (sys_a, _, rest_a), (sys_b, _, rest_b) = ref_a[cut_a + 1 :].partition("/"), ref_b[cut_b + 1 :].partition("/")
    if rest_a != rest_b or sys_a == sys_b or "." not in head:
        return []
    tail = f"/{rest_a}" if rest_a else ""
    return [f"{head}{DIFF_SUFFIX}/{x}/{y}{tail}" for x, y in ((sys_a, sys_b), (sys_b, sys_a))]


def _pair_se(resolver: Resolver, a: Sample, b: Sample, over: str) -> dict[str, float] | None:
    """Per seed, the standard error of A - B from a paired test on the same sentences, where the
    measurement recorded one (``eval.bleu``'s ``bleu_diff_ci``); None otherwise."""
    if a.constant or b.constant:
        return None
    for ref in paired_ref(a.ref, b.ref):
        found = resolver.resolve(ref, over)
        if found.ok:
            return {s: abs(v) / rules.Z95 for s, v in found.values.items() if math.isfinite(v)}
    return None


def _against(
    value: Sample,
    than: Sample,
    kind,
    tolerance: float = 0.0,
    rel: float = 0.0,
    pair_se: dict[str, float] | None = None,
    exact: bool = False,
    margin: float = 0.0,
    level: float = rules.stats.ALPHA / 2,
) -> Outcome:
    slack = lambda b: tolerance + rel * abs(b)  # noqa: E731
    margins = {
        "below": lambda a, b: b - a - margin,
        "above": lambda a, b: a - b - margin,
        "at_most": lambda a, b: b + slack(b) - a,
        "at_least": lambda a, b: a - (b - slack(b)),
    }[kind]
    word = {"below": "below", "above": "above", "at_most": "at most", "at_least": "at least"}[kind]
    if tolerance or rel:
        parts = [fmt(tolerance)] if tolerance else []
        parts += [f"{fmt(rel)} relative"] if rel else []
        word += f" (tolerance {' + '.join(parts)})"
    return _pairwise(value, than, margins, word, pair_se, exact, strict=kind in ("below", "above"), level=level)


def _pairwise(
    a: Sample,
    b: Sample,
    margin,
    word,
    pair_se=None,
    exact=False,
    strict=False,
    low=0.0,
    high=None,
    level=rules.stats.ALPHA / 2,
    quantity="margin",
):
    """Judge ``margin(a_s, b_s)`` per seed s (seeds paired by label; a single value broadcasts); a
    non-finite value is a diverged run, the worst outcome. Own standard errors add in quadrature
    unless a paired test on the same sentences measured the difference's (``pair_se``); where both
    operands record bootstrap replicates on shared resamples, the margin's replicates carry the
    test-set error the seeds share. The margin's range follows from the operands' (proportions)."""
    import numpy as np

    seeds, note = rules.pair(a.values, b.values)
    if not seeds:
        return Outcome(False, f"no seed measured on both sides (A: {sorted(a.values)}, B: {sorted(b.values)})")
    shown, bad = [], []
    margins, unc = {}, {}
    for s in seeds:
        x, y = rules.get(a.values, s), rules.get(b.values, s)
        m = margin(x, y) if math.isfinite(x) and math.isfinite(y) else -math.inf
        margins[s] = m
        unc[s] = pair_se[s] if pair_se and s in pair_se else math.hypot(_own(a, s), _own(b, s))
        entry = f"{rules.seed_name(s) + ': ' if s else ''}{fmt(x)} vs {fmt(y)}"
        ok = math.isfinite(m) and (low is None or m >= low) and (high is None or m <= high)
        (shown if ok else bad).append(entry)
    if seeds == [""]:
        ok_text, bad_text = f"{word}: {(shown or bad)[0]}", f"not {word}: {(shown or bad)[0]}"
    else:
        ok_text = f"{word} in every seed ({'; '.join(shown)}){note}"
        bad_text = f"not {word} in {'; '.join(bad)}{note}"
    ra, rb = _range(a), _range(b)
    bounds = None
    if ra and rb:
        corners = [margin(x, y) for x in ra for y in rb]
        bounds = (min(corners), max(corners))
    reps = {}
    for s in seeds:
        x, y = _reps(a, s), _reps(b, s)
        if x is not None and y is not None and (isinstance(x, np.ndarray) or isinstance(y, np.ndarray)):
            reps[s] = np.asarray(margin(x, y), dtype=float)
    return rules.judge(
        margins,
        unc,
        ok_text,
        bad_text,
        low=low,
        high=high,
        strict=strict,
        exact=exact,
        level=level,
        own_df=min(_df_of(a), _df_of(b)),
        bounds=bounds,
        replicates=reps or None,
        quantity=quantity,
    )


def _difference(a: Sample, b: Sample, tolerance, word, resolver, over, exact, level=rules.stats.ALPHA / 2) -> Outcome:
    """``|a - b| <= tolerance``, an equivalence test (two one-sided tests) on the paired difference;
    a relative tolerance is taken at the two sides' means."""
    mean = lambda s: statistics.fmean([v for v in s.values.values() if math.isfinite(v)] or [math.nan])  # noqa: E731
    tol = tolerance(mean(a), mean(b))
    tol = tol if math.isfinite(tol) else 0.0
    if not tol and not exact:
        word += " (no tolerance: only an exact or spread-free value can show it)"
    return _pairwise(
        a,
        b,
        lambda x, y: x - y,
        word + (f" within {fmt(tol)}" if tol else ""),
        _pair_se(resolver, a, b, over),
        exact,
        low=-tol,
        high=tol,
        level=level,
        quantity="difference",  # A - B; the margin is its distance to the nearer bound, said after it
    )


RATIO_FLOOR = 1e-3  # a numerator at or below 0 counts as this fraction of its base (log of a ratio)


def _ratio(c, value: Sample, base: Sample, measured, exact: bool, level: float = rules.stats.ALPHA / 2) -> Outcome:
    """``flat``/``cliff`` on the log scale: per seed ``log(value / base)`` against ``log(ratio)``, the
    own standard error ``sqrt((se_v / v)^2 + (se_b / b)^2)`` (the buckets are disjoint sentences).
    A base under ``base_at_least``, at or below 0, or inside its own 95% interval of zero is no
    denominator: that seed is not judged."""
    import numpy as np

    seeds, note = rules.pair(value.values, base.values)
    ratios, weak, logs, unc, reps = {}, [], {}, {}, {}
    flat = c["check"] == "flat"
    floor = c["base_at_least"]
    for s in seeds:
        x, b = rules.get(value.values, s), rules.get(base.values, s)
        ub = _own(base, s)
        name = rules.seed_name(s)
        if not math.isfinite(b) or b <= 0 or b <= rules.Z95 * ub or (floor is not None and not b >= floor):
            why = f"below the floor {fmt(floor)}" if floor is not None and b > rules.Z95 * ub else "not above 0"
            weak.append(f"{name}: base {fmt(b)} ({why})")
            ratios[s] = x / b if math.isfinite(x) and math.isfinite(b) and b > 0 else math.nan
            continue
        r = x / b if math.isfinite(x) else math.nan
        ratios[s] = r
        if not math.isfinite(r):
            logs[s] = -math.inf if flat else math.inf  # a diverged numerator: no translation at all
            unc[s] = 0.0
            continue
        lr = math.log(max(r, RATIO_FLOOR))
        logs[s] = lr - math.log(c["ratio"]) if flat else math.log(c["ratio"]) - lr
        ux = _own(value, s)
        unc[s] = math.hypot(ux / max(x, RATIO_FLOOR * b), ub / b) if (ux or ub) else 0.0
        rv, rb = _reps(value, s), _reps(base, s)
        if isinstance(rv, np.ndarray) and isinstance(rb, np.ndarray) and np.all(rb > 0):
            lrep = np.log(np.maximum(rv / rb, RATIO_FLOOR))
            reps[s] = lrep - math.log(c["ratio"]) if flat else math.log(c["ratio"]) - lrep
    measured["ratio"] = {s: json_number(r) for s, r in ratios.items()}
    want = f"ratio {'>=' if flat else '<='} {fmt(c['ratio'])}"
    shown = ", ".join(fmt(r) for r in ratios.values())
    if weak and not logs:  # the easy case was not learned: the curve's shape says nothing either way
        return Outcome(
            False,
            f"base below the floor ({'; '.join(weak)}): the model did not learn the easy case, so the "
            f"curve's shape was not judged; train longer or lower base_at_least{note}",
            measurable=False,
        )
    ok_text = f"{want} in every seed: {shown}{note}"
    against = [f"{rules.seed_name(s)}: ratio {fmt(ratios[s])}" for s, m in logs.items() if not m >= 0]
    bad_text = f"not {c['check']} ({want}): {'; '.join(against) or shown}{note}"
    out = rules.judge(
        logs, unc, ok_text, bad_text, exact=exact, quantity="log-ratio margin", level=level, replicates=reps or None
    )
    if weak:  # judged on the seeds that learned the easy case; the others keep it from holding
        out.reason += f"; not judged: {'; '.join(weak)}"
        if out.holds:
            out.holds, out.inconclusive = False, True
            out.evidence["why"] = "a seed's base is under the floor"
    return out


def _trend(c, lists, measured, exact: bool, level: float = rules.stats.ALPHA / 2) -> Outcome:
    """The series rises (falls) from first to last, and no step goes the wrong way by more than the
    tolerance: each of those statements is tested over the seeds (the total change, and every step
    past the tolerance, above 0), and the check holds when all hold (``rules.judge_all``)."""
    import numpy as np

    every = lists["values"] + lists.get("minus", [])
    series = _series(every)
    n = len(c["values"])
    up = c["check"] == "increasing"
    tol = c["tolerance"]
    bad, shown = [], {}
    total, steps, own_total, own_steps = {}, [{} for _ in range(n - 1)], {}, [{} for _ in range(n - 1)]

    def own(i, s):  # entry i's own standard error (and its minus term's)
        terms = [every[i]] + ([every[n + i]] if "minus" in lists else [])
        return math.sqrt(sum(_own(x, s) ** 2 for x in terms))

    def rep(i, s):  # entry i's replicates (minus its minus term's), None where one has none
        terms = [every[i]] + ([every[n + i]] if "minus" in lists else [])
        got = [_reps(x, s) for x in terms]
        if any(g is None for g in got) or not any(isinstance(g, np.ndarray) for g in got):
            return None
        return got[0] - got[1] if len(got) == 2 else np.asarray(got[0], dtype=float)

    rep_total, rep_steps = {}, [{} for _ in range(n - 1)]

    for s, vals in series.items():
        ys = [vals[i] - vals[n + i] for i in range(n)] if "minus" in lists else vals[:n]
        shown[s] = ys
        finite = all(math.isfinite(y) for y in ys)
        sgn = 1.0 if up else -1.0
        total[s] = sgn * (ys[-1] - ys[0]) if finite else -math.inf
        own_total[s] = math.hypot(own(0, s), own(n - 1, s))
        r = [rep(i, s) for i in range(n)]
        if all(x is not None for x in r):
            rep_total[s] = sgn * (r[-1] - r[0])
        for i in range(n - 1):
            steps[i][s] = sgn * (ys[i + 1] - ys[i]) + tol if finite else -math.inf
            own_steps[i][s] = math.hypot(own(i, s), own(i + 1, s))
            if all(x is not None for x in r):
                rep_steps[i][s] = sgn * (r[i + 1] - r[i]) + tol
        if not (finite and total[s] > 0 and all(st[s] >= 0 for st in steps)):
            bad.append(f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}")
    measured["series"] = {s: [json_number(y) for y in ys] for s, ys in shown.items()}
    if not series:
        return Outcome(False, "no seed measured in every entry of the series")
    parts = [("total change", total, own_total)]
    reps = [rep_total or None]
    if n > 2:  # with two entries the one step is the total change
        parts += [(f"step {i + 1} past the tolerance", steps[i], own_steps[i]) for i in range(n - 1)]
        reps += [rep_steps[i] or None for i in range(n - 1)]
    if list(shown) == [""]:
        text = f"{c['check']}: {', '.join(map(fmt, shown['']))}"
        return rules.judge_all(parts, text, "not " + text, exact=exact, level=level, replicates=reps)
    ok_text = f"{c['check']} in every seed: " + "; ".join(
        f"{rules.seed_name(s)}: {', '.join(map(fmt, ys))}" for s, ys in shown.items()
    )
    return rules.judge_all(
        parts, ok_text, f"not {c['check']} in {'; '.join(bad)}", exact=exact, level=level, replicates=reps
    )


def _exponent(c, v: Sample | None, lists, measured, exact: bool, level: float = rules.stats.ALPHA / 2) -> Outcome:
    """The exponent per seed (reported, or fitted from ``x``/``y``: its own uncertainty is the fit's
    standard error from the residuals, with the fit's points - 2 degrees of freedom), tested for lying
    in [low, high]."""
    if v is not None:
        exps, unc, df = dict(v.values), _se(v), _df_of(v)
    else:
        fits = {s: rules.loglog_fit_se(c["x"], ys) for s, ys in _series(lists["y"]).items()}
        exps = {s: k for s, (k, _, _) in fits.items()}
        unc = {s: se for s, (_, se, _) in fits.items() if math.isfinite(se)}
        dfs = [d for _, _, d in fits.values() if math.isfinite(d)]
        df = min(dfs) if dfs else math.inf
        measured["exponent"] = {s: json_number(e) for s, e in exps.items()}
    if not exps:
        return Outcome(False, "no seed measured at every x")
    return _in_interval(c, exps, unc, "exponent " + _interval(c), exact, "exponent", level, df)


def _in_interval(
    c,
    values: dict[str, float],
    own_se,
    what: str,
    exact: bool,
    quantity: str,
    level: float = rules.stats.ALPHA / 2,
    own_df: float = math.inf,
    bounds: tuple[float, float] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
) -> Outcome:
    """``low <= value <= high`` over the seeds (two one-sided tests)."""
    shown = ", ".join(fmt(x) for x in values.values())
    return rules.judge(
        values,
        own_se,
        f"{what} ({shown})",
        f"not {what} ({shown})",
        low=c["low"],
        high=c["high"],
        exact=exact,
        quantity=quantity,
        level=level,
        own_df=own_df,
        bounds=bounds,
        replicates=replicates,
    )


def _interval(c) -> str:
    lo = fmt(c["low"]) if c["low"] is not None else "-inf"
    hi = fmt(c["high"]) if c["high"] is not None else "inf"
    return f"in [{lo}, {hi}]"
