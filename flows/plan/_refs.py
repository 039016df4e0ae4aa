"""References: the step order they and ``needs`` give (a cycle is an error), and each ``${...}`` in a
step instance's ``with`` resolved to a param, a matrix value or the producer instances it reads."""

from __future__ import annotations

import graphlib
from typing import Any

from components.registry import Component
from flows.language import refs
from flows.language.errors import Collector
from flows.language.refs import Ref
from flows.language.spec import Pipeline, Step
from flows.language.yamlload import YList, YMap
from flows.plan._model import Instance, instance_id, label, product, suggest

RESERVED_OUTPUTS = ("run_id",)


class _Invalid:
    """Stands in for a reference that already produced an error (no cascading type errors)."""


INVALID = _Invalid()


def pending(value: Any) -> bool:
    """True for a step output reference (or one that failed): its value is known when the step runs."""
    return isinstance(value, (Ref, _Invalid))


# -- the order ---------------------------------------------------------------------------------------
def order(pipe: Pipeline, errors: Collector) -> tuple[list[str], set[tuple[str, str]]]:
    """Topological order of steps from references and `needs` ([] on a cycle, an error), and the
    (consumer, producer) pairs linked by a reference."""
    graph: dict[str, set[str]] = {sid: set() for sid in pipe.steps}
    first_ref: dict[tuple[str, str], tuple[int, int]] = {}
    ref_links: set[tuple[str, str]] = set()
    for step in pipe.steps.values():
        for dep, pos in _step_refs(step.with_):
            if dep in ("params", "matrix"):
                continue
            if dep in pipe.steps:
                graph[step.id].add(dep)
                ref_links.add((step.id, dep))
                first_ref.setdefault((step.id, dep), pos)
        for i, need in enumerate(step.needs):
            pos = step.needs_node.ipos(i) if step.needs_node is not None else step.node.vpos("needs")
            if need not in pipe.steps:
                errors.add(pos, f"step {step.id!r}: 'needs' names unknown step {need!r}{suggest(need, pipe.steps)}")
            elif need == step.id:
                errors.add(pos, f"step {step.id!r} cannot need itself")
            else:
                graph[step.id].add(need)
                first_ref.setdefault((step.id, need), pos)
    try:
        return list(graphlib.TopologicalSorter(graph).static_order()), ref_links
    except graphlib.CycleError as e:
        cycle = e.args[1]  # [a, b, ..., a]
        pos = first_ref.get((cycle[1], cycle[0])) or pipe.steps[cycle[0]].node.pos
        errors.add(pos, f"reference cycle: {' -> '.join(cycle)}; a step cannot depend on its own output")
        return [], ref_links


def _step_refs(value: Any, pos=None):
    """Yield (namespace, position) of every reference inside a `with` block."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _step_refs(v, value.vpos(k) if isinstance(value, YMap) else pos)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _step_refs(v, value.ipos(i) if isinstance(value, YList) else pos)
    elif isinstance(value, str):
        tokens, _ = refs.find(value)
        for t in tokens:
            line, col = pos or (1, 1)
            yield t.ns, (line, col + t.start)


# -- resolution --------------------------------------------------------------------------------------
class Resolver:
    """Resolve the references in step instances' ``with``: a param's value, the instance's matrix
    value, or a ``Ref`` to the producer instances it reads (which become the instance's deps)."""

    def __init__(
        self,
        pipe: Pipeline,
        axes: dict[str, dict[str, list]],
        components: dict[str, Component],
        params: dict,
        errors: Collector,
    ):
        self.pipe, self.axes, self.components, self.params, self.errors = pipe, axes, components, params, errors
        self._groups: dict[tuple, dict[tuple, list[dict]]] = {}

    def resolve(self, step: Step, value: Any, bindings: dict, inst: Instance, pos: tuple[int, int] | None = None):
        """``value`` with every reference inside it resolved for ``inst``."""
        if isinstance(value, YMap) or isinstance(value, dict):
            out = {}
            for k, v in value.items():
                p = value.vpos(k) if isinstance(value, YMap) else pos
                out[k] = self.resolve(step, v, bindings, inst, p)
            return out
        if isinstance(value, list):
            return [
                self.resolve(step, v, bindings, inst, value.ipos(i) if isinstance(value, YList) else pos)
                for i, v in enumerate(value)
            ]
        if not isinstance(value, str) or "${" not in value:
            return value
        tokens, bad = refs.find(value)
        line, col = pos or step.node.pos
        for offset, msg in bad:
            self.errors.add((line, col + offset), f"step {step.id!r}: {msg}")
        if bad:
            return value
        resolved = [self._lookup(step, t, (line, col + t.start), bindings, inst) for t in tokens]
        if refs.whole(value, tokens):
            return resolved[0]
        text = value
        for t, r in zip(tokens, resolved):
            if r is INVALID:  # reported where it is written; the text it was part of is no value
                return INVALID
            if isinstance(r, Ref):
                self.errors.add(
                    (line, col + t.start),
                    f"step {step.id!r}: a step output reference {t.text} must be the whole value, not part of a string",
                )
                return value
            text = text.replace(t.text, str(r), 1)
        return text

    def _lookup(self, step: Step, t: refs.Token, pos, bindings: dict, inst: Instance):
        if t.ns == "params":
            if t.name not in self.params:
                self.errors.add(
                    pos, f"step {step.id!r}: unknown param {t.name!r} in {t.text}{suggest(t.name, self.params)}"
                )
                return INVALID
            return self.params[t.name]
        if t.ns == "matrix":
            if t.name not in self.axes.get(step.id, {}):
                if t.name in step.matrix:  # an axis with bad values: reported where it is written
                    return INVALID
                axes = self.axes.get(step.id, {})
                hint = suggest(t.name, axes) or (" (this step has no matrix)" if not axes else "")
                self.errors.add(pos, f"step {step.id!r}: unknown matrix axis {t.name!r} in {t.text}{hint}")
                return INVALID
            return bindings[t.name]
        return self._output(step, t, pos, bindings, inst)

    def _output(self, step: Step, t: refs.Token, pos, bindings: dict, inst: Instance):
        """A ``${STEP.OUTPUT}``: the producer's instances this instance reads, on the axes they share."""
        producer = self.pipe.steps.get(t.ns)
        if producer is None:
            self.errors.add(
                pos,
                f"step {step.id!r}: reference {t.text} names unknown step {t.ns!r}"
                f"{suggest(t.ns, list(self.pipe.steps) + ['params', 'matrix'])}",
            )
            return INVALID
        comp = self.components.get(producer.id)
        if comp is not None and comp.outputs and t.name not in comp.outputs + RESERVED_OUTPUTS:
            outs = comp.outputs + RESERVED_OUTPUTS
            self.errors.add(
                pos,
                f"step {step.id!r}: step {producer.id!r} ({comp.name}) has no output {t.name!r}"
                f"{suggest(t.name, outs)}; outputs: {', '.join(outs)}",
            )
            return INVALID
        ref = Ref(producer.id, t.name)
        shared = tuple(a for a in self.axes.get(producer.id, {}) if a in bindings)
        for b in self._matching(producer.id, shared).get(tuple(str(bindings[a]) for a in shared), ()):
            rest = {a: v for a, v in b.items() if a not in shared}
            ref.sources[label(rest) if rest else None] = instance_id(producer.id, b)
        if not ref.sources:
            want = ", ".join(f"{a}={bindings[a]}" for a in shared)
            self.errors.add(
                pos,
                f"step {step.id!r}: {t.text} has no instance of {producer.id!r} with {want}; "
                "matrix values of producer and consumer must match on shared axes",
            )
            return INVALID
        inst.deps.extend(ref.sources.values())
        return ref

    def _matching(self, producer: str, shared: tuple[str, ...]) -> dict[tuple, list[dict]]:
        """The producer's bindings grouped by their values on the axes it shares with a consumer."""
        key = (producer, shared)
        if key not in self._groups:
            groups: dict[tuple, list[dict]] = {}
            for b in product(self.axes.get(producer, {})):
                groups.setdefault(tuple(str(b[a]) for a in shared), []).append(b)
            self._groups[key] = groups
        return self._groups[key]
