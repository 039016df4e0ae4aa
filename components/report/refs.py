"""Resolve measurement references (``lag[arch=lstm,lag=50].acc``) to values per seed.

A reference names a source (a key of the scorecard's ``measurements``), optionally an instance
of a matrixed step, and a key of that step's flat ``summary``:

- ``grad.rho``                       a non-matrixed step's summary key
- ``lag[arch=lstm,lag=50].acc``      the instances of a matrixed step whose label has these pairs;
  the instances left differ only in the seed axis and become the seeds of the sample
- ``grad[rnn].rho``                  a single-axis matrix (labels are bare values)
- ``lag[*].acc``                     every instance (a matrix over seeds only)
- ``lag.arch=lstm,lag=50.acc``       the same without brackets (split where it resolves)
- ``train.acc/seed_*``               a wildcard in the key: each match is one seed

A key a training's summary holds may also be written as MLflow names it: ``test/acc`` reads
``test_acc``, ``valid/loss`` reads ``valid_loss`` and ``vitals/steps`` reads ``steps`` (``ALIASES``).
Before anything runs, `bottlenecks check` resolves references against the keys each step declares
it will write (``components.summary_keys.Keys`` in place of a summary; ``references.py``).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from components.imports import suggest
from components.summary_keys import Keys

# a key as MLflow names a training's value -> as its summary holds it (docs/metrics.md, "Summary keys")
ALIASES = {"test/": "test_", "valid/": "valid_", "vitals/": ""}
_BRACKET = re.compile(r"^(?P<source>[^.\[\]]+)\[(?P<sel>[^\]]*)\]\.(?P<key>.+)$")


@dataclass
class Sample:
    """One operand of a check: its values by seed label, the runs that made them, or why absent."""

    ref: str
    values: dict[str, float] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)
    missing: str | None = None
    constant: bool = False
    uncertainty: dict[str, float] = field(default_factory=dict)  # per seed, the value's own 95% half-width
    trainings: dict[str, dict] = field(default_factory=dict)  # where -> convergence of a training behind the values

    @property
    def ok(self) -> bool:
        return self.missing is None

    def shown(self) -> dict[str, Any]:
        """Values by seed as JSON-safe data (non-finite numbers as strings)."""
        return {k: json_number(v) for k, v in self.values.items()}


def json_number(v: float) -> float | str:
    """Return ``v`` or, for NaN/Inf (a diverged run), its name: strict JSON has no NaN."""
    return v if math.isfinite(v) else str(v)


def parse_label(label: str) -> dict[str, str]:
    """Split an instance label ``arch=rnn,seed=0`` into pairs; a bare label ``rnn`` maps ''->value."""
    pairs = {}
    for part in str(label).split(","):
        k, eq, v = part.partition("=")
        if eq:
            pairs[k.strip()] = v.strip()
        else:
            pairs[""] = k.strip()
    return pairs


def _same(a: str, b: str) -> bool:
    """Compare label values as numbers where both are numbers (``50`` == ``50.0``)."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def _matches(label: dict[str, str], selector: dict[str, str]) -> bool:
    for k, v in selector.items():
        if k == "":  # a bare selector value matches any axis
            if not any(_same(x, v) for x in label.values()):
                return False
        elif k in label:
            if not _same(label[k], v):
                return False
        elif not ("" in label and _same(label[""], v)):
            return False
    return True


def _unwrap(value: Any) -> tuple[Any, str | None]:
    """Accept a whole step output ``{"summary": ..., "run_id": ...}`` as well as its summary."""
    if isinstance(value, dict) and isinstance(value.get("summary"), dict):
        run_id = value.get("run_id")
        return value["summary"], run_id if isinstance(run_id, str) else None
    return value, None


def is_matrixed(source: Any) -> bool:
    """A matrixed step arrives as a dict of instance label -> summary dict."""
    source, _ = _unwrap(source)
    return isinstance(source, dict) and bool(source) and all(isinstance(_unwrap(v)[0], dict) for v in source.values())


def to_number(value: Any) -> float | None:
    """Return ``value`` as a float, or None if it is not a number (None, text, a list)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "nan" and "inf" as written by json_number
        except ValueError:
            return None
    return None


class Resolver:
    """Look references up in the scorecard's measurements and run ids."""

    def __init__(self, measurements: dict[str, Any], run_ids: dict[str, Any] | None = None):
        self.measurements = measurements
        self.run_ids = run_ids or {}

    def first(self, n: int, sources: list[str] | tuple[str, ...], over: str = "seed") -> Resolver:
        """A resolver that sees only the first ``n`` seeds (``over`` values, in natural order) of each
        named source: a sequential design's look at ``n`` seeds. Other sources are left whole."""
        measurements = dict(self.measurements)
        for name in sources:
            if name in measurements:
                measurements[name] = first_seeds(measurements[name], n, over)
        return Resolver(measurements, self.run_ids)

    def resolve(self, ref: Any, over: str = "seed") -> Sample:
        """Resolve a reference or a numeric constant to a Sample (never raises on absent data)."""
        number = to_number(ref)  # also "1e-4": YAML 1.1 reads it as a string
        if number is not None:
            return Sample(ref=str(ref), values={"": number}, constant=True)
        if not isinstance(ref, str) or not ref.strip():
            return Sample(ref=str(ref), missing=f"{ref!r} is neither a number nor a reference")
        ref = ref.strip()
        source_name = re.split(r"[.\[]", ref, maxsplit=1)[0]
        if source_name not in self.measurements:
            have = ", ".join(sorted(self.measurements)) or "none"
            return Sample(
                ref=ref,
                missing=f"no source {source_name!r} in measurements{suggest(source_name, self.measurements)}; "
                f"have: {have}",
            )
        source, inline_run = _unwrap(self.measurements[source_name])
        if source is None:
            return Sample(ref=ref, missing=f"source {source_name!r} is empty (the step did not run?)")
        if not isinstance(source, dict):
            return Sample(
                ref=ref, missing=f"source {source_name!r} is {type(source).__name__}, expected a summary dict"
            )
        m = _BRACKET.match(ref)
        if m:
            return self._from(ref, source_name, source, m["sel"], m["key"], over, inline_run)
        rest = ref[len(source_name) + 1 :]
        if not is_matrixed(source):
            return self._from(ref, source_name, source, None, rest, over, inline_run)
        # Unbracketed selector: try each split point; the first that finds values wins.
        first = None
        for i in [i for i, c in enumerate(rest) if c == "."]:
            s = self._from(ref, source_name, source, rest[:i], rest[i + 1 :], over, inline_run)
            if s.ok:
                return s
            first = first or s
        return first or self._from(ref, source_name, source, "", rest, over, inline_run)

    def _from(self, ref, name, source, sel, key, over, inline_run) -> Sample:
        if sel is None:  # a plain summary
            values = _lookup(source, key)
            if isinstance(values, str):
                return Sample(ref=ref, missing=f"{name}: {values}")
            rid = inline_run or self.run_ids.get(name)
            return Sample(
                ref=ref,
                values=values,
                run_ids=[rid] if isinstance(rid, str) else [],
                trainings=trainings_of(source, key, name),
            )
        selector = {} if sel.strip() in ("", "*") else parse_label(sel)
        if not all(isinstance(v, dict) for v in source.values()):  # a plain summary, not instances
            return Sample(
                ref=ref,
                missing=f"{name} is not a matrixed step (its measurements are not per instance): "
                f"write {name}.{key} without [{sel}]",
            )
        instances = {lab: _unwrap(v) for lab, v in source.items()}
        chosen = {lab: v for lab, v in instances.items() if _matches(parse_label(lab), selector)}
        if not chosen:
            return Sample(ref=ref, missing=f"{name}: no instance matches [{sel}]{_closest(selector, instances)}")
        if len(chosen) > 1 and sel.strip() != "*":
            varying = _varying_axes(chosen, over)
            if varying:
                hint = f" (or write {name}[*].{key} to take every instance as a seed)" if varying == ["(label)"] else ""
                return Sample(
                    ref=ref,
                    missing=f"{name}[{sel}] matches instances that differ in "
                    f"{', '.join(varying)}: name it in the selector{hint}",
                )
        values: dict[str, float] = {}
        run_ids: list[str] = []
        trainings: dict[str, dict] = {}
        for lab, (summary, inline) in sorted(chosen.items(), key=lambda kv: _natural(kv[0])):
            trainings |= trainings_of(summary, key, f"{name}[{lab}]")
            found = _lookup(summary, key)
            if isinstance(found, str):
                return Sample(ref=ref, missing=f"{name}[{lab}]: {found}")
            # One instance with a seed axis keeps its seed, so it pairs with the same seed elsewhere.
            seed = _seed_label(lab, over) if len(chosen) > 1 or over in parse_label(lab) else ""
            for k, v in found.items():
                values["/".join(p for p in (seed, k) if p)] = v
            rid = inline or _run_id_of(self.run_ids.get(name), lab)
            if rid and rid not in run_ids:
                run_ids.append(rid)
        return Sample(ref=ref, values=values, run_ids=run_ids, trainings=trainings)


def trainings_of(summary: Any, key: str, where: str) -> dict[str, dict]:
    """The trainings behind a summary's values, with their convergence: the summary's own
    ``converged`` (a ``train.model`` summary), and a probe's ``converged/<label>`` for each checkpoint
    it read (``components.probes.common.trainings``), narrowed to the labels ``key`` names
    (``bleu/seq2seq-small/longest`` reads seq2seq-small's training only) when it names any."""
    if not isinstance(summary, dict):
        return {}
    out: dict[str, dict] = {}
    if isinstance(summary.get("converged"), bool):
        out[where] = {"converged": summary["converged"], "late_gain": summary.get("late_gain")}
        if summary.get("late_metric"):
            out[where]["late_metric"] = summary["late_metric"]
    labelled = {k.split("/", 1)[1]: v for k, v in summary.items() if k.startswith("converged/") and isinstance(v, bool)}
    parts = set(str(key).split("/"))
    named = [label for label in labelled if label in parts]
    for label in named or labelled:
        out[f"{where} {label}"] = {"converged": labelled[label], "late_gain": summary.get(f"late_gain/{label}")}
    return out


def _seed_of(label: str, over: str) -> str | None:
    """An instance label's seed: its ``over`` value, or the bare value of a single-axis label."""
    pairs = parse_label(label)
    if over in pairs:
        return pairs[over]
    return pairs[""] if set(pairs) == {""} else None


def seed_values(source: Any, over: str = "seed") -> list[str]:
    """The distinct ``over`` values of a matrixed source's instances, in natural order (``2`` before
    ``10``); a single-axis matrix's bare labels are its seeds. Empty when the source has no such axis."""
    inner, _ = _unwrap(source)
    if not is_matrixed(inner):
        return []
    found = {s for s in (_seed_of(lab, over) for lab in inner) if s is not None}
    return sorted(found, key=_natural)


def first_seeds(source: Any, n: int, over: str = "seed") -> Any:
    """``source`` with only the instances of its first ``n`` seeds (natural order); instances without a
    seed, and sources that are not matrixed over ``over``, are kept as they are."""
    inner, _ = _unwrap(source)
    keep = set(seed_values(source, over)[:n])
    if not keep:
        return source
    kept = {lab: v for lab, v in inner.items() if (s := _seed_of(lab, over)) is None or s in keep}
    return {**source, "summary": kept} if inner is not source else kept


def _closest(selector: dict[str, str], instances: dict) -> str:
    """What the instances offer where a selector matches none: the did-you-mean of the first pair no
    instance has, with the values of its axis in the matrix's order (or every instance, where only the
    pairs together miss)."""
    labels = [parse_label(lab) for lab in instances]
    axes: dict[str, list[str]] = {}
    for lab in labels:
        for k, v in lab.items():
            axes.setdefault(k, [])
            if v not in axes[k]:
                axes[k].append(v)
    for k, v in selector.items():
        if k == "" or "" in axes:  # a bare value, or a single-axis matrix's bare labels
            values = [x for vs in axes.values() for x in vs]
            if not any(_same(x, v) for x in values):
                return f"{suggest(v, values)}; its labels: {', '.join(values)}"
        elif k not in axes:
            return f": it has no axis {k!r}{suggest(k, axes)}; its axes: {', '.join(axes)}"
        elif not any(_same(x, v) for x in axes[k]):
            close = difflib.get_close_matches(v, axes[k], n=1, cutoff=0.6)  # the value alone, not "arch="
            hint = f" (did you mean '{k}={close[0]}'?)" if close else ""
            return f"{hint}; {k} is one of {', '.join(axes[k])}"
    return f" (instances: {', '.join(instances)})"


def _alias(summary: Any, key: str) -> str:
    """``key``, or the name its summary holds it by where it is written as MLflow names it
    (``test/acc`` for ``test_acc``) and only that name is there."""
    has = summary.has if isinstance(summary, Keys) else summary.__contains__
    if "*" in key or has(key):
        return key
    for mlflow, held in ALIASES.items():
        if key.startswith(mlflow) and has(held + key[len(mlflow) :]):
            return held + key[len(mlflow) :]
    return key


def _lookup(summary: dict, key: str) -> dict[str, float] | str:
    """Values of ``key`` (wildcards: one value per match, labelled by what ``*`` matched)."""
    key = _alias(summary, key)
    if isinstance(summary, Keys):  # before anything runs: the keys its step declares
        return _declared(summary, key)
    if "*" in key:
        pattern = re.compile("^" + re.escape(key).replace(r"\*", "(.*)") + "$")
        found = {}
        for k in sorted(summary):
            m = pattern.match(k)
            if m:
                found[",".join(m.groups())] = summary[k]
        if not found:
            return f"no key matches {key!r}"
    elif key in summary:
        found = {"": summary[key]}
    else:
        return f"no measurement {key!r}{suggest(key, summary)}"
    out = {}
    for k, v in found.items():
        # null is how a strict-JSON summary writes NaN/Inf (train.model does): a diverged value.
        number = math.nan if v is None else to_number(v)
        if number is None:
            return f"{key!r} is {v!r}, not a number"
        out[k] = number
    return out


def _declared(keys: Keys, key: str) -> dict[str, float] | str:
    """What ``key`` reads among the keys a step declares (a value of 1.0 each), or why nothing."""
    if "*" in key:
        return keys.matching(key) or f"no key matches {key!r}"
    if keys.has(key):
        return {"": 1.0}
    return f"no measurement {key!r}{suggest(key, keys.names())}"


def _natural(label: str) -> list:
    """Sort key that puts seed=2 before seed=10."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", label)]


def _varying_axes(chosen: dict, over: str) -> list[str]:
    labels = [parse_label(lab) for lab in chosen]
    axes = sorted({k for lab in labels for k in lab})
    return [a or "(label)" for a in axes if a != over and len({lab.get(a) for lab in labels}) > 1]


def _seed_label(label: str, over: str) -> str:
    pairs = parse_label(label)
    return pairs.get(over, pairs.get("", label))


def _run_id_of(run_ids: Any, label: str) -> str | None:
    if isinstance(run_ids, str):
        return run_ids
    if isinstance(run_ids, dict):
        rid = run_ids.get(label)
        return rid if isinstance(rid, str) else None
    return None


__all__ = [
    "ALIASES",
    "Resolver",
    "Sample",
    "first_seeds",
    "is_matrixed",
    "json_number",
    "parse_label",
    "seed_values",
    "to_number",
]
