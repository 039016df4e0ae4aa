"""The facts a user groups step runs by (architecture, task, bottleneck, seed, profile), as tags.

The engine knows three: the component's ``bottleneck`` (for one that declares none, such as a
trainer, the one bottleneck of the steps it reads, when they agree), the instance's ``seed`` (its matrix axis of
that name, as the step's context gets it) and the plan's ``profile``. The others a component declares,
each with the parameter that gives it (``@component(..., group_by={"architecture": "model"})``); a
parameter that references another step's output gives the instances it reads (``recall[lag=50]``).
"""

from __future__ import annotations

import json
from typing import Any

from flows.language.refs import Ref
from flows.plan import seeds
from flows.plan._model import Instance, Plan


def facts(plan: Plan, inst: Instance, axes: dict[str, str] | None = None) -> dict[str, str]:
    """The group-by facts of ``inst``, fact -> text (facts it has no value for are left out). ``axes``:
    :func:`seed_axes` of the plan, so a seed axis of another name (a claim's ``over: trial``) is the seed."""
    out: dict[str, str] = {}
    bottleneck = inst.component.bottleneck or _inherited(plan, inst)
    if bottleneck:
        out["bottleneck"] = bottleneck
    axis = (axes or {}).get(inst.step.id, "seed")
    if axis in inst.bindings:
        out["seed"] = str(inst.bindings[axis])
    if plan.profile:
        out["profile"] = plan.profile
    for fact, param in inst.component.group_by.items():
        value = inst.params.get(param)
        if value is not None and value != "":
            out[fact] = _shown(value)
    return out


def seed_axes(plan: Plan) -> dict[str, str]:
    """Step id -> the matrix axis that holds its seeds, for the steps whose seeds a verdict report judges
    (``seed``, or the axis its claims name with ``over:``); other steps' seeds are on ``seed``."""
    found = seeds.find(plan)
    return {step: a.axis for a in (found.axes.values() if found else ()) for step in a.steps}


def _inherited(plan: Plan, inst: Instance) -> str | None:
    """The bottleneck of the steps ``inst`` reads, when they name one and the same."""
    named = {plan.instances[d].component.bottleneck for d in inst.deps if d in plan.instances}
    return named.pop() if len(named) == 1 else None


def _shown(value: Any) -> str:
    """A parameter's value as a tag: text as it is, a reference as the instances it reads."""
    if isinstance(value, Ref):
        return ",".join(sorted(set(value.sources.values())))
    if isinstance(value, str):
        return value
    return json.dumps(value, default=lambda v: _shown(v) if isinstance(v, Ref) else str(v), sort_keys=True)[:500]
