"""Build a model by variant name (the model zoo) or by a user's ``module:function`` factory."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from torch import nn

from components.imports import ModuleImportFailed, import_function
from components.train.errors import TrainError  # no pydantic: the GPU benchmark imports this module


def _factory(spec: str):
    """Import ``package.module:function``."""
    try:
        return import_function(spec)
    except ModuleImportFailed as e:
        raise TrainError(f"model {spec!r}: {e}") from None


def field_types(name: str) -> dict[str, str] | None:
    """Return override name -> annotation text for model ``name``, or None when unknown."""
    if ":" in name:
        sig = inspect.signature(_factory(name))
        if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            return None
        return {n: str(p.annotation) for n, p in sig.parameters.items()}
    from components import models

    try:
        cfg = models.config(name)
    except Exception:  # an unknown name is reported by build() with its did-you-mean
        return None
    if not dataclasses.is_dataclass(cfg):
        return None
    return {f.name: str(f.type) for f in dataclasses.fields(cfg)}


def accepted_fields(name: str) -> set[str] | None:
    """Return the override names model ``name`` accepts, or None when unknown."""
    types = field_types(name)
    return None if types is None else set(types)


def build_model(name: str, overrides: dict[str, Any] | None = None) -> nn.Module:
    """Build ``name`` (a registered variant or ``module:function``) with config overrides."""
    overrides = dict(overrides or {})
    if ":" in name:
        model = _factory(name)(**overrides)
    else:
        from components import models

        model = models.build(name, **overrides)
    if not isinstance(model, nn.Module):
        raise TrainError(f"model {name!r} built a {type(model).__name__}, expected a torch nn.Module")
    return model


def data_overrides(meta: dict[str, Any], name: str) -> dict[str, Any]:
    """Config values the data decides (vocab sizes, classes, pad id), limited to what ``name`` accepts."""
    from components.train.tasks import choose  # here: building a model by name reads no data code

    found = choose(meta).config_from(meta)  # the data's task kind says which values it decides
    types = field_types(name)  # None: a factory that takes **kwargs receives every value
    size = found.get("image_size")
    if isinstance(size, list):
        if size[0] == size[1]:
            found["image_size"] = size[0]
        elif types is not None and "tuple" not in types.get("image_size", ""):
            del found["image_size"]  # this model takes square sizes only; its layers adapt to the input
        else:
            found["image_size"] = tuple(size)
    return found if types is None else {k: v for k, v in found.items() if k in types}
