"""The pipeline's ``settings:`` block, defined once: every name, its type, default and meaning.

Validation (``language/spec.py``), planning (``plan/build.py``), the JSON Schema
(``language/schema.py``) and the table in ``docs/pipelines.md`` all read ``FIELDS``; the rest
of the engine reads a resolved ``Settings`` by attribute. This module stands alone, below every
layer, so that parsing a pipeline needs nothing from the layers that run it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable

EXECUTORS = ("threads", "processes", "dask")
CLUSTER_KEYS = ("address",)


def _written(value) -> str:
    """A refused value as the file writes it (imported only when a setting is refused: the command that
    hands a run to the warm process reads settings and should not import pydantic for it)."""
    from components.bounds import written

    return written(value)


def _default_workers() -> int:
    return min(4, os.cpu_count() or 1)


def _default_executor() -> str:
    return os.environ.get("BOTTLENECKS_EXECUTOR", "processes")


def check_devices(value: Any) -> str | None:
    """An error message for a bad ``settings.devices`` value, or None."""
    if value in ("auto", "none"):
        return None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)
    ):
        if len(set(value)) != len(value):
            return f"settings.devices lists a GPU twice: {value}"
        return None
    return f"settings.devices must be auto, none or a list of GPU ids such as [0, 1], got {_written(value)}"


def _check_executor(value: Any) -> str | None:
    if value in EXECUTORS:
        return None
    from components.registry import suggest

    hint = suggest(str(value), EXECUTORS)
    return f"settings.executor must be one of {', '.join(EXECUTORS)}, got {_written(value)}{hint}"


def _check_fresh(value: Any) -> str | None:
    if all(isinstance(p, str) and p for p in value):
        return None
    such = "such as ['train*']"
    return f"settings.fresh must be a list of step, step run or component patterns {such}, got {_written(value)}"


def _check_seeds(value: Any) -> str | None:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return f"settings.calibration_seeds must be a list of whole numbers such as [100, 101, 102], got {_written(value)}"


DEFAULT_MAX_SEEDS = 10  # the sequential design's last look when `max_seeds` is not given
UNTIL_DECIDED_KEYS = ("max_seeds", "budget", "spending")
# Pocock-type spending by default: at 3 seeds (2 df) an O'Brien-Fleming first look tests at 4e-5 (t > 108)
# and decides nothing; Pocock's tests at 0.0104 (t > 6.8) and decides the strong effects at the planned seeds
SPENDINGS = ("pocock", "obrien-fleming")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: Any) -> float | None:
    """Seconds of a duration written as a number of seconds or ``90s``, ``45m``, ``1h30m``, ``2d``; None if bad."""
    import re

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value > 0 else None
    if not isinstance(value, str) or not re.fullmatch(r"(\s*\d+(\.\d+)?\s*[smhd]\s*)+", value):
        return None
    total = sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)\s*([smhd])", value))
    return total if total > 0 else None


def check_until_decided(value: Any, where: str = "settings.until_decided") -> str | None:
    """An error message for a bad ``until_decided`` value (``true`` or ``{max_seeds: N, budget: D}``), or None."""
    if value is True or value is False:
        return None
    if not isinstance(value, dict):
        return f"{where} must be true or a mapping such as {{max_seeds: 10, budget: 45m}}, got {_written(value)}"
    unknown = [k for k in value if k not in UNTIL_DECIDED_KEYS]
    if unknown:
        return f"{where} has unknown key {_written(unknown[0])}; allowed: {', '.join(UNTIL_DECIDED_KEYS)}"
    most = value.get("max_seeds", DEFAULT_MAX_SEEDS)
    if not isinstance(most, int) or isinstance(most, bool) or most < 2:
        return f"{where}.max_seeds must be a whole number of seeds, at least 2, got {_written(most)}"
    if value.get("spending", SPENDINGS[0]) not in SPENDINGS:
        return f"{where}.spending must be one of {', '.join(SPENDINGS)}, got {_written(value['spending'])}"
    if "budget" in value and parse_duration(value["budget"]) is None:
        such = "such as 45m, 2h or 1h30m (or seconds)"
        return f"{where}.budget must be a duration {such}, got {_written(value['budget'])}"
    return None


def until_decided(value: Any) -> dict[str, Any] | None:
    """``{max_seeds, budget, spending}`` (budget in seconds or None) of a valid ``until_decided`` value;
    None when off."""
    if not value:
        return None
    given = value if isinstance(value, dict) else {}
    budget = parse_duration(given["budget"]) if "budget" in given else None
    most = int(given.get("max_seeds", DEFAULT_MAX_SEEDS))
    return {"max_seeds": most, "budget": budget, "spending": given.get("spending", SPENDINGS[0])}


def _setting(
    default: Any,
    types: tuple[type, ...],
    doc: str,
    schema: dict,
    check: Callable[[Any], str | None] | None = None,
    shown: str | None = None,
) -> Any:
    """A field of ``Settings`` with what validation, the schema and the docs need to know
    (``shown``: the default as the docs state it, where it depends on the machine)."""
    meta = {
        "types": types,
        "doc": doc,
        "schema": {**schema, "description": doc},
        "check": check,
        "shown": shown if shown is not None else (None if callable(default) else repr(default)),
    }
    if callable(default):
        return field(default_factory=default, metadata=meta)
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


_INT = {"type": "integer"}


@dataclass(kw_only=True)
class Settings:
    """A pipeline's settings after profiles, with defaults for what it does not say."""

    workers: int = _setting(
        _default_workers, (int,), "steps run at once on CPU workers", {**_INT, "minimum": 1}, shown="min(4, cores)"
    )
    seed: int = _setting(0, (int,), "seed of steps whose matrix has no seed axis", _INT)
    device: str = _setting("auto", (str,), "torch device of steps: auto, cpu or cuda", {"type": "string"})
    torch_threads: int = _setting(0, (int,), "torch threads per step (0: cores / workers)", {**_INT, "minimum": 0})
    max_step_runs: int | None = _setting(
        None,
        (int,),
        "most step runs a plan may have",
        {**_INT, "minimum": 1},
        shown="BOTTLENECKS_MAX_STEP_RUNS or 10000",
    )
    executor: str = _setting(
        _default_executor,
        (str,),
        "where steps run: processes, threads or dask",
        {"enum": list(EXECUTORS)},
        _check_executor,
        shown="BOTTLENECKS_EXECUTOR or 'processes'",
    )
    devices: str | list = _setting(
        "auto",
        (str, list),
        "GPUs the run's workers get: auto, none or ids [0, 1]",
        {
            "anyOf": [
                {"enum": ["auto", "none"]},
                {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
            ]
        },
        check_devices,
    )
    cluster: dict = _setting(
        {},
        (dict,),
        "the Dask cluster of executor: dask ({address: tcp://HOST:8786})",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"address": {"type": "string", "description": "tcp://HOST:8786"}},
        },
    )
    lease_timeout: float = _setting(
        12 * 3600,
        (int, float),
        "seconds a run waits for another run's lease on a step",
        {"type": "number", "minimum": 0},
    )
    fresh: list = _setting(
        [],
        (list,),
        "steps computed again even when cached: step ids, step runs or components, * wildcards (as `run --fresh`)",
        {"type": "array", "items": {"type": "string", "minLength": 1}},
        _check_fresh,
    )
    calibration_seeds: list = _setting(
        [],
        (list,),
        "seeds spent choosing this pipeline's design (sizes, steps, thresholds): no step may run one, and "
        "`until_decided` skips them, so a verdict never comes from a seed its design was fitted on",
        {"type": "array", "items": {"type": "integer"}},
        _check_seeds,
    )
    until_decided: bool | dict = _setting(
        False,
        (bool, dict),
        "add seeds to the claims still undecided, under a planned sequential design (as `run --until-decided`): "
        "true, or {max_seeds: N (default 10), budget: DURATION such as 45m, spending: pocock (default) or "
        "obrien-fleming}",
        {
            "anyOf": [
                {"type": "boolean"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "max_seeds": {**_INT, "minimum": 2},
                        "budget": {"anyOf": [{"type": "string"}, {"type": "number", "exclusiveMinimum": 0}]},
                        "spending": {"enum": ["pocock", "obrien-fleming"]},
                    },
                },
            ]
        },
        check_until_decided,
    )

    @classmethod
    def resolve(cls, written: dict[str, Any]) -> "Settings":
        """Defaults overlaid with what a (validated) pipeline wrote."""
        names = {f.name for f in FIELDS}
        return cls(**{k: v for k, v in dict(written).items() if k in names})

    @property
    def address(self) -> str | None:
        """The Dask scheduler address, when one is set."""
        return (self.cluster or {}).get("address")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = dataclasses.fields(Settings)
NAMES = tuple(f.name for f in FIELDS)


def type_names(f: dataclasses.Field) -> str:
    """A setting's types in a pipeline author's words: ``an integer or a string``."""
    from components.bounds import in_words  # here, not at the top: the CLI imports this module at start-up

    kinds = [t for t in f.metadata["types"] if not (t is int and float in f.metadata["types"])]  # a number
    return " or ".join(in_words(t) for t in kinds)


def problems(written: dict[str, Any]) -> dict[str, str]:
    """Each written setting whose value is wrong, with the message (unknown names are the
    caller's, who knows their positions)."""
    found = {}
    for f in FIELDS:
        if f.name not in written:
            continue
        value = written[f.name]
        if not isinstance(value, f.metadata["types"]) or (isinstance(value, bool) and bool not in f.metadata["types"]):
            found[f.name] = f"settings.{f.name} must be {type_names(f)}, got {_written(value)}"
        elif f.metadata["check"] is not None and (msg := f.metadata["check"](value)):
            found[f.name] = msg
    return found


def json_schema() -> dict:
    """The ``settings:`` mapping as JSON Schema."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: f.metadata["schema"] for f in FIELDS},
    }


def markdown_table() -> str:
    """The settings as the Markdown table ``docs/pipelines.md`` shows."""
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{f.name}` | {type_names(f)} | `{f.metadata['shown']}` | {f.metadata['doc']} |" for f in FIELDS]
    return "\n".join(rows)
