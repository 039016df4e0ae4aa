"""Each step's component, and a step instance's parameters checked against it (the component's
parameter model), with one located error per refused parameter."""

from __future__ import annotations

import json
import types
import typing

import yaml
from pydantic import ValidationError

from components.bounds import choices, in_words, refusal, where, written
from components.registry import Component, ComponentError, ParameterValueError, get
from flows.language.errors import Collector, kind
from flows.language.spec import Pipeline, Step
from flows.plan._model import Instance, any_value, suggest
from flows.plan._refs import pending


def components(pipe: Pipeline, errors: Collector) -> dict[str, Component]:
    """The component each step uses, by step id; a name the registry refuses is an error."""
    found: dict[str, Component] = {}
    for step in pipe.steps.values():
        try:
            found[step.id] = get(step.uses)
        except ComponentError as e:
            errors.add(step.node.vpos("uses"), f"step {step.id!r}: {e}")
    return found


def type_name(ann) -> str:
    """A parameter's annotation in a pipeline author's words, as YAML writes values: ``an integer``,
    ``a list of integers >= 1``, ``a mapping of strings to lists of lists of strings``, ``a string or
    null``, ``one of 'sum', 'mean'``; never Python's ``dict[str, list[list[str]]]``."""
    if ann is None:
        return "a value"
    return in_words(ann)


def validate(
    step: Step, comp: Component, inst: Instance, errors: Collector, set_params: dict[str, str] | None = None
) -> None:
    """Check ``inst``'s parameters against ``comp``; a parameter that holds a reference is checked
    when it runs. ``set_params``: the params a ``--set`` gave (named in an error where one is used)."""
    concrete = {k: v for k, v in inst.params.items() if not any_value(v, pending)}
    deferred = set(inst.params) - set(concrete)
    try:  # as JSON, strictly: a quoted '30' is no integer and true no number, as the JSON Schema says
        comp.params_model.model_validate_json(json.dumps(_json(concrete), default=str), strict=True)
    except ValidationError as e:
        unions = {}  # a field no member of its union type took: one error, not one per member
        refused = False
        for err in e.errors():
            field_name = str(err["loc"][0]) if err["loc"] else ""
            if field_name in deferred:
                continue
            refused = True
            if len(err["loc"]) > 1 and _union(comp, field_name):
                unions[field_name] = {**err, "loc": (field_name,), "type": "union_type", "input": concrete[field_name]}
            else:
                _refuse(step, comp, err, field_name, errors, set_params)
        for field_name, err in unions.items():
            _refuse(step, comp, err, field_name, errors, set_params)
        if refused:
            return
    _disagreements(step, comp, concrete, deferred, errors)


def _disagreements(step: Step, comp: Component, values: dict, deferred: set[str], errors: Collector) -> None:
    """Say, where the file sets the field, which rules tying two parameters together the step breaks
    (a component's config may declare them: ``disagreements(values, deferred)``, as ``TrainConfig``)."""
    rules = getattr(comp.config, "disagreements", None)
    if rules is None:
        return
    for field_name, problem in rules(values, frozenset(deferred)):
        at = step.with_.vpos(field_name) if field_name in step.with_ else step.node.kpos("with")
        errors.add(at, f"step {step.id!r} ({comp.name}): {problem}")


def _union(comp: Component, field_name: str) -> bool:
    """Whether the field's type is a union of two or more types besides None (pydantic names the member
    each error comes from, ``checkpoints.dict[str,str]``)."""
    field = comp.params_model.model_fields.get(field_name)
    ann = field.annotation if field is not None else None
    if typing.get_origin(ann) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(ann) if a is not type(None)]) > 1


def _json(value):
    """``value`` as JSON reads it: a number with no fraction (``30.0``) is an integer, as in the schema;
    a mapping's keys are text."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _source(step: Step, field_name: str, set_params: dict[str, str] | None) -> str:
    """`` (from ${params.steps}, set by --set steps=abc)``: where a refused value came from, when the
    file writes a param reference there (and a ``--set`` gave that param)."""
    written = step.with_.get(field_name)
    if not isinstance(written, str) or "${" not in written:
        return ""
    name = written.strip()[len("${params.") : -1] if written.strip().startswith("${params.") else None
    given = (set_params or {}).get(name) if name else None
    return f" (from {written}, set by --set {given})" if given else f" (from {written})"


def _refuse(
    step: Step, comp: Component, err: dict, field_name: str, errors: Collector, set_params: dict | None = None
) -> None:
    """Say, where the file sets it, why ``comp`` refused one parameter."""
    fields = comp.params_model.model_fields
    problem = err["type"]
    loc = where(err["loc"])  # betas[0], models.tf
    if problem == "extra_forbidden":
        names = list(fields)
        errors.add(
            step.with_.kpos(field_name),
            f"step {step.id!r}: unknown parameter {field_name!r} for {comp.name}"
            f"{suggest(field_name, names)}; parameters: {', '.join(names) or 'none'}",
        )
    elif problem == "missing":
        at = step.node.kpos("with") if "with" in step.node else step.node.kpos("uses")
        errors.add(
            at,
            f"step {step.id!r}: missing required parameter {field_name!r} "
            f"({type_name(fields[field_name].annotation)}) for {comp.name}",
        )
    elif (bound := refusal(err)) is not None:  # a value of the right type out of its declared range
        hint = suggest(str(err["input"]), choices(err["ctx"]["expected"])) if problem == "literal_error" else ""
        source = _source(step, field_name, set_params)  # ${params.steps}
        errors.add(step.with_.vpos(field_name), f"step {step.id!r} ({comp.name}): {bound}{source}{hint}")
    elif problem == "value_error" and isinstance(err.get("ctx", {}).get("error"), ParameterValueError):
        # a parameter type's own check (a model name, a scorecard's claims) says what is wrong in its own
        # words, at the entry it names where it names one
        own = err["ctx"]["error"]
        inner = tuple(getattr(own, "loc", ()) or ())
        at_key = bool(getattr(own, "at_key", False))  # an unknown key: its own column, not its value's
        at = _located(step, (*err["loc"][:1], *inner[1:]), at_key) if inner[:1] == tuple(err["loc"][:1]) else None
        errors.add(
            at or _located(step, err["loc"]),
            f"step {step.id!r}: parameter {loc!r} of {comp.name}: {own}",
        )
    else:
        ann = fields[field_name].annotation if field_name in fields else None
        errors.add(
            _located(step, err["loc"]),
            f"step {step.id!r}: parameter {loc!r} of {comp.name} expects {type_name(ann)}{_wrong(err)}"
            f"{_source(step, field_name, set_params) if len(err['loc']) == 1 else ''}",
        )


def _located(step: Step, loc: tuple, at_key: bool = False) -> tuple[int, int]:
    """Where the file writes ``loc`` (``("models", 2, "tf")``): the innermost entry the file has, its
    value's position (its key's with ``at_key``, for a key that is itself refused), never the list
    holding it."""
    node, at = step.with_, step.with_.vpos(loc[0]) if loc else step.with_.pos
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            at = node.kpos(part) if at_key and i == len(loc) - 1 else node.vpos(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            at = node.ipos(part) if hasattr(node, "ipos") else at
            node = node[part]
        else:
            break
    return at


def _wrong(err: dict) -> str:
    """What was given instead, in the words of YAML and of this project: ", got a string (lots)"."""
    got = err.get("input")
    if not err["type"].endswith("_type"):
        return f": {_problem(err)} (got {written(got, 80)})"
    if isinstance(got, bool):
        return f", got {str(got).lower()}"
    hint = "; write it without quotes" if isinstance(got, str) and _unquoted_is_value(got) else ""
    return f", got {kind(got)}" + ("" if got is None else f" ({written(got, 80)})") + hint


def _problem(err: dict) -> str:
    """A refusal other than a wrong kind of value, in this project's words (a validator's own message
    as it wrote it, without the library's framing)."""
    ctx = err.get("ctx") or {}
    problem = err["type"]
    if problem == "value_error" and ctx.get("error") is not None:
        return str(ctx["error"])
    if problem == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s), has {ctx.get('actual_length')}"
    if problem == "too_long":
        return f"takes at most {ctx.get('max_length')} item(s), has {ctx.get('actual_length')}"
    message = str(err.get("msg", problem))
    for framing in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(framing)
    return message.replace("Input should be", "it should be").replace("Input", "the value")


def _unquoted_is_value(text: str) -> bool:
    """Whether ``text`` written without quotes is a YAML number or true/false ('30', 'true')."""
    if not (0 < len(text) < 40 and text.isprintable()) or any(c in text for c in "[]{}#:,&*!|>'\"%@`"):
        return False
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(value, (int, float, bool))
