"""Registry of named model variants: a variant returns a config; its family builds the module."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from torch import nn

from components.imports import suggest


class ModelError(ValueError):
    """A model name, configuration or input is invalid."""


def did_you_mean(word, choices) -> str:
    """Return ' (did you mean X?)' for the closest choice, or '' (looser than the engine's: model
    fields and choices are short names)."""
    return suggest(word, choices, cutoff=0.5)


def check_choice(what: str, value: Any, choices) -> None:
    """Raise ModelError if ``value`` is not one of ``choices``."""
    if value not in choices:
        raise ModelError(f"{what} must be one of {sorted(choices)}, got {value!r}{did_you_mean(value, choices)}")


@dataclass(frozen=True)
class Variant:
    """A named configuration: ``make()`` returns the config dataclass, ``builder(config)`` the module."""

    name: str
    make: Callable[[], Any]
    builder: Callable[[Any], nn.Module]
    doc: str


_VARIANTS: dict[str, Variant] = {}


def variant(name: str, builder: Callable[[Any], nn.Module]) -> Callable:
    """Register the decorated config function as the variant ``name``; duplicates are an error."""

    def register(make: Callable[[], Any]) -> Callable[[], Any]:
        if name in _VARIANTS:
            prev = _VARIANTS[name].make
            raise ModelError(
                f"model variant {name!r} registered twice: {prev.__module__}.{prev.__qualname__} "
                f"and {make.__module__}.{make.__qualname__}"
            )
        doc = inspect.getdoc(make) or ""
        _VARIANTS[name] = Variant(name, make, builder, doc.splitlines()[0] if doc else "")
        return make

    return register


def _lookup(name: str) -> Variant:
    if name not in _VARIANTS:
        raise ModelError(f"unknown model {name!r}{did_you_mean(name, _VARIANTS)}; see components.models.names()")
    return _VARIANTS[name]


def config(name: str, **overrides) -> Any:
    """Return the config of variant ``name`` with ``overrides`` replacing its fields."""
    cfg = _lookup(name).make()
    fields = {f.name for f in dataclasses.fields(cfg)}
    for key in overrides:
        if key not in fields:
            raise ModelError(
                f"model {name!r} ({type(cfg).__name__}) has no field {key!r}"
                f"{did_you_mean(key, fields)}; fields: {', '.join(sorted(fields))}"
            )
    return dataclasses.replace(cfg, **overrides)  # re-runs __post_init__ validation


def build(name: str, **overrides) -> nn.Module:
    """Build the model variant ``name``.

    Args:
        name: a registered variant, e.g. ``"lstm-small"``, ``"transformer-base"``.
        **overrides: config fields to replace, e.g. ``vocab_size=10, num_classes=8, forget_bias=3.0``.

    Returns:
        The module, carrying ``.family``, ``.config`` (the dataclass) and ``.removes`` (bottlenecks).

    Raises:
        ModelError: unknown name or field (with a did-you-mean), or an invalid config value.
    """
    cfg = config(name, **overrides)
    model = _lookup(name).builder(cfg)
    model.variant = name
    return model


def names(family: str | None = None) -> list[str]:
    """Return the registered variant names (optionally of one family), sorted."""
    out = sorted(_VARIANTS)
    if family is not None:
        out = [n for n in out if family_of(n) == family]
    return out


def family_of(name: str) -> str:
    """Return the family of variant ``name`` without building it."""
    return getattr(_lookup(name).builder, "family", "unknown")


def describe(name: str) -> dict[str, Any]:
    """Return the variant's family, one-line description and config fields (without building it)."""
    v = _lookup(name)
    return {"name": name, "family": family_of(name), "doc": v.doc, "config": dataclasses.asdict(v.make())}
