"""Bounds a component declares with its parameters, and a value they refuse in words.

A parameter states its range where it is declared, as pydantic metadata on its type::

    def make(ctx, *, lag: Size = 20, p: Probability = 0.5, lr: Annotated[float, Field(gt=0)] = 1e-3): ...

`bottlenecks check` refuses a value out of range at the line that sets it, before any step runs;
the JSON Schema shows the range (minimum, maximum, minItems, enum) to editors; a direct call of the
component refuses it too. ``refusal`` words pydantic's error the way a person reads a bound.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections import abc
from pathlib import PurePath
from typing import Annotated, Any

import annotated_types as at
from pydantic import Field

Size = Annotated[int, Field(ge=1)]  # a length, width, batch or vocabulary: at least one
Count = Annotated[int, Field(ge=0)]  # how many (examples, steps, items); 0 is none
Positive = Annotated[float, Field(gt=0)]  # a rate, a scale, a threshold above zero
NonNegative = Annotated[float, Field(ge=0)]
Probability = Annotated[float, Field(ge=0, le=1)]
Fraction = Annotated[float, Field(ge=0, lt=1)]  # a share held out of a whole: less than all of it
Symbols = Annotated[int, Field(ge=2)]  # a vocabulary or a base: one symbol carries nothing
Sizes = Annotated[list[Size], Field(min_length=1)]  # lengths or widths to sweep: at least one
Edges = Annotated[list[Count], Field(min_length=1)]  # bucket edges over lengths

_LIMITS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "greater than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
    "multiple_of": ("multiple_of", "a multiple of"),
}
BOUND_ERRORS = frozenset(_LIMITS) | {"too_short", "too_long", "literal_error", "string_too_short", "string_too_long"}


def where(loc: tuple) -> str:
    """A parameter's place as a person writes it: ``betas[0]``, ``overrides.hidden``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def choices(expected: str) -> list[str]:
    """The choices of a pydantic ``literal_error`` (``"'a', 'b' or 'c'"``) as text."""
    return re.findall(r"'((?:[^'\\]|\\.)*)'", expected)


def written(value: Any, most: int = 60) -> str:
    """``value`` as a pipeline writes it, on one line, cut to ``most`` characters: text quoted
    (``'lots'``), anything else in YAML's flow style (``{a: 1}``, ``[1, 2]``, ``null``, ``true``; JSON,
    which YAML also reads, where a value holds a line break), never a Python repr."""
    if isinstance(value, str):
        text = repr(value)
    else:
        import json

        import yaml

        try:
            flow = {"default_flow_style": True, "width": 10**6, "allow_unicode": True, "sort_keys": False}
            text = yaml.safe_dump(_data(value), **flow)
            text = text.strip().removesuffix("...").strip()
            if "\n" in text:
                text = json.dumps(value, ensure_ascii=False, default=str)
        except Exception:  # noqa: BLE001  (showing a value never decides whether a pipeline is valid)
            text = f"a {type(value).__name__}"
    return text if len(text) <= most else text[: most - 3] + "..."


def _data(value: Any) -> Any:
    """Mappings and lists as plain ones (a loader's position-keeping subclasses dump as data too)."""
    if isinstance(value, dict):
        return {_data(k): _data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_data(v) for v in value]
    return value


def refusal(err: dict) -> str | None:
    """``err`` (one of pydantic's ``errors()``) as "NAME must be at least 1; got -1", or None when
    it is not a bound (a wrong type, an unknown key, a missing value)."""
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    name = where(err["loc"])
    if kind in _LIMITS:
        key, words = _LIMITS[kind]
        limit = ctx[key]
        limit = int(limit) if isinstance(limit, float) and limit.is_integer() else limit  # 0, not 0.0
        return f"{name} must be {words} {limit}; got {written(got)}"
    if kind in ("too_short", "too_long"):
        n = ctx["min_length" if kind == "too_short" else "max_length"]
        if kind == "too_short" and n == 1:
            return f"{name} must not be empty; got {written(got)}"
        return f"{name} must have {'at least' if kind == 'too_short' else 'at most'} {n} items; got {written(got)}"
    if kind in ("string_too_short", "string_too_long"):
        n = ctx["min_length" if kind == "string_too_short" else "max_length"]
        most = "at least" if kind == "string_too_short" else "at most"
        return f"{name} must have {most} {n} characters; got {written(got)}"
    if kind == "literal_error":
        return f"{name} must be {ctx['expected']}; got {written(got)}"
    return None


def _num(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def described(metadata) -> str:
    """The bounds in a type's metadata as a person writes them next to it: ``>= 1``, ``in [0, 1)``,
    ``(non-empty)``; '' for none (a validator is no bound)."""
    found: dict[str, Any] = {}
    for m in metadata:
        if isinstance(getattr(m, "metadata", None), list):  # a Field(...) inside Annotated holds its bounds
            return described(m.metadata)
        for kind, attr in ((at.Ge, "ge"), (at.Gt, "gt"), (at.Le, "le"), (at.Lt, "lt")):
            if isinstance(m, kind):
                found[attr] = _num(getattr(m, attr))
        if isinstance(m, at.MinLen):
            found["min"] = m.min_length
        if isinstance(m, at.MaxLen):
            found["max"] = m.max_length
    return " ".join(part for part in (_range(found), _length(found)) if part)


def _range(found: dict[str, Any]) -> str:
    low = [f"[{found['ge']}"] if "ge" in found else [f"({found['gt']}"] if "gt" in found else []
    high = [f"{found['le']}]"] if "le" in found else [f"{found['lt']})"] if "lt" in found else []
    if low and high:
        return f"in {low[0]}, {high[0]}"
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    return next((f"{words[k]} {found[k]}" for k in words if k in found), "")


def _length(found: dict[str, Any]) -> str:
    n_min, n_max = found.get("min", 0), found.get("max")
    if not n_min and n_max is None:
        return ""
    if n_min == n_max:
        return f"({n_min} items)"
    if n_max is None:
        return "(non-empty)" if n_min == 1 else f"(at least {n_min} items)"
    return f"({n_min} to {n_max} items)"


# a plain type as YAML's reader names one value of it, and several
_NAMES: dict[type, tuple[str, str]] = {
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    bool: ("true or false", "true/false values"),
    str: ("a string", "strings"),
    type(None): ("null", "nulls"),
    dict: ("a mapping", "mappings"),
    list: ("a list", "lists"),
    tuple: ("a list", "lists"),
}


def _words(ann, plural: bool) -> str:
    """``ann`` in words, one value (``an integer``) or several (``integers``)."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:  # a validated type (a model name) reads as its plain type, with its bounds
        bounds = described(args[1:])
        return f"{_words(args[0], plural)} {bounds}" if bounds else _words(args[0], plural)
    if ann is typing.Any:
        return "any values" if plural else "any value"
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        text = " or ".join(_words(a, plural) for a in members)
        return f"{text} or null" if len(members) < len(args) else text
    if origin is typing.Literal:
        return _choices(args, plural)
    if isinstance(ann, type) and issubclass(ann, enum.Enum):  # YAML writes an Enum's values
        return _choices([m.value for m in ann], plural)
    if origin in (list, tuple, set, frozenset, abc.Sequence, abc.Set) and args:
        items = [a for a in args if a is not Ellipsis]
        if origin is tuple and Ellipsis not in args:  # a fixed-length tuple
            inner = ", ".join(_words(a, False) for a in items)
            return f"lists of {len(items)} ({inner})" if plural else f"a list of {len(items)} ({inner})"
        return f"lists of {_words(items[0], True)}" if plural else f"a list of {_words(items[0], True)}"
    if origin in (dict, abc.Mapping) and len(args) == 2:
        body = f"of {_words(args[0], True)} to {_words(args[1], True)}"
        return f"mappings {body}" if plural else f"a mapping {body}"
    plain = {abc.Sequence: list, abc.Set: list, abc.Mapping: dict}.get(origin or ann, origin or ann)
    if isinstance(plain, type):
        for kind, names in _NAMES.items():
            if plain is kind:
                return names[plural]
        if issubclass(plain, PurePath):
            return "file paths" if plural else "a file path"
        for kind, names in _NAMES.items():  # a subclass (an IntEnum, a str-based name) as its base
            if issubclass(plain, kind):
                return names[plural]
    name = getattr(plain, "__name__", str(plain).replace("typing.", ""))
    return f"{name} values" if plural else f"a {name}"


def _choices(values, plural: bool) -> str:
    """``one of 'a', 'b'``; several: ``values among 'a', 'b'``."""
    return ("values among " if plural else "one of ") + ", ".join(repr(v) for v in values)


def in_words(ann) -> str:
    """A type in a pipeline author's words, as YAML writes its values (one value of it)."""
    return _words(ann, plural=False)
