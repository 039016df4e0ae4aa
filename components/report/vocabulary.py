"""The expectation vocabulary: which check kinds exist, their keys, and validation of YAML entries."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from components.bounds import written
from components.imports import suggest
from components.registry import ParameterValueError


class Where(str):
    """A place in the scorecard's parameters: the text a message starts with (``expect[0] (claim 1)
    checks[1]``) and the path into the parameter (``("expect", 0, "checks", 1)``)."""

    path: tuple

    def __new__(cls, text: str, path: tuple = ()) -> Where:
        self = super().__new__(cls, text)
        self.path = tuple(path)
        return self

    def child(self, text: str, *keys: str | int) -> Where:
        """A place inside this one: ``text`` appended to the words, ``keys`` to the path."""
        return Where(f"{self}{text}", (*self.path, *keys))


class ScorecardError(ParameterValueError):
    """An ``expect:`` or ``architectures:`` entry is malformed (a pipeline authoring error). Its message
    starts with where; ``loc`` is the path to the entry, and to the ``key`` the message is about where
    one is named, so the pipeline's error points at the line that writes it."""

    def __init__(self, where: str, text: str, *, key: Any = None, at_key: bool = False):
        super().__init__(f"{where}: {text}")
        path = getattr(where, "path", ())
        self.loc = (*path, key) if path and key is not None else path
        self.at_key = at_key  # the message is about the key itself (an unknown one): point at it, not its value


@dataclass(frozen=True)
class Kind:
    """One check kind: keys it needs, keys it may take (with defaults), which keys are references."""

    required: tuple[str, ...]
    optional: dict[str, Any] = field(default_factory=dict)
    refs: tuple[str, ...] = ()  # keys holding a reference or a number
    ref_lists: tuple[str, ...] = ()  # keys holding a list of references or numbers
    help: str = ""


_THRESHOLD = dict(required=("value", "than"), refs=("value", "than"))
# "matches or beats": within tolerance (absolute) + rel x |than| (relative) counts
_SLACK = dict(_THRESHOLD, optional={"tolerance": 0.0, "rel": 0.0})
KINDS: dict[str, Kind] = {
    "below": Kind(**_THRESHOLD, help="value < than in every seed"),
    "above": Kind(**_THRESHOLD, help="value > than in every seed"),
    "at_most": Kind(**_SLACK, help="value <= than + tolerance + rel * |than| in every seed"),
    "at_least": Kind(**_SLACK, help="value >= than - tolerance - rel * |than| in every seed"),
    "between": Kind(
        ("value",), {"low": None, "high": None}, refs=("value",), help="low <= value <= high in every seed"
    ),
    "equals": Kind(
        ("value", "to"), {"tolerance": 0.0}, refs=("value", "to"), help="|value - to| <= tolerance in every seed"
    ),
    "close": Kind(
        ("a", "b"),
        {"tolerance": 0.0, "rel": 0.0},
        refs=("a", "b"),
        help="|a - b| <= tolerance + rel * max(|a|, |b|) in every seed",
    ),
    "beats": Kind(
        ("a", "b"),
        {"better": "higher", "margin": 0.0, "spread_factor": None, "paired": None},
        refs=("a", "b"),
        help="a beats b: paired t test over seeds (Welch's with paired: false)",
    ),
    "flat": Kind(
        ("value", "base"),
        {"ratio": 0.85, "base_at_least": None},
        refs=("value", "base"),
        help="value >= ratio * base in every seed (and base >= base_at_least)",
    ),
    "cliff": Kind(
        ("value", "base"),
        {"ratio": 0.5, "base_at_least": None},
        refs=("value", "base"),
        help="value <= ratio * base in every seed (and base >= base_at_least)",
    ),
    "increasing": Kind(
        ("values",),
        {"minus": None, "tolerance": 0.0},
        ref_lists=("values", "minus"),
        help="the series rises first to last, no step falling by more than tolerance",
    ),
    "decreasing": Kind(
        ("values",),
        {"minus": None, "tolerance": 0.0},
        ref_lists=("values", "minus"),
        help="the series falls first to last, no step rising by more than tolerance",
    ),
    "exponent_between": Kind(
        (),
        {"value": None, "x": None, "y": None, "low": None, "high": None},
        refs=("value",),
        ref_lists=("y",),
        help="fitted log-log exponent (or a reported one) in [low, high]",
    ),
    "finite": Kind(("value",), refs=("value",), help="no seed diverged (no NaN/Inf)"),
}
CHECK_KEYS = {"check", "over", "expected", "exact", "of"}  # allowed on every check
CLAIM_KEYS = {
    "id",
    "claim",
    "bottleneck",
    "settings",
    "device",
    "expected",
    "checks",
    "min_seeds",
    "over",
    "plots",
    "note",
    "exact",
    "seeds_command",
    "requires",  # "converged": a training still improving when it stopped cannot make the claim hold or fail
}
REQUIRES = ("converged",)
EVERY_CHECK_KEY = tuple(sorted(CHECK_KEYS.union(*(set(k.required) | set(k.optional) for k in KINDS.values()))))
NUMERIC_KEYS = ("low", "high", "tolerance", "rel", "margin", "ratio", "spread_factor", "base_at_least")
REF_RE = re.compile(r"[^.\[\]\s]+(\[[^\[\]]*\])?\..+")  # source[selector].key or source.key (fullmatch)
DEVICES = ("cpu", "gpu", "cuda", "mps")
ID_RE = re.compile(r"[A-Za-z0-9_.-]+")  # claim ids become metric names claim/<id> (fullmatch)
TEXT_KEYS = ("bottleneck", "expected", "note", "over", "seeds_command")  # free text (``over``: an axis name) when given


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_operand(v: Any) -> bool:
    return _is_number(v) or (isinstance(v, str) and bool(REF_RE.fullmatch(v.strip())))


def _kind_of(v: Any) -> str:
    """What a value is, in the words of YAML: a mapping, a list, text, a number, ..."""
    if isinstance(v, dict):
        return f"a mapping {written(v)}"
    if isinstance(v, list):
        return f"a list {written(v)}"
    if isinstance(v, bool):
        return f"true or false ({written(v)})"
    if v is None:
        return "nothing (null)"
    kinds = ((str, "a string"), (int, "an integer"), (float, "a number"))
    return f"{next((name for t, name in kinds if isinstance(v, t)), 'a value')} {written(v)}"


def _text_fields(entry: dict, where: Where) -> None:
    """``bottleneck``, ``expected``, ``note`` and ``over`` are text when given (they are printed, and
    ``over`` names an axis)."""
    for key in TEXT_KEYS:
        v = entry.get(key)
        if v is not None and not isinstance(v, str):
            raise ScorecardError(where, f"{key!r} must be text, got {_kind_of(v)}", key=key)


def as_number(v: Any) -> Any:
    """Read YAML's ``1e-4`` (a string under YAML 1.1 rules) as the number it means."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def validate_check(check: Any, where: Where) -> dict[str, Any]:
    """Check one check entry and return it with defaults filled; raise ScorecardError if malformed."""
    if not isinstance(check, dict):
        raise ScorecardError(where, f"a check is a mapping with 'check: <kind>', got {written(check)}")
    kind_name = check.get("check")
    if kind_name is None:
        raise ScorecardError(where, f"missing 'check:' (one of {', '.join(KINDS)})")
    if not isinstance(kind_name, str):  # a mapping or list here is unhashable: never a KINDS lookup
        raise ScorecardError(
            where,
            f"'check:' names a kind of check (one of {', '.join(KINDS)}), got {_kind_of(kind_name)}",
            key="check",
        )
    if kind_name not in KINDS:
        raise ScorecardError(
            where,
            f"unknown check {written(kind_name)}{suggest(kind_name, KINDS)}; known: {', '.join(KINDS)}",
            key="check",
        )
    kind = KINDS[kind_name]
    allowed = set(kind.required) | set(kind.optional) | CHECK_KEYS
    for key in check:
        if not isinstance(key, str) or key not in allowed:
            raise ScorecardError(
                where,
                f"check {kind_name!r} has no key {written(key)}"
                f"{suggest(str(key), allowed)}; it takes {', '.join(sorted(allowed - CHECK_KEYS))}",
                key=key,
            )
    for key in kind.required:
        if key not in check:
            raise ScorecardError(where, f"check {kind_name!r} needs {key!r} ({kind.help})")
    out = {**kind.optional, **check}
    for key in NUMERIC_KEYS:
        if key in out:
            out[key] = as_number(out[key])
    for key in kind.refs:
        out[key] = as_number(out.get(key))
        if out.get(key) is not None and not _is_operand(out[key]):
            raise ScorecardError(
                where,
                f"{key!r} must be a reference like 'step.key' or "
                f"'step[axis=value].key', or a number; got {written(out[key])}",
                key=key,
            )
    if isinstance(out.get("x"), list):
        out["x"] = [as_number(v) for v in out["x"]]
    for key in kind.ref_lists:
        if isinstance(out.get(key), list):
            out[key] = [as_number(v) for v in out[key]]
        v = out.get(key)
        if v is not None and not (isinstance(v, list) and v and all(_is_operand(x) for x in v)):
            raise ScorecardError(
                where,
                f"{key!r} must be a non-empty list of references ('step.key', 'step[axis=value].key') or numbers",
                key=key,
            )
    _text_fields(out, where)
    _validate_kind(kind_name, out, where)
    return out


def _number(out: dict, key: str, where: Where, *, positive: bool = False) -> None:
    v = out.get(key)
    if v is None:
        return
    if not _is_number(v) or (positive and v < 0):
        raise ScorecardError(
            where,
            f"{key!r} must be a {'non-negative ' if positive else ''}number, got {written(v)}",
            key=key,
        )


def _validate_kind(name: str, out: dict, where: Where) -> None:
    for key in ("low", "high", "base_at_least"):
        _number(out, key, where)
    for key in ("tolerance", "rel", "margin", "ratio", "spread_factor"):
        _number(out, key, where, positive=True)
    if name in ("between", "exponent_between"):
        if out["low"] is None and out["high"] is None:
            raise ScorecardError(where, f"{name!r} needs 'low', 'high' or both")
        if out["low"] is not None and out["high"] is not None and out["low"] > out["high"]:
            raise ScorecardError(where, f"low {out['low']} is above high {out['high']}", key="low")
    for key in ("exact", "paired"):
        if out.get(key) is not None and not isinstance(out[key], bool):
            raise ScorecardError(where, f"{key!r} is true or false, got {written(out[key])}", key=key)
    of = out.get("of")
    if of is not None and of not in ("mean", "median"):
        raise ScorecardError(
            where,
            f"'of' is 'mean' (the default: the seeds' mean, by t) or 'median' (the typical seed, by "
            f"the exact sign test), got {written(of)}",
            key="of",
        )
    if of == "median" and out.get("paired") is False:
        raise ScorecardError(
            where, "'of: median' tests paired differences; it cannot take 'paired: false'", key="paired"
        )
    if name == "beats" and out["better"] not in ("higher", "lower"):
        raise ScorecardError(where, f"'better' is 'higher' or 'lower', got {written(out['better'])}", key="better")
    if name in ("increasing", "decreasing"):
        if out["minus"] is not None and len(out["minus"]) != len(out["values"]):
            raise ScorecardError(
                where,
                f"'minus' has {len(out['minus'])} entries, 'values' "
                f"{len(out['values'])}: they pair up bucket by bucket",
                key="minus",
            )
        if len(out["values"]) < 2:
            raise ScorecardError(where, "a series needs at least 2 values", key="values")
    if name == "exponent_between":
        has_fit = out["x"] is not None or out["y"] is not None
        if (out["value"] is None) == (not has_fit):
            raise ScorecardError(
                where,
                "give either 'value' (a reported exponent) or 'x' and 'y' (sizes and measurements to fit), not both",
            )
        if has_fit:
            x, y = out["x"], out["y"]
            if not (isinstance(x, list) and len(x) >= 2 and all(_is_number(v) and v > 0 for v in x)):
                raise ScorecardError(where, "'x' must be a list of at least 2 positive numbers (e.g. T)", key="x")
            if y is None or len(y) != len(x):
                raise ScorecardError(where, f"'y' must list one measurement per entry of 'x' ({len(x)})", key="y")


def validate_claim(entry: Any, index: int) -> dict[str, Any]:
    """Check one ``expect:`` entry; return it with its checks normalised to a list."""
    where = Where(f"expect[{index}]", ("expect", index))
    if not isinstance(entry, dict):
        raise ScorecardError(where, f"an expectation is a mapping with 'id', 'claim' and a check, got {written(entry)}")
    check_keys = {k for kind in KINDS.values() for k in (*kind.required, *kind.optional)} | {"check"}
    unknown = [k for k in entry if not isinstance(k, str) or (k not in CLAIM_KEYS and k not in check_keys)]
    if unknown:  # before any missing key: a misspelt 'claim:' is an unknown key, not a missing one
        named = Where(f"expect[{index}] (claim {entry['id']})", ("expect", index)) if "id" in entry else where
        raise ScorecardError(
            named,
            f"unknown key {written(unknown[0])}{suggest(str(unknown[0]), CLAIM_KEYS | check_keys)}",
            key=unknown[0],
            at_key=True,
        )
    if "id" not in entry:
        raise ScorecardError(where, "missing 'id' (a short name or number, used in metric claim/<id>)")
    raw_id = entry["id"]
    cid = "" if raw_id is None or isinstance(raw_id, (bool, dict, list)) else str(raw_id)
    if not ID_RE.fullmatch(cid):  # checked before it is quoted in every later message
        got = written(raw_id) if isinstance(raw_id, str) else _kind_of(raw_id)
        raise ScorecardError(
            where, f"id may use letters, digits, '_', '.', '-' only (it names a metric), got {got}", key="id"
        )
    where = Where(f"expect[{index}] (claim {cid})", ("expect", index))
    claim = entry.get("claim")
    if claim is None:
        raise ScorecardError(where, "missing 'claim:' (the sentence the checks test)")
    if not isinstance(claim, str) or not claim.strip():
        raise ScorecardError(where, f"'claim' must be the sentence the checks test, got {_kind_of(claim)}", key="claim")
    device = entry.get("device")
    if device is not None and (not isinstance(device, str) or device not in DEVICES):
        raise ScorecardError(
            where,
            f"device {written(device)} is not one of {', '.join(DEVICES)}{suggest(str(device), DEVICES)}",
            key="device",
        )
    min_seeds = entry.get("min_seeds")
    if min_seeds is not None and (not isinstance(min_seeds, int) or isinstance(min_seeds, bool) or min_seeds < 1):
        raise ScorecardError(where, f"min_seeds must be a positive integer, got {written(min_seeds)}", key="min_seeds")
    requires = entry.get("requires")
    if requires is not None and requires not in REQUIRES:
        raise ScorecardError(
            where,
            f"requires must be one of {', '.join(REQUIRES)}, got {written(requires)}{suggest(str(requires), REQUIRES)}",
            key="requires",
        )
    plots = entry.get("plots")
    if plots is not None and not (isinstance(plots, list) and all(isinstance(p, str) for p in plots)):
        raise ScorecardError(where, f"plots must be a list of plot names, got {written(plots)}", key="plots")
    _text_fields(entry, where)
    settings = entry.get("settings")
    if isinstance(settings, dict):  # a mapping of settings reads as 'key=value, ...'
        entry = {**entry, "settings": ", ".join(f"{k}={v}" for k, v in settings.items())}
    inline = {k: v for k, v in entry.items() if k in check_keys and k not in CLAIM_KEYS}
    if "checks" in entry:
        if inline:
            raise ScorecardError(where, "give one inline 'check:' or a 'checks:' list, not both", key="checks")
        if not isinstance(entry["checks"], list) or not entry["checks"]:
            raise ScorecardError(where, "'checks' must be a non-empty list of checks", key="checks")
        checks = [validate_check(c, where.child(f" checks[{i}]", "checks", i)) for i, c in enumerate(entry["checks"])]
    elif inline:
        checks = [validate_check(inline, where)]
    else:
        raise ScorecardError(where, f"no check: add 'check: <kind>' ({', '.join(KINDS)}) or 'checks:'")
    return {**{k: v for k, v in entry.items() if k in CLAIM_KEYS}, "id": cid, "checks": checks}


def validate_expectations(expect: Any) -> list[dict[str, Any]]:
    """Validate a whole ``expect:`` list (ids unique); return the normalised entries."""
    if not isinstance(expect, list):
        raise ScorecardError(Where("expect", ("expect",)), f"must be a list of expectations, got {_kind_of(expect)}")
    claims = [validate_claim(e, i) for i, e in enumerate(expect)]
    seen: dict[str, int] = {}
    for i, c in enumerate(claims):
        if c["id"] in seen:
            raise ScorecardError(
                Where(f"expect[{i}]", ("expect", i)),
                f"claim id {written(c['id'])} already used by expect[{seen[c['id']]}]",
                key="id",
            )
        seen[c["id"]] = i
    return claims
