"""Profiles and ``--set`` overrides: what a run changes in the file before anything is expanded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.bounds import written
from flows.language.errors import MAX_ERRORS, Collector, Located, PipelineInvalid
from flows.language.spec import PROFILE_STEP_KEYS, Pipeline, check_resources, overlay
from flows.language.yamlload import YList, YMap, clip, load
from flows.plan._model import holds_reference, suggest

NO_REFERENCES = "params are plain values and cannot contain ${...} references"


class SetErrors(Collector):
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


# -- profiles ----------------------------------------------------------------------------------------
def apply_profile(pipe: Pipeline, profile: str | None, errors: Collector) -> tuple[dict, dict]:
    """The params and settings ``profile`` gives; its step overrides change ``pipe``'s steps."""
    params: YMap = pipe.params
    settings: YMap = pipe.settings
    if profile is None:
        return dict(params), dict(settings)
    prof = pipe.profiles.get(profile)
    if not isinstance(prof, YMap):
        where = pipe.root.kpos("profiles") if "profiles" in pipe.root else (1, 1)
        known = ", ".join(pipe.profiles) or "none defined"
        errors.add(where, f"unknown profile {profile!r}{suggest(profile, pipe.profiles)} (profiles: {known})")
        return dict(params), dict(settings)
    over_params = prof.get("params")
    if isinstance(over_params, YMap):
        for k in over_params:
            if k not in params:
                errors.add(
                    over_params.kpos(k),
                    f"profile {profile!r} sets unknown param {written(k)}"
                    f"{suggest(str(k), params)}; declare it under top-level 'params'",
                )
        params = overlay(params, over_params)
    if isinstance(prof.get("settings"), YMap):
        settings = overlay(settings, prof["settings"])
    over_steps = prof.get("steps")
    if isinstance(over_steps, YMap):
        for sid, node in over_steps.items():
            _override_step(pipe, profile, over_steps, sid, node, errors)
    return dict(params), dict(settings)


def _override_step(pipe: Pipeline, profile: str, over_steps: YMap, sid, node, errors: Collector) -> None:
    """Apply one profile's override of step ``sid``."""
    step = pipe.steps.get(sid)
    if step is None:
        errors.add(
            over_steps.kpos(sid), f"profile {profile!r} overrides unknown step {sid!r}{suggest(str(sid), pipe.steps)}"
        )
        return
    if not isinstance(node, YMap):
        errors.add(over_steps.vpos(sid), f"profile override for step {sid!r} must be a mapping")
        return
    for k in node:
        if k not in PROFILE_STEP_KEYS:
            errors.add(
                node.kpos(k), f"a profile may override only {', '.join(PROFILE_STEP_KEYS)} of a step, not {written(k)}"
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


def check_params(pipe: Pipeline, params: dict, errors: Collector) -> None:
    """Refuse a param whose value holds a reference: params are read before any step runs."""
    for k, v in params.items():
        if holds_reference(v):
            errors.add(pipe.params.vpos(k), f"param {written(k)}: {NO_REFERENCES}")


# -- --set overrides ---------------------------------------------------------------------------------
@dataclass
class _Set:
    """The I-th ``--set KEY=VALUE`` argument, its key stripped."""

    i: int
    item: str
    key: str
    offset: int  # the value starts at column offset + 1


def apply_overrides(pipe: Pipeline, sets: list[str], params: dict, errors: Collector) -> None:
    """Apply every ``--set``: ``NAME=VALUE`` (or ``params.NAME``) to ``params``, ``STEP.PARAM=VALUE``
    to the step's ``with``."""
    for i, item in enumerate(sets, start=1):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            errors.errors.append(Located("--set", i, 1, f"expected KEY=VALUE, got {written(item)}"))
            continue
        arg = _Set(i, item, key, len(item) - len(raw))
        refused = len(errors.errors)
        value = _override_value(raw, arg, errors)
        if len(errors.errors) > refused:
            continue  # applied, a refused value would add a second error where it is used
        value = _at_set(value, i, arg.offset)
        if "." not in key.removeprefix("params."):
            _set_param(arg, value, params, errors)
            pipe.set_params[key.removeprefix("params.")] = item  # an error where it is used names the --set
        else:
            _set_step_param(arg, value, pipe, params, errors)


def _set_param(arg: _Set, value: Any, params: dict, errors: Collector) -> None:
    name = arg.key.removeprefix("params.")
    if name not in params:
        message = f"unknown param {name!r}{suggest(name, params)}; params: {', '.join(params) or 'none'}"
        errors.errors.append(Located("--set", arg.i, 1, message))
        return
    if holds_reference(value):
        errors.add((-arg.i, arg.offset + 1), f"param {name!r}: {NO_REFERENCES}")
        return
    params[name] = value


def _set_step_param(arg: _Set, value: Any, pipe: Pipeline, params: dict, errors: Collector) -> None:
    sid, _, pname = arg.key.removeprefix("params.").partition(".")
    step = pipe.steps.get(sid)
    if step is None and sid in params:  # a part of a param: a param is set whole
        message = f"param {sid!r} is set whole (--set {sid}=VALUE); it has no part {pname!r} to set"
        errors.errors.append(Located("--set", arg.i, 1, message))
        return
    if step is None:
        message = f"unknown param or step {sid!r}{suggest(sid, list(params) + list(pipe.steps))}"
        errors.errors.append(Located("--set", arg.i, 1, message))
        return
    over = YMap({pname: value}, pos=(-arg.i, 1))
    over.key_pos[pname] = (-arg.i, len(arg.item) - len(arg.item.lstrip()) + len(arg.key) - len(pname) + 1)
    over.val_pos[pname] = (-arg.i, arg.offset + 1)
    step.with_ = overlay(step.with_, over)


def _override_value(raw: str, arg: _Set, errors: Collector) -> Any:
    """A ``--set`` value read as YAML within the file bounds (schedules pass them from the file);
    text YAML cannot parse is refused, naming the ``--set``, its key and its text."""
    if not raw.strip():
        return ""
    found = Collector("--set")
    value = load(raw, found)
    for e in found.errors:
        message = e.message
        if message.startswith(("YAML syntax error", "tab character")):
            message = (
                f"--set {arg.key}={clip(raw)}: the value is not valid YAML "
                f"({message.removeprefix('YAML syntax error: ')}); quote it to mean text, as in "
                f"--set '{arg.key}=\"...\"'"
            )
        errors.errors.append(Located("--set", arg.i, arg.offset + e.col, message))
    return value


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
