"""Metric names that group: the namespace every logged metric lives in, and the names older runs used.

A metric's first segment says what it is (``NAMESPACES``). A component logs a key through its
context, and the context places a key that is in no namespace under its component's family
(``place``): ``data.*`` under ``data/``, ``train.*`` under ``vitals/``, any other ``<family>.<name>``
(``probe.gradient_decay``, ``eval.bleu``, a user's ``mylab.probe``) under ``<family>/<name>/``.
``current`` maps a key as logged by older runs to its name today, so histories read both: each
component declares the names it logged before (``@component(logged_before=..., renamed_before=...)``),
and this module names no component.
The namespace is documented in docs/metrics.md.
"""

from __future__ import annotations

import functools

from components.context import MOVED, NAMESPACES, metric_namespace, metric_prefix, place_metric

namespace, prefix, place = metric_namespace, metric_prefix, place_metric  # the rule components log by

RETIRED = ("arch/",)  # report.scorecard's arch/<name>/<B> means: no longer logged (scorecard.json keeps them)


def current(key: str, component: str | None = None) -> str:
    """The name today of ``key`` as logged by an older run (no step prefix); identity when current.

    ``component`` is the step run's ``component`` tag: with it every name maps exactly (its declared
    ``renamed_before``, else placed under its namespace); without it, by what the components declare
    they logged before the namespaces (``@component(logged_before=..., renamed_before=...)``): a key
    only one of them claims maps by it, and a key whose owner cannot be told stays as it is.
    """
    if key.startswith(RETIRED):
        return key
    for old, new in MOVED.items():  # a namespace renamed (run/ -> vitals/)
        if key.startswith(old):
            return new + key[len(old) :]
    if component:
        renamed = _renamed(key, _declared(component))
        return renamed if renamed is not None else place(key, component)
    if namespace(key) is not None:
        return key
    for comp in _shipped():
        renamed = _renamed(key, comp)
        if renamed is not None:
            return renamed
    owner = _owner(key)
    return place(key, owner) if owner else key


def _renamed(key: str, comp) -> str | None:
    for old, new in (getattr(comp, "renamed_before", None) or {}).items():
        if key.startswith(old):
            return new + key[len(old) :]
    return None


def _owner(key: str) -> str | None:
    """The component that declares ``key`` among the names it logged before: an entry ``x`` claims
    ``x`` and ``x/...``, ``x/`` only ``x/...``; the longest entry wins (``params/`` over ``params``)."""
    best, length = None, 0
    for comp in _shipped():
        for entry in comp.logged_before:
            hit = key.startswith(entry) if entry.endswith("/") else key == entry or key.startswith(entry + "/")
            if hit and len(entry) > length:
                best, length = comp.name, len(entry)
    return best


@functools.lru_cache(maxsize=256)
def _declared(name: str):
    from components import registry

    try:
        return registry.get(name)
    except registry.ComponentError:  # a component that is gone: placed by its name alone
        return None


def _shipped() -> tuple:
    """Every component's declaration: the shipped ones read from source (nothing imported), users'
    plugins and any other registered one."""
    from components import registry

    return tuple(registry.declared().values())


__all__ = ["MOVED", "NAMESPACES", "RETIRED", "current", "namespace", "place", "prefix"]
