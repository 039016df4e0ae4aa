"""What each step will report, and the references that read it: a component's declared summary keys
(``@component(..., summary=[...])``, ``components/summary_keys.py``) expanded for a step instance, and
for a step whose component declares ``references=`` (a report's claims), each reference resolved by
the component's own check against the keys of the steps it names. The engine knows no component by
name: the declarations say which parameters hold the sources and the references."""

from __future__ import annotations

from typing import Any

from components.imports import ModuleImportFailed, import_function
from components.summary_keys import TRANSFORMS, Keys, Placeholder, expand
from flows.language.errors import Collector, Located
from flows.language.refs import Ref
from flows.plan._model import Instance, any_value
from flows.plan._params import _located
from flows.plan._refs import pending

SUMMARY_OUTPUT = "summary"  # the output whose keys ``summary=`` declares


def check_references(instances: dict[str, Instance], errors: Collector, warnings: list[Located]) -> None:
    """Resolve the references of every instance whose component declares ``references=``; an unknown
    source, label or key is an error where the file writes it, and a source whose step declares no
    summary keys a warning (its references are checked for their step and label only)."""
    keys = _Declared(instances)
    warned: set[tuple[str, str]] = set()
    for inst in instances.values():
        decl = inst.component.references if inst.component is not None else {}
        if not decl:
            continue
        params = {name: inst.params.get(name) for name in decl["in"]}
        sources = inst.params.get(decl["sources"])
        if any_value(params, pending) or not isinstance(sources, dict):
            continue  # the references themselves come from a step: read when it runs
        measurements = {}
        for name, value in sources.items():
            measurements[str(name)], silent = keys.of(value)
            for producer in silent:
                if (inst.step.id, producer.step.id) not in warned:
                    warned.add((inst.step.id, producer.step.id))
                    warnings.append(_silent(inst, decl["sources"], name, producer, errors.file))
        try:
            check = import_function(decl["check"])
        except ModuleImportFailed as e:
            errors.add(inst.step.node.vpos("uses"), f"step {inst.step.id!r}: {inst.component.name}: {e}")
            continue
        for loc, message in check(params, measurements):
            errors.add(_located(inst.step, tuple(loc)), f"step {inst.step.id!r} ({inst.component.name}): {message}")


def _silent(inst: Instance, param: str, source: str, producer: Instance, file: str) -> Located:
    """The warning for a source whose step's component declares no summary keys."""
    line, col = _located(inst.step, (param, source))
    comp = producer.component.name
    return Located(
        file if line > 0 else "--set",  # a --set's value: its place among the --set arguments
        abs(line),
        col,
        f"warning: step {inst.step.id!r} ({inst.component.name}): {param} {source!r} reads step "
        f"{producer.step.id!r} ({comp}), whose component declares no summary keys, so its references are "
        f"checked for their step and label only; declare them with @component({comp!r}, ..., "
        'summary=["key", "key/{param}"]) (docs/contracts.md)',
    )


class _Declared:
    """The summary keys of the plan's instances, each expanded once."""

    def __init__(self, instances: dict[str, Instance]):
        self.instances = instances
        self._keys: dict[str, Keys | None] = {}

    def of(self, value: Any) -> tuple[Any, list[Instance]]:
        """What a source will hold: ``Keys`` (one producer) or label -> ``Keys`` (a matrixed one), None
        where its contents are not known before it runs (not a step's summary); and the producers that
        declare no keys (their summaries count as holding any key)."""
        if not isinstance(value, Ref) or value.output != SUMMARY_OUTPUT or not value.sources:
            return None, []
        out: dict[str | None, Keys] = {}
        silent = []
        for label, iid in value.sources.items():
            keys = self.keys(self.instances[iid])
            if keys is None:
                silent.append(self.instances[iid])
            out[label] = Keys(["*"]) if keys is None else keys
        return (out[None] if None in out else out), silent

    def keys(self, inst: Instance) -> Keys | None:
        """The keys ``inst``'s summary will hold, None where its component declares none."""
        if inst.id not in self._keys:
            patterns = inst.component.summary_keys if inst.component is not None else None
            if patterns is None:
                self._keys[inst.id] = None
            else:
                values = lambda placeholder: self.values(inst, placeholder)  # noqa: E731
                self._keys[inst.id] = Keys(k for p in patterns for k in expand(p, values))
        return self._keys[inst.id]

    def values(self, inst: Instance, placeholder: Placeholder) -> list[str] | None:
        """The key parts a placeholder stands for in ``inst``: its parameter's values, followed through
        references along the path, then transformed; None where they are not known before it runs."""
        nodes = [inst]
        for depth, names in enumerate(placeholder.path):
            raws = []
            for node in nodes:
                name = next((n for n in names if n in node.params or n in _fields(node)), None)
                if name is None:
                    return None
                raws.append(node.params[name] if name in node.params else _default(node, name))
            if depth == len(placeholder.path) - 1:
                return _texts(raws, placeholder.transform)
            nodes = []
            for raw in raws:
                producers = self._producers(raw)
                if producers is None:
                    return None
                nodes += producers
        return None

    def _producers(self, value: Any) -> list[Instance] | None:
        """The instances whose outputs ``value`` reads (references inside lists and mappings); None
        where it holds anything else (a path written out), whose steps are not known."""
        if isinstance(value, Ref):
            return [self.instances[iid] for iid in value.sources.values()]
        if isinstance(value, (list, dict)):
            found = []
            for v in value.values() if isinstance(value, dict) else value:
                more = self._producers(v)
                if more is None:
                    return None
                found += more
            return found
        return None


def _fields(inst: Instance) -> dict:
    return inst.component.params_model.model_fields if inst.component is not None else {}


def _default(inst: Instance, name: str) -> Any:
    field = _fields(inst)[name]
    return None if field.is_required() else field.get_default(call_default_factory=True)


def _texts(raws: list[Any], transform: str | None) -> list[str] | None:
    """The key parts of the values ``raws`` (one per instance the path reached), None if any is unknown."""
    out: list[str] = []
    for raw in raws:
        if transform is not None:
            if any_value(raw, pending):
                return None
            try:
                got = list(TRANSFORMS[transform][0](raw))
            except (TypeError, ValueError):  # a value the component refuses: reported as its parameter
                return None
        else:
            got = _labels(raw)
            if got is None:
                return None
        out += [g for g in got if g not in out]
    return out


def _labels(value: Any) -> list[str] | None:
    """A parameter's value as key parts: each element of a list, each key of a mapping, each producer
    label of a reference to a matrixed step, a number or text itself, nothing for null; None where it
    is not known before the step runs (one producer's output)."""
    if value is None:
        return []
    if isinstance(value, Ref):
        labels = [label for label in value.sources if label is not None]
        return labels if labels and len(labels) == len(value.sources) else None
    if isinstance(value, dict):
        return [str(k) for k in value]
    if isinstance(value, list):
        out: list[str] = []
        for v in value:
            got = _labels(v)
            if got is None:
                return None
            out += got
        return out
    if pending(value):
        return None
    return [str(value)]
