"""Cache keys: a step instance's key is the hash of its parts (component, code version, resolved
parameters, the keys of the instances it reads, matrix values, seed, device class, the versions of
the libraries its results depend on, the fingerprints of the files it reads from outside the
store and the code of every user's callable a parameter names, such as a model factory).
The parts are kept with the cached result, so that ``changes`` can say why a key differs
from the one an earlier run recorded; a new part is hashed and explained here, in one place.
The plan's spec hash covers the file, profile and overrides."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from components.registry import Component
from flows import home
from flows.language.refs import Ref
from flows.language.spec import Pipeline
from flows.plan._fingerprint import Fingerprints, changed_files, path_params
from flows.plan._libraries import libraries
from flows.plan._model import Instance
from flows.plan._user_code import code_changes, code_files, file_changes, user_code
from flows.plan.resources import device_parts
from flows.settings import Settings


def assign_keys(instances: dict[str, Instance], settings: Settings) -> None:
    """Give every instance (in topological order: producers first) its key parts and key."""
    prints = Fingerprints(home.home())
    shared: dict[str, dict] = {}  # by component: its code is looked at once a plan
    try:
        for inst in instances.values():
            inst.parts = key_parts(inst, instances, settings, prints, shared)
            inst.key = digest(inst.parts)
    finally:
        prints.close()


def key_parts(
    inst: Instance, instances: dict[str, Instance], settings: Settings, prints: Fingerprints, shared: dict | None = None
) -> dict:
    """What ``inst``'s result depends on, as the JSON its key hashes (``shared``: the parts of each
    component's own, shared by the instances of one plan)."""
    shared = {} if shared is None else shared
    if inst.component.name not in shared:
        shared[inst.component.name] = _component_parts(inst.component)
    own = shared[inst.component.name]
    parts = {
        "component": inst.component.name,
        "code": own["code"],
        "params": _canonical(inst.params, instances),
        "needs": sorted(instances[d].key for d in inst.deps),
        "matrix": {k: str(v) for k, v in inst.bindings.items()},
        "seed": settings.seed,
        "libraries": own["libraries"],
    }
    found = {where: prints.of(path) for where, path in path_params(inst.component, inst.params, prints.store).items()}
    files = {where: fp for where, fp in found.items() if fp.get("files") != 0}  # an empty folder adds nothing
    if files:
        parts["files"] = files
    if "code_files" in own:
        parts["code_files"] = own["code_files"]
    code = user_code(inst.params)  # a model factory, or any callable, of the user's that a parameter names
    if code:
        parts["user_code"] = code
    parts.update(device_parts(inst.gpu))  # the device class (and a count over 1), never which GPU
    return parts


def _component_parts(comp: Component) -> dict:
    """The parts a component's instances share: its code version, the libraries its results depend
    on and, for a user's component, which of its files' versions it runs."""
    own = {"code": comp.code_version, "libraries": libraries(comp)}
    if not comp.module.startswith("components."):  # a user's component: which file changes
        own["code_files"] = code_files(comp.module)
    return own


EXPLAINING = ("code_files",)  # kept to say why a key changed, not hashed: the code version covers them


def digest(parts: dict) -> str:
    """The key of a step instance's parts."""
    blob = json.dumps({k: v for k, v in parts.items() if k not in EXPLAINING}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _canonical(value: Any, instances: dict[str, Instance]) -> Any:
    """``value`` with each reference replaced by the keys of the producer instances it reads."""
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


def changes(
    old: dict, inst: Instance, instances: dict[str, Instance], rerunning: set[str], prints: Fingerprints | None = None
) -> list[str]:
    """Why ``inst``'s key parts differ from ``old`` (those an earlier run recorded), in a person's words:
    ``torch 2.13.0 -> 2.13.1``, ``parameter lr 0.001 -> 0.002``, ``code of train.model changed``,
    ``input mt_data reruns`` (``rerunning``: the instances this run computes)."""
    new = inst.parts
    said: list[str] = []
    if old.get("component") != new["component"]:
        said.append(f"component {old.get('component')} -> {new['component']}")
    elif old.get("code") != new["code"]:
        said.append(_code_change(new["component"], old.get("code"), new["code"]))
        files = file_changes(old.get("code_files", {}), new.get("code_files", {}))
        if files:
            said[-1] += f": {files}"
    said += _param_changes(_leaves(old.get("params", {})), _leaves(new["params"]), _defaults(inst))
    said += _named_changes("matrix ", old.get("matrix", {}), new["matrix"])
    if old.get("seed") != new["seed"]:
        said.append(f"settings.seed {old.get('seed')} -> {new['seed']}")
    if old.get("device") != new.get("device"):
        said.append(f"device {old.get('device') or 'cpu'} -> {new.get('device') or 'cpu'}")
    elif old.get("gpus", 1) != new.get("gpus", 1):
        said.append(f"GPUs {old.get('gpus', 1)} -> {new.get('gpus', 1)}")
    said += _library_changes(old.get("libraries"), new["libraries"])
    said += code_changes(old.get("user_code", {}), new.get("user_code", {}))
    said += _file_changes(old.get("files", {}), new.get("files", {}), prints)
    said += _input_changes(old.get("needs", []), inst, instances, rerunning)
    return said


def _code_change(component: str, old: str | None, new: str) -> str:
    """``code of train.model changed``, or its declared version's change."""
    before, after = (old or "").partition("+")[0], new.partition("+")[0]
    if old and before != after:
        return f"{component} version {before} -> {after}"
    return f"code of {component} changed"


def _leaves(value: Any, where: str = "") -> dict[str, Any]:
    """Flat ``name.sub[0]`` -> value; a reference counts by the output it reads, its producers' keys
    being the inputs' part."""
    if isinstance(value, dict) and "$ref" in value:
        return {where: f"${{...{value['$ref']}}} of {len(value.get('from', {}))}"}
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{where}.{k}" if where else str(k)))
        return out
    if isinstance(value, list) and value and where:
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{where}[{i}]"))
        return out
    return {where: value}


def _defaults(inst: Instance) -> dict[str, Any]:
    """The component's parameters that have a default, with it (a parameter not written has it)."""
    fields = inst.component.params_model.model_fields
    return {name: f.default for name, f in fields.items() if not f.is_required()}


def _param_changes(old: dict[str, Any], new: dict[str, Any], defaults: dict[str, Any]) -> list[str]:
    """``parameter lr 0.001 -> 0.002``; one written on one side only reads against its default."""
    said = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name, defaults.get(name)), new.get(name, defaults.get(name))
        if (name in old or name in defaults) and (name in new or name in defaults):
            if before != after:
                was, now = ("" if name in side else " (default)" for side in (old, new))
                said.append(f"parameter {name} {_short(before)}{was} -> {_short(after)}{now}")
        elif name not in old:
            said.append(f"parameter {name} added ({_short(after)})")
        else:
            said.append(f"parameter {name} removed (was {_short(before)})")
    return said


def _named_changes(what: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``matrix seed 0 -> 1``, ``parameter warmup added (100)``, ``parameter x removed``."""
    said = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            said.append(f"{what}{name} added ({_short(new[name])})")
        elif name not in new:
            said.append(f"{what}{name} removed (was {_short(old[name])})")
        elif old[name] != new[name]:
            said.append(f"{what}{name} {_short(old[name])} -> {_short(new[name])}")
    return said


def _library_changes(old: dict | None, new: dict) -> list[str]:
    """``torch 2.13.0 -> 2.13.1``; a library that was not recorded then is not a change of its version."""
    if old is None:
        return ["library versions were not recorded then"]
    said = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name, "-"), new.get(name, "-")
        if name not in old:
            said.append(f"depends on {name} now ({after or 'not installed'})")
        elif name not in new:
            said.append(f"depends on {name} no more")
        elif before != after:
            said.append(f"{name} {before or 'not installed'} -> {after or 'not installed'}")
    return said


def _file_changes(old: dict, new: dict, prints: Fingerprints | None) -> list[str]:
    """``data_dir changed (3 files: 1 changed, 2 added)``, ``corpus appeared``, ``vocab is missing``."""
    said = []
    for where in sorted(set(old) | set(new)):
        before, after = old.get(where), new.get(where)
        if before == after:
            continue
        if before is None:
            said.append(f"{where} read from outside the store now")
        elif after is None:
            said.append(f"{where} read from outside the store no more")
        elif after.get("missing"):
            said.append(f"{where} is missing")
        elif before.get("missing"):
            said.append(f"{where} appeared ({_count(after['files'])})")
        else:
            known = prints and changed_files(prints.manifest(before["digest"]), prints.manifest(after["digest"]))
            said.append(f"{where} changed ({known or _count(after['files']) + ' now'})")
    return said


def _input_changes(
    old_needs: list[str], inst: Instance, instances: dict[str, Instance], rerunning: set[str]
) -> list[str]:
    """``input mt_data reruns`` (or ``changed``, when its new result is cached) for each input whose
    key the earlier run did not read; past two of a kind, ``input sum[seed=0] and 5 more rerun``."""
    seen = set(old_needs)
    new = [d for d in inst.deps if instances[d].key not in seen]
    said = []
    for verb, plural, names in (
        ("reruns", "rerun", [d for d in new if d in rerunning]),
        ("changed", "changed", [d for d in new if d not in rerunning]),
    ):
        if len(names) > 2:
            said.append(f"input {names[0]} and {len(names) - 1} more {plural}")
        else:
            said += [f"input {d} {verb}" for d in names]
    return said


def _count(files: int) -> str:
    return f"{files} file{'s' if files != 1 else ''}"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def spec_hash(pipe: Pipeline, profile: str | None, sets: list[str]) -> str:
    """Hash of what the plan was built from: the file's text, the profile and the ``--set``s."""
    spec = json.dumps({"text": pipe.text, "profile": profile, "sets": sets}, sort_keys=True)
    return hashlib.sha256(spec.encode()).hexdigest()[:16]
