"""The pipeline language: top-level and step keys, checked with their positions.

```yaml
name: b2-gradients
description: ...
params: {steps: 1500}
settings: {workers: 2, seed: 0, device: auto}
default_profile: quick
profiles: {full: {params: {steps: 20000}, steps: {train: {with: {batch_size: 128}}}}}
schedule: {cron: "0 2 * * *", timezone: UTC, profile: quick}
steps:
  data: {uses: data.delayed_recall, with: {lag: 50}}
  train:
    uses: train.model
    with: {data: "${data.dataset}", model: "${matrix.arch}", steps: "${params.steps}"}
    matrix: {arch: [rnn, lstm]}
    retries: 1
```
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from components.bounds import written
from components.registry import suggest
from flows.language.errors import Collector, kind
from flows.language.yamlload import YList, YMap
from flows.settings import CLUSTER_KEYS, NAMES, problems

TOP_KEYS = ("name", "description", "params", "settings", "default_profile", "profiles", "schedule", "steps")
STEP_KEYS = ("uses", "with", "matrix", "needs", "retries", "retry_delay", "cache", "resources", "description")
PROFILE_KEYS = ("description", "params", "settings", "steps")
PROFILE_STEP_KEYS = ("uses", "with", "matrix", "retries", "cache", "resources")
RESOURCE_KEYS = ("gpu",)
SCHEDULE_KEYS = ("cron", "timezone", "profile", "parameters")
# ``uses: package.module:function`` is imported: a path that is not one (``:x``, ``.rel:x``) is refused first
IMPORT_PATH = re.compile(r"[^\W\d]\w*(\.[^\W\d]\w*)*:[^\W\d]\w*")  # identifiers, as Python writes them


@dataclass
class Step:
    """One step as written: positions live in the YMaps."""

    id: str
    uses: str
    with_: YMap
    matrix: YMap
    needs: list[str]
    retries: int
    retry_delay: float
    cache: bool
    node: YMap
    needs_node: YList | None = None
    resources: dict | None = None  # as written (`resources: {gpu: 1}`), None when absent


@dataclass
class Pipeline:
    """A parsed pipeline file before profiles, overrides and matrix expansion."""

    file: str
    name: str
    description: str
    params: YMap
    settings: YMap
    default_profile: str | None
    profiles: YMap
    schedule: YMap | None
    steps: dict[str, Step] = field(default_factory=dict)
    root: YMap | None = None
    text: str = ""
    set_params: dict[str, str] = field(default_factory=dict)  # param -> the `--set` that gave its value


def _unknown_keys(node: YMap, allowed, where: str, errors: Collector) -> None:
    for key in node:
        if key not in allowed:
            errors.add(
                node.kpos(key),
                f"unknown {where} key {written(key)}{suggest(str(key), allowed)}; allowed: {', '.join(allowed)}",
            )


def _mapping(parent: YMap, key: str, errors: Collector, what: str) -> YMap:
    value = parent.get(key)
    if value is None:
        return YMap(pos=parent.vpos(key))
    if not isinstance(value, YMap):
        errors.add(parent.vpos(key), f"{what} must be a mapping, got {kind(value)}")
        return YMap(pos=parent.vpos(key))
    return value


def _name(key: Any) -> str:
    """A mapping key as a name: text as it is, anything else as YAML writes it (``null``, ``true``, ``3``)."""
    return key if isinstance(key, str) else written(key)


def _what(value: Any) -> str:
    """A value as a message names it: its kind for a mapping or a list, else as written."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return written(value)


def _text(node: YMap, keys, what: str, errors: Collector) -> None:
    """Report each of ``keys`` in ``node`` whose value is not text (absent or empty is fine)."""
    for key in keys:
        value = node.get(key)
        if value is not None and not isinstance(value, str):
            errors.add(
                node.vpos(key), f"{what}{written(key)} must be text, got {kind(value)}; quote it if it is meant as one"
            )


def _text_keys(node: YMap, what: str, errors: Collector) -> None:
    """Report, then drop, keys that are not text: a param or profile is named on the command line
    (``--set``, ``--profile``), in ``${params.NAME}`` and in messages, always as text."""
    for key in [k for k in node if not isinstance(k, str)]:
        errors.add(node.kpos(key), f"{what} name {written(key)} must be text; quote it if it is meant as one")
        del node[key]


def _top_level(root: Any, errors: Collector) -> bool:
    """Report an empty file, a top level that is not a mapping (False: nothing to parse), and
    unknown or missing top-level keys."""
    if root is None:
        errors.add((1, 1), "the file is empty; a pipeline needs at least 'name' and 'steps'")
        return False
    if not isinstance(root, YMap):
        pos = getattr(root, "pos", (1, 1))
        errors.add(pos, f"the top level must be a mapping with 'name' and 'steps', got {kind(root)}")
        return False
    _unknown_keys(root, TOP_KEYS, "top-level", errors)
    for required in ("name", "steps"):
        if required not in root:
            errors.add(root.pos, f"missing required top-level key {required!r}")
    if "name" in root and not isinstance(root.get("name"), str):
        errors.add(root.vpos("name"), "'name' must be a string")
    _text(root, ("description",), "", errors)
    return True


def _profiles(root: YMap, errors: Collector) -> YMap:
    """Check every profile's keys and settings; drop a step override's bad ``uses:`` (reported)."""
    profiles = _mapping(root, "profiles", errors, "'profiles'")
    _text_keys(profiles, "profile", errors)
    for pname, prof in profiles.items():
        if not isinstance(prof, YMap):
            errors.add(profiles.vpos(pname), f"profile {pname!r} must be a mapping")
            continue
        _unknown_keys(prof, PROFILE_KEYS, f"profile {pname!r}", errors)
        _text(prof, ("description",), f"profile {pname!r}: ", errors)
        _check_settings(_mapping(prof, "settings", errors, "'settings'"), errors)
        over_steps = prof.get("steps")
        for sid, over in over_steps.items() if isinstance(over_steps, YMap) else ():
            if isinstance(over, YMap) and not _uses_ok(over, _name(sid), errors):
                del over["uses"]  # reported; the override is not applied
    return profiles


def _default_profile(root: YMap, profiles: YMap, errors: Collector) -> str | None:
    """Return ``default_profile`` when it is text (None otherwise), reporting one that names no profile."""
    default_profile = root.get("default_profile")
    if default_profile is not None and not isinstance(default_profile, str):  # never looked up or suggested
        errors.add(
            root.vpos("default_profile"), f"default_profile must be the name of a profile, got {_what(default_profile)}"
        )
        return None
    if default_profile is not None and default_profile not in profiles:
        errors.add(
            root.vpos("default_profile"),
            f"default_profile {default_profile!r} is not a profile{suggest(default_profile, profiles)}",
        )
    return default_profile


def _schedule(root: YMap, errors: Collector) -> YMap | None:
    """Return the ``schedule:`` mapping (None when absent), checking its keys and its cron."""
    if "schedule" not in root:
        return None
    schedule = _mapping(root, "schedule", errors, "'schedule'")
    _unknown_keys(schedule, SCHEDULE_KEYS, "schedule", errors)
    _text(schedule, ("cron", "timezone", "profile"), "schedule ", errors)
    _mapping(schedule, "parameters", errors, "schedule 'parameters'")
    if schedule.get("cron") is None:
        errors.add(schedule.pos, "schedule needs a 'cron' expression, e.g. cron: \"0 2 * * *\"")
    return schedule


def _steps(root: YMap, errors: Collector) -> dict[str, Step]:
    """Parse every step of a non-empty ``steps:`` mapping."""
    steps = root.get("steps")
    if "steps" not in root:
        return {}
    if not isinstance(steps, YMap):
        errors.add(
            root.vpos("steps"), "'steps' must be a mapping of step id to step (e.g. 'train: {uses: train.model}')"
        )
        return {}
    if not steps:
        errors.add(root.vpos("steps"), "'steps' is empty; add at least one step")
    parsed = {}
    for sid, node in steps.items():
        step = _parse_step(_name(sid), node, steps, errors)
        if step is not None:
            parsed[step.id] = step
    return parsed


def parse(root: Any, file: str, errors: Collector) -> Pipeline | None:
    """Check the structure of a loaded file and return a ``Pipeline`` (None if unusable)."""
    if not _top_level(root, errors):
        return None
    name = root.get("name")
    params = _mapping(root, "params", errors, "'params'")
    _text_keys(params, "param", errors)
    settings = _mapping(root, "settings", errors, "'settings'")
    _check_settings(settings, errors)
    profiles = _profiles(root, errors)
    default_profile = _default_profile(root, profiles, errors)
    schedule = _schedule(root, errors)
    pipe = Pipeline(
        file=file,
        name=name if isinstance(name, str) else "pipeline",
        description=str(root.get("description") or ""),
        params=params,
        settings=settings,
        default_profile=default_profile,
        profiles=profiles,
        schedule=schedule,
        root=root,
    )
    pipe.steps.update(_steps(root, errors))
    return pipe


def _check_settings(settings: YMap, errors: Collector) -> None:
    _unknown_keys(settings, NAMES, "settings", errors)
    for key, message in problems(settings).items():
        errors.add(settings.vpos(key), message)
    if isinstance(settings.get("cluster"), YMap):
        _unknown_keys(settings["cluster"], CLUSTER_KEYS, "settings.cluster", errors)
        address = settings["cluster"].get("address")
        if address is not None and not (isinstance(address, str) and "://" in address):
            errors.add(
                settings["cluster"].vpos("address"),
                f"settings.cluster.address must be a scheduler address such as tcp://HOST:8786, got {written(address)}",
            )


def _parse_step(sid: str, node: Any, steps: YMap, errors: Collector) -> Step | None:
    if not sid.replace("_", "a").replace("-", "a").isalnum():
        errors.add(steps.kpos(sid), f"step id {sid!r} may contain only letters, digits, '_' and '-'")
    if not isinstance(node, YMap):
        errors.add(steps.vpos(sid), f"step {sid!r} must be a mapping with at least 'uses'")
        return None
    _unknown_keys(node, STEP_KEYS, f"step {sid!r}", errors)
    _text(node, ("description",), f"step {sid!r}: ", errors)
    uses = node.get("uses")
    if not isinstance(uses, str) or not uses:
        errors.add(
            node.kpos("uses") if "uses" in node else node.pos,
            f"step {sid!r} needs 'uses: <component name>' (see `bottlenecks components`)",
        )
        return None
    if not _uses_ok(node, sid, errors):
        return None
    needs_raw = node.get("needs", [])
    needs_node = needs_raw if isinstance(needs_raw, YList) else None
    if isinstance(needs_raw, str):
        needs = [needs_raw]
    elif isinstance(needs_raw, list) and all(isinstance(n, str) for n in needs_raw):
        needs = list(needs_raw)
    else:
        errors.add(node.vpos("needs"), "'needs' must be a step id or a list of step ids")
        needs = []
    retries = node.get("retries", 0)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        errors.add(node.vpos("retries"), f"'retries' must be a non-negative integer, got {written(retries)}")
        retries = 0
    delay = node.get("retry_delay", 0)
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or delay < 0:
        errors.add(node.vpos("retry_delay"), f"'retry_delay' must be seconds >= 0, got {written(delay)}")
        delay = 0
    cache = node.get("cache", True)
    if not isinstance(cache, bool):
        errors.add(node.vpos("cache"), f"'cache' must be true or false, got {written(cache)}")
        cache = True
    resources = check_resources(node, sid, errors)
    return Step(
        id=sid,
        uses=uses,
        with_=_mapping(node, "with", errors, f"step {sid!r}: 'with'"),
        matrix=_mapping(node, "matrix", errors, f"step {sid!r}: 'matrix'"),
        needs=needs,
        retries=retries,
        retry_delay=float(delay),
        cache=cache,
        node=node,
        needs_node=needs_node,
        resources=resources,
    )


def _uses_ok(node: YMap, sid: str, errors: Collector) -> bool:
    """False (with an error) for a ``uses:`` with a colon that is no ``package.module:function``."""
    uses = node.get("uses")
    if isinstance(uses, str) and ":" in uses and not IMPORT_PATH.fullmatch(uses):
        errors.add(
            node.vpos("uses"),
            f"step {sid!r}: uses {uses!r} is neither a component name nor a package.module:function path",
        )
        return False
    return True


def check_resources(node: YMap, sid: str, errors: Collector) -> dict | None:
    """The step's `resources:` mapping, checked (None when absent or invalid)."""
    if "resources" not in node:
        return None
    msg = check_request(node["resources"])
    if msg:
        errors.add(node.vpos("resources"), f"step {sid!r}: {msg}")
        return None
    return dict(node["resources"])


def check_request(value: Any) -> str | None:
    """An error message for a bad ``resources:`` mapping, or None."""
    if not isinstance(value, dict):
        return f"'resources' must be a mapping such as {{gpu: 1}}, got {written(value)}"
    for key, n in value.items():
        if key not in RESOURCE_KEYS:
            return f"unknown resource {written(key)}; a step may ask for: {', '.join(RESOURCE_KEYS)}"
        if n != "all" and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            return (
                f"resources.{key} must be a number of GPUs (0, 1, 2, ...) or all (every GPU the run is "
                f"offered), got {written(n)}"
            )
    return None


def overlay(base: YMap, over: YMap) -> YMap:
    """Deep-merge ``over`` into a copy of ``base`` (mappings merge, everything else replaces)."""
    out = copy.copy(base)
    out.key_pos = dict(base.key_pos)
    out.val_pos = dict(base.val_pos)
    for key, value in over.items():
        if isinstance(value, YMap) and isinstance(out.get(key), YMap):
            out[key] = overlay(out[key], value)
        else:
            out[key] = value
        out.key_pos[key] = over.kpos(key)
        out.val_pos[key] = over.vpos(key)
    return out
