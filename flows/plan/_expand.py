"""Matrix expansion: each step's axes checked, and every step expanded into its instances (one per
combination of axis values), their references resolved and parameters checked."""

from __future__ import annotations

from components.bounds import written
from components.registry import Component
from flows.language import refs
from flows.language.errors import Collector
from flows.language.spec import Pipeline, Step
from flows.plan._model import Instance, instance_id, product, suggest
from flows.plan._params import validate
from flows.plan._refs import Resolver


def axes(step: Step, params: dict, errors: Collector) -> dict[str, list]:
    """The step's matrix axes and their values (``${params.NAME}`` read); a bad axis is an error."""
    found: dict[str, list] = {}
    for axis, values in step.matrix.items():
        pos = step.matrix.vpos(axis)
        if isinstance(values, str):
            tokens, bad = refs.find(values)
            if tokens and refs.whole(values, tokens) and tokens[0].ns == "params":
                if tokens[0].name not in params:
                    errors.add(
                        pos,
                        f"step {step.id!r}: matrix axis {written(axis)} references unknown param "
                        f"{tokens[0].name!r}{suggest(tokens[0].name, params)}",
                    )
                    continue
                values = params[tokens[0].name]
        problem = _axis_problem(values)
        if problem:
            source = f" ({step.matrix[axis]} is {written(values)})" if values is not step.matrix[axis] else ""
            errors.add(pos, f"step {step.id!r}: matrix axis {written(axis)}{source} {problem}")
            continue
        found[str(axis)] = list(values)
    return found


def _axis_problem(values) -> str:
    """What is wrong with an axis's values, or ''."""
    if not isinstance(values, list):
        return "must be a list of values (or ${params.NAME} holding one)"
    if not values:
        return "is empty; give at least one value"
    if any(isinstance(v, (dict, list)) or v is None for v in values):
        return "values must be plain scalars"
    if len({str(v) for v in values}) != len(values):
        return "has duplicate values"
    return ""


def expand(
    pipe: Pipeline,
    order: list[str],
    step_axes: dict[str, dict[str, list]],
    components: dict[str, Component],
    params: dict,
    errors: Collector,
) -> dict[str, Instance]:
    """Every step's instances in ``order``, with their parameters resolved and checked and their deps."""
    resolver = Resolver(pipe, step_axes, components, params, errors)
    instances: dict[str, Instance] = {}
    for sid in order:
        step = pipe.steps[sid]
        comp = components.get(sid)
        needed = {instance_id(n, b) for n in step.needs for b in product(step_axes.get(n, {}))}
        for bindings in product(step_axes[sid]):
            inst = Instance(instance_id(sid, bindings), step, comp, bindings, {})
            inst.params = resolver.resolve(step, step.with_, bindings, inst)
            inst.deps = sorted(set(inst.deps) | needed)
            if comp is not None:
                validate(step, comp, inst, errors, pipe.set_params)
            instances[inst.id] = inst
    return instances
