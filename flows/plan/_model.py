"""The plan's data and what every planning phase shares: ``Plan``, ``Instance``, how an instance is
named, did-you-mean. A module of its own so that the phases import it and not each other."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from components.imports import suggest as _suggest
from components.registry import Component
from flows.language.errors import Located
from flows.language.spec import Pipeline, Step
from flows.settings import Settings


@dataclass
class Instance:
    """One step instance: a step with its matrix values bound; a Prefect task run when run."""

    id: str
    step: Step
    component: Component
    bindings: dict[str, Any]
    params: dict[str, Any]
    deps: list[str] = field(default_factory=list)
    key: str = ""
    gpu: int = 0  # GPUs the instance runs on (0: a CPU worker)
    parts: dict[str, Any] = field(default_factory=dict)  # what the key hashes (flows/plan/_keys.py)
    fresh: str = ""  # the --fresh pattern or setting that has it recomputed, cache or not

    @property
    def cacheable(self) -> bool:
        """Whether a cached result may serve it: its step allows caching and nothing asks it fresh."""
        return self.step.cache and not self.fresh

    @property
    def label(self) -> str:
        return self.id


@dataclass
class Plan:
    """A validated, expanded pipeline ready to run."""

    pipeline: Pipeline
    profile: str | None
    params: dict[str, Any]
    settings: Settings
    instances: dict[str, Instance]  # in topological order
    spec_hash: str
    overrides: list[str]
    warnings: list[Located] = field(default_factory=list)  # what check, plan and run print; nothing stops

    @property
    def name(self) -> str:
        return self.pipeline.name


def instance_id(step_id: str, bindings: dict[str, Any]) -> str:
    """Readable instance name, e.g. ``train[arch=lstm,seed=0]``."""
    if not bindings:
        return step_id
    return f"{step_id}[{','.join(f'{k}={v}' for k, v in bindings.items())}]"


def label(bindings: dict[str, Any]) -> str:
    """Key of a matrixed producer's instance as its consumer sees it."""
    if len(bindings) == 1:
        return str(next(iter(bindings.values())))
    return ",".join(f"{k}={v}" for k, v in bindings.items())


def product(axes: dict[str, list]):
    """Yield every binding of a step's matrix axes, the last axis varying fastest."""
    names = list(axes)
    for combo in itertools.product(*(axes[n] for n in names)):
        yield dict(zip(names, combo))


def suggest(word: str, choices) -> str:
    """Did-you-mean among at most a few hundred names: difflib compares every pair of names, and
    a generated file may hold thousands of them."""
    choices = list(choices)
    return _suggest(word, choices) if len(choices) <= 300 else ""


def any_value(value: Any, leaf) -> bool:
    """True when ``leaf`` holds for any value inside nested dicts and lists."""
    if isinstance(value, dict):
        return any(any_value(v, leaf) for v in value.values())
    if isinstance(value, list):
        return any(any_value(v, leaf) for v in value)
    return leaf(value)


def holds_reference(value: Any) -> bool:
    """True when a ``${...}`` appears anywhere inside ``value``."""
    return any_value(value, lambda x: isinstance(x, str) and "${" in x)
