"""From a pipeline file to a validated plan: profiles, overrides, matrix expansion, references,
parameter checks against each component, the DAG and the cache key of every step instance."""

from __future__ import annotations

import graphlib
import hashlib
import itertools
import json
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from components.imports import suggest as _suggest
from components.registry import Component, ComponentError, ParameterValueError, get
from flows.language import refs
from flows.language.errors import MAX_ERRORS, Collector, Located, PipelineInvalid
from flows.language.refs import Ref
from flows.language.spec import PROFILE_STEP_KEYS, Pipeline, Step, check_resources, overlay, parse
from flows.language.yamlload import YList, YMap, load, read
from flows.plan import size as plansize
from flows.plan.resources import device_class, gpus, wants_gpu
from flows.settings import Settings

RESERVED_OUTPUTS = ("run_id",)


class _Invalid:
    """Stands in for a reference that already produced an error (no cascading type errors)."""


INVALID = _Invalid()


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


def suggest(word: str, choices) -> str:
    """Did-you-mean among at most a few hundred names: difflib compares every pair of names, and
    a generated file may hold thousands of them."""
    choices = list(choices)
    return _suggest(word, choices) if len(choices) <= 300 else ""


class _Errors(Collector):
    """The errors of one file and of its ``--set`` arguments: a position on line ``-I`` lies in the
    I-th ``--set`` (every check derives a position by moving its column), so whatever check refuses
    an override's value names the ``--set``, not the file."""

    def add(self, pos: tuple[int, int] | None, message: str) -> None:
        if pos is None or pos[0] > 0:
            return super().add(pos, message)
        self.errors.append(Located("--set", -pos[0], pos[1], message))
        if len(self.errors) >= MAX_ERRORS:
            self.errors.append(Located("--set", -pos[0], pos[1], f"stopped checking after {MAX_ERRORS} errors"))
            raise PipelineInvalid(self.errors)


# -- entry point -------------------------------------------------------------------------------------
def build(path: str | Path, *, profile: str | None = None, sets: list[str] | None = None) -> Plan:
    """Load, validate and expand ``path``; raise ``PipelineInvalid`` listing every problem."""
    path = Path(path)
    file = str(path)
    errors = _Errors(file)
    text = read(path, errors)
    if text is None:
        errors.raise_if_any()
    root = load(text, errors)
    if errors.errors:
        errors.raise_if_any()
    pipe = parse(root, file, errors)
    if pipe is None:
        errors.raise_if_any()
    pipe.text = text
    sets = list(sets or [])
    return _Planner(pipe, errors, profile, sets).run()


class _Planner:
    def __init__(self, pipe: Pipeline, errors: Collector, profile: str | None, sets: list[str]):
        self.pipe, self.errors, self.sets = pipe, errors, sets
        self.profile = profile if profile is not None else pipe.default_profile
        self.components: dict[str, Component] = {}
        self.axes: dict[str, dict[str, list]] = {}
        self.instances: dict[str, list[Instance]] = {}
        self._groups: dict[tuple, dict[tuple, list[dict]]] = {}

    def run(self) -> Plan:
        params, written = self._apply_profile()
        settings = Settings.resolve(written)
        self._apply_overrides(params)
        self._check_params(params)
        for step in self.pipe.steps.values():
            self.axes[step.id] = self._matrix(step, params)
        order = self._order() or list(self.pipe.steps)  # on a cycle, keep checking in file order
        self._check_size(settings)  # before importing or expanding anything: refused, not built
        for step in self.pipe.steps.values():
            self._component(step)
        all_instances: dict[str, Instance] = {}
        for sid in order:
            step = self.pipe.steps[sid]
            comp = self.components.get(sid)
            insts = []
            needed = {instance_id(n, b) for n in step.needs for b in _product(self.axes.get(n, {}))}
            for bindings in _product(self.axes[sid]):
                inst = Instance(instance_id(sid, bindings), step, comp, bindings, {})
                inst.params = self._resolve(step, step.with_, bindings, params, inst)
                inst.deps = sorted(set(inst.deps) | needed)
                if comp is not None:
                    self._validate_params(step, comp, inst)
                insts.append(inst)
                all_instances[inst.id] = inst
            self.instances[sid] = insts
        self.errors.raise_if_any()
        self._place(all_instances, settings)
        self.errors.raise_if_any()
        for inst in all_instances.values():
            inst.key = _cache_key(inst, all_instances, settings)
        spec = json.dumps({"text": self.pipe.text, "profile": self.profile, "sets": self.sets}, sort_keys=True)
        return Plan(
            self.pipe,
            self.profile,
            params,
            settings,
            all_instances,
            hashlib.sha256(spec.encode()).hexdigest()[:16],
            self.sets,
        )

    def _place(self, instances: dict[str, Instance], settings: Settings) -> None:
        """Give each instance its GPU count; refuse requests no worker of this cluster can meet."""
        remote = settings.executor == "dask" and settings.address
        offered = len(gpus(settings.devices)) if settings.executor != "dask" else 0
        for inst in instances.values():
            if inst.component is None:
                continue
            inst.gpu, explicit = wants_gpu(inst.component, inst.step.resources, offered)
            if explicit and inst.gpu > offered and not remote:  # a remote cluster is asked at run start
                where = (
                    "a local Dask cluster (CPU workers only)"
                    if settings.executor == "dask"
                    else (f"devices: {settings.devices}")
                )
                self.errors.add(
                    inst.step.node.vpos("resources"),
                    f"step {inst.step.id} asks for gpu: {inst.gpu} but this cluster offers none "
                    f"({where}); set settings.devices, run on a GPU machine, or ask for gpu: 0",
                )

    # -- profiles and overrides -------------------------------------------------------------------
    def _apply_profile(self) -> tuple[dict, dict]:
        pipe, errors = self.pipe, self.errors
        params: YMap = pipe.params
        settings: YMap = pipe.settings
        if self.profile is None:
            return dict(params), dict(settings)
        prof = pipe.profiles.get(self.profile)
        if not isinstance(prof, YMap):
            where = pipe.root.kpos("profiles") if "profiles" in pipe.root else (1, 1)
            known = ", ".join(pipe.profiles) or "none defined"
            errors.add(
                where, f"unknown profile {self.profile!r}{suggest(self.profile, pipe.profiles)} (profiles: {known})"
            )
            return dict(params), dict(settings)
        over_params = prof.get("params")
        if isinstance(over_params, YMap):
            for k in over_params:
                if k not in params:
                    errors.add(
                        over_params.kpos(k),
                        f"profile {self.profile!r} sets unknown param {k!r}"
                        f"{suggest(str(k), params)}; declare it under top-level 'params'",
                    )
            params = overlay(params, over_params)
        if isinstance(prof.get("settings"), YMap):
            settings = overlay(settings, prof["settings"])
        over_steps = prof.get("steps")
        if isinstance(over_steps, YMap):
            for sid, node in over_steps.items():
                step = pipe.steps.get(sid)
                if step is None:
                    errors.add(
                        over_steps.kpos(sid),
                        f"profile {self.profile!r} overrides unknown step {sid!r}{suggest(str(sid), pipe.steps)}",
                    )
                    continue
                if not isinstance(node, YMap):
                    errors.add(over_steps.vpos(sid), f"profile override for step {sid!r} must be a mapping")
                    continue
                for k in node:
                    if k not in PROFILE_STEP_KEYS:
                        errors.add(
                            node.kpos(k),
                            f"a profile may override only {', '.join(PROFILE_STEP_KEYS)} of a step, not {k!r}",
                        )
                if isinstance(node.get("uses"), str):
                    # another component: its parameters replace the step's instead of merging
                    step.uses = node["uses"]
                    step.node.val_pos["uses"] = node.vpos("uses")
                    step.with_ = node["with"] if isinstance(node.get("with"), YMap) else YMap(pos=node.pos)
                elif isinstance(node.get("with"), YMap):
                    step.with_ = overlay(step.with_, node["with"])
                if isinstance(node.get("matrix"), YMap):
                    step.matrix = overlay(step.matrix, node["matrix"])
                if isinstance(node.get("retries"), int):
                    step.retries = node["retries"]
                if isinstance(node.get("cache"), bool):
                    step.cache = node["cache"]
                if "resources" in node:
                    step.resources = check_resources(node, sid, errors)
        return dict(params), dict(settings)

    def _apply_overrides(self, params: dict) -> None:
        for i, item in enumerate(self.sets, start=1):
            key, sep, raw = item.partition("=")
            key = key.strip()
            if not sep or not key:
                self.errors.errors.append(Located("--set", i, 1, f"expected KEY=VALUE, got {item!r}"))
                continue
            offset = len(item) - len(raw)  # the value starts at column offset + 1
            refused = len(self.errors.errors)
            value = _override_value(raw, i, offset, self.errors)
            if len(self.errors.errors) > refused:
                continue  # applied, a refused value would add a second error where it is used
            value = _at_set(value, i, offset)
            name = key.removeprefix("params.")
            if "." not in name:
                if name not in params:
                    self.errors.errors.append(
                        Located(
                            "--set",
                            i,
                            1,
                            f"unknown param {name!r}{suggest(name, params)}; params: {', '.join(params) or 'none'}",
                        )
                    )
                    continue
                if _any(value, lambda x: isinstance(x, str) and "${" in x):
                    self.errors.add(
                        (-i, offset + 1),
                        f"param {name!r}: params are plain values and cannot contain ${{...}} references",
                    )
                    continue
                params[name] = value
                continue
            sid, _, pname = name.partition(".")
            step = self.pipe.steps.get(sid)
            if step is None:
                self.errors.errors.append(
                    Located(
                        "--set",
                        i,
                        1,
                        f"unknown param or step {sid!r}{suggest(sid, list(params) + list(self.pipe.steps))}",
                    )
                )
                continue
            over = YMap({pname: value}, pos=(-i, 1))
            over.key_pos[pname] = (-i, len(item) - len(item.lstrip()) + len(key) - len(pname) + 1)
            over.val_pos[pname] = (-i, offset + 1)
            step.with_ = overlay(step.with_, over)

    def _check_params(self, params: dict) -> None:
        for k, v in params.items():
            if _any(v, lambda x: isinstance(x, str) and "${" in x):
                self.errors.add(
                    self.pipe.params.vpos(k),
                    f"param {k!r}: params are plain values and cannot contain ${{...}} references",
                )

    def _check_size(self, settings: Settings) -> None:
        steps = self.pipe.steps
        links = [(c, p, True) for c, p in sorted(self.ref_links)]
        links += [(s.id, n, False) for s in steps.values() for n in s.needs if n in steps and n != s.id]
        root = self.pipe.root
        where = root.kpos("settings") if "settings" in root else root.pos
        if not plansize.check(self.axes, links, steps, settings, self.errors, where):
            self.errors.raise_if_any()

    # -- steps ---------------------------------------------------------------------------------------
    def _component(self, step: Step) -> None:
        try:
            self.components[step.id] = get(step.uses)
        except ComponentError as e:
            self.errors.add(step.node.vpos("uses"), f"step {step.id!r}: {e}")

    def _matrix(self, step: Step, params: dict) -> dict[str, list]:
        axes: dict[str, list] = {}
        for axis, values in step.matrix.items():
            pos = step.matrix.vpos(axis)
            if isinstance(values, str):
                tokens, bad = refs.find(values)
                if tokens and refs.whole(values, tokens) and tokens[0].ns == "params":
                    if tokens[0].name not in params:
                        self.errors.add(
                            pos,
                            f"step {step.id!r}: matrix axis {axis!r} references unknown param "
                            f"{tokens[0].name!r}{suggest(tokens[0].name, params)}",
                        )
                        continue
                    values = params[tokens[0].name]
            if not isinstance(values, list):
                self.errors.add(
                    pos,
                    f"step {step.id!r}: matrix axis {axis!r} must be a list of values "
                    "(or ${params.NAME} holding one)",
                )
                continue
            if not values:
                self.errors.add(pos, f"step {step.id!r}: matrix axis {axis!r} is empty; give at least one value")
                continue
            bad_items = [v for v in values if isinstance(v, (dict, list)) or v is None]
            if bad_items:
                self.errors.add(pos, f"step {step.id!r}: matrix axis {axis!r} values must be plain scalars")
                continue
            if len({str(v) for v in values}) != len(values):
                self.errors.add(pos, f"step {step.id!r}: matrix axis {axis!r} has duplicate values")
                continue
            axes[str(axis)] = list(values)
        return axes

    def _order(self) -> list[str]:
        """Topological order of steps from references and `needs`; cycles are errors."""
        graph: dict[str, set[str]] = {sid: set() for sid in self.pipe.steps}
        self.first_ref: dict[tuple[str, str], tuple[int, int]] = {}
        self.ref_links: set[tuple[str, str]] = set()
        for step in self.pipe.steps.values():
            for dep, pos in _step_refs(step.with_):
                if dep in ("params", "matrix"):
                    continue
                if dep in self.pipe.steps:
                    graph[step.id].add(dep)
                    self.ref_links.add((step.id, dep))
                    self.first_ref.setdefault((step.id, dep), pos)
            for i, need in enumerate(step.needs):
                pos = step.needs_node.ipos(i) if step.needs_node is not None else step.node.vpos("needs")
                if need not in self.pipe.steps:
                    self.errors.add(
                        pos, f"step {step.id!r}: 'needs' names unknown step {need!r}{suggest(need, self.pipe.steps)}"
                    )
                elif need == step.id:
                    self.errors.add(pos, f"step {step.id!r} cannot need itself")
                else:
                    graph[step.id].add(need)
                    self.first_ref.setdefault((step.id, need), pos)
        try:
            return list(graphlib.TopologicalSorter(graph).static_order())
        except graphlib.CycleError as e:
            cycle = e.args[1]  # [a, b, ..., a]
            path = " -> ".join(cycle)
            pos = self.first_ref.get((cycle[1], cycle[0])) or self.pipe.steps[cycle[0]].node.pos
            self.errors.add(pos, f"reference cycle: {path}; a step cannot depend on its own output")
            return []

    # -- references ----------------------------------------------------------------------------------
    def _resolve(
        self, step: Step, value: Any, bindings: dict, params: dict, inst: Instance, pos: tuple[int, int] | None = None
    ) -> Any:
        if isinstance(value, YMap) or isinstance(value, dict):
            out = {}
            for k, v in value.items():
                p = value.vpos(k) if isinstance(value, YMap) else pos
                out[k] = self._resolve(step, v, bindings, params, inst, p)
            return out
        if isinstance(value, list):
            return [
                self._resolve(step, v, bindings, params, inst, value.ipos(i) if isinstance(value, YList) else pos)
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
        resolved = []
        for t in tokens:
            tpos = (line, col + t.start)
            resolved.append(self._lookup(step, t, tpos, bindings, params, inst))
        if refs.whole(value, tokens):
            return resolved[0]
        text = value
        for t, r in zip(tokens, resolved):
            if isinstance(r, Ref):
                self.errors.add(
                    (line, col + t.start),
                    f"step {step.id!r}: a step output reference {t.text} must be the whole value, not part of a string",
                )
                return value
            text = text.replace(t.text, str(r), 1)
        return text

    def _lookup(self, step: Step, t: refs.Token, pos, bindings: dict, params: dict, inst: Instance):
        if t.ns == "params":
            if t.name not in params:
                self.errors.add(pos, f"step {step.id!r}: unknown param {t.name!r} in {t.text}{suggest(t.name, params)}")
                return INVALID
            return params[t.name]
        if t.ns == "matrix":
            if t.name not in self.axes.get(step.id, {}):
                axes = self.axes.get(step.id, {})
                hint = suggest(t.name, axes) or (" (this step has no matrix)" if not axes else "")
                self.errors.add(pos, f"step {step.id!r}: unknown matrix axis {t.name!r} in {t.text}{hint}")
                return INVALID
            return bindings[t.name]
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
        p_axes = self.axes.get(producer.id, {})
        shared = tuple(a for a in p_axes if a in bindings)
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
            for b in _product(self.axes.get(producer, {})):
                groups.setdefault(tuple(str(b[a]) for a in shared), []).append(b)
            self._groups[key] = groups
        return self._groups[key]

    def _validate_params(self, step: Step, comp: Component, inst: Instance) -> None:
        concrete = {k: v for k, v in inst.params.items() if not _any(v, lambda x: isinstance(x, (Ref, _Invalid)))}
        deferred = set(inst.params) - set(concrete)
        try:
            comp.params_model.model_validate(concrete)
        except ValidationError as e:
            names = list(comp.params_model.model_fields)
            for err in e.errors():
                field_name = str(err["loc"][0]) if err["loc"] else ""
                if field_name in deferred:
                    continue
                kind = err["type"]
                if kind == "extra_forbidden":
                    self.errors.add(
                        step.with_.kpos(field_name),
                        f"step {step.id!r}: unknown parameter {field_name!r} for {comp.name}"
                        f"{suggest(field_name, names)}; parameters: {', '.join(names) or 'none'}",
                    )
                elif kind == "missing":
                    where = step.node.kpos("with") if "with" in step.node else step.node.kpos("uses")
                    ann = comp.params_model.model_fields[field_name].annotation
                    self.errors.add(
                        where,
                        f"step {step.id!r}: missing required parameter {field_name!r} "
                        f"({type_name(ann)}) for {comp.name}",
                    )
                elif kind == "value_error" and isinstance(err.get("ctx", {}).get("error"), ParameterValueError):
                    # a parameter type's own check (a model name) says what is wrong in its own words
                    loc = ".".join(str(p) for p in err["loc"])
                    self.errors.add(
                        step.with_.vpos(field_name),
                        f"step {step.id!r}: parameter {loc!r} of {comp.name}: {err['ctx']['error']}",
                    )
                else:
                    loc = ".".join(str(p) for p in err["loc"])
                    ann = (
                        comp.params_model.model_fields[field_name].annotation
                        if field_name in comp.params_model.model_fields
                        else None
                    )
                    got = err.get("input")
                    got = repr(got) if len(repr(got)) <= 80 else repr(got)[:77] + "..."
                    self.errors.add(
                        step.with_.vpos(field_name),
                        f"step {step.id!r}: parameter {loc!r} of {comp.name} expects "
                        f"{type_name(ann)}: {err['msg']} (got {got})",
                    )


def place_on(plan: Plan, offered: int) -> None:
    """Re-place the steps for a cluster known only at run start (a remote Dask cluster offering
    ``offered`` GPU workers): component defaults follow it, and the cache keys follow them."""
    changed = False
    for inst in plan.instances.values():
        gpu, _ = wants_gpu(inst.component, inst.step.resources, offered)
        changed |= gpu != inst.gpu
        inst.gpu = gpu
    if changed:
        for inst in plan.instances.values():  # topological: producers' keys first
            inst.key = _cache_key(inst, plan.instances, plan.settings)


def _override_value(raw: str, i: int, offset: int, errors: Collector) -> Any:
    """A ``--set`` value read as YAML within the file bounds (schedules pass them from the file);
    text that is not valid YAML stays text."""
    if not raw.strip():
        return ""
    found = Collector("--set")
    value = load(raw, found)
    bounds = [e for e in found.errors if not e.message.startswith(("YAML syntax error", "tab character"))]
    for e in bounds:
        errors.errors.append(Located("--set", i, offset + e.col, e.message))
    return raw if found.errors and not bounds else value


def _at_set(value: Any, i: int, offset: int) -> Any:
    """Move the positions inside a ``--set`` value (read on its own, from line 1 column 1) to the
    I-th ``--set`` argument."""

    def where(pos: tuple[int, int]) -> tuple[int, int]:
        return -i, pos[1] + offset if pos[0] == 1 else pos[1]

    if isinstance(value, (YMap, YList)):
        value.pos = where(value.pos)
        if isinstance(value, YMap):
            value.key_pos = {k: where(p) for k, p in value.key_pos.items()}
            value.val_pos = {k: where(p) for k, p in value.val_pos.items()}
            children = value.values()
        else:
            value.item_pos = [where(p) for p in value.item_pos]
            children = value
        for child in children:
            _at_set(child, i, offset)
    return value


def _product(axes: dict[str, list]):
    names = list(axes)
    for combo in itertools.product(*(axes[n] for n in names)):
        yield dict(zip(names, combo))


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


def _any(value: Any, leaf) -> bool:
    """True when ``leaf`` holds for any value inside nested dicts and lists."""
    if isinstance(value, dict):
        return any(_any(v, leaf) for v in value.values())
    if isinstance(value, list):
        return any(_any(v, leaf) for v in value)
    return leaf(value)


def type_name(ann) -> str:
    if ann is None:
        return "a value"
    if typing.get_args(ann) or not hasattr(ann, "__name__"):
        return str(ann).replace("typing.", "")
    return ann.__name__


def _canonical(value: Any, instances: dict[str, Instance]) -> Any:
    if isinstance(value, Ref):
        return {
            "$ref": value.output,
            "from": {str(k): instances[i].key for k, i in sorted(value.sources.items(), key=lambda kv: str(kv[0]))},
        }
    if isinstance(value, dict):
        return {str(k): _canonical(v, instances) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v, instances) for v in value]
    return value


def _cache_key(inst: Instance, instances: dict[str, Instance], settings: Settings) -> str:
    """Hash of component name + code version + resolved params + the keys of its inputs."""
    payload = {
        "component": inst.component.name,
        "code": inst.component.code_version,
        "params": _canonical(inst.params, instances),
        "needs": sorted(instances[d].key for d in inst.deps),
        "matrix": {k: str(v) for k, v in inst.bindings.items()},
        "seed": settings.seed,
    }
    if inst.gpu:  # the device class, never which GPU; CPU keys stay as they were
        payload["device"] = device_class(inst.gpu)
    blob = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
