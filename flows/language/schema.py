"""JSON Schema for pipeline files, so editors (YAML language server) complete and check them."""

from __future__ import annotations

from typing import Any

from components.registry import declared
from flows.language.spec import PROFILE_STEP_KEYS, SCHEDULE_KEYS
from flows.settings import json_schema as settings_schema

REF_PATTERN = r"^.*\$\{[A-Za-z_][A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*\}.*$"
_REF = {"type": "string", "pattern": REF_PATTERN, "description": "${params.x}, ${matrix.x} or ${step.output}"}
_SCALAR = {"type": ["string", "number", "integer", "boolean"]}
_MAP = ["object", "null"]  # a mapping check reads as empty when it is left empty (`with:`)
_TEXT = ["string", "null"]


def _refs_anywhere(node: Any) -> dict[str, Any]:
    """The schema of a value (``node``) where a reference may stand for the value or any part of it
    (``checkpoints: ['${mt.checkpoint}', {transformer: '${tr.checkpoint}'}]``), as check resolves them."""
    return {"anyOf": [_parts(node), _REF]}


def _parts(node: Any) -> Any:
    """``node`` with a reference allowed in place of each item, entry and property it holds."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _refs_anywhere(out[key])
    if "prefixItems" in out:
        out["prefixItems"] = [_refs_anywhere(n) for n in out["prefixItems"]]
    if "properties" in out:
        out["properties"] = {k: _refs_anywhere(n) for k, n in out["properties"].items()}
    for key in ("anyOf", "oneOf"):
        if key in out:
            out[key] = [_parts(n) for n in out[key]]
    return out


def _with_schema(comp) -> dict[str, Any]:
    """Each parameter: its pydantic schema (type, bounds as minimum/maximum/minItems, choices as
    enum), a reference in place of it or of any part of it."""
    schema = comp.params_model.model_json_schema()
    props = {}
    for name, prop in schema.get("properties", {}).items():
        props[name] = {**_refs_anywhere(prop), "description": prop.get("description", prop.get("title", name))}
    out: dict[str, Any] = {"type": _MAP, "properties": props, "additionalProperties": False}
    required = schema.get("required", [])
    if required:
        out["required"] = required
    if "$defs" in schema:  # its "#/$defs/..." resolve inside this schema, named by its own $id
        out["$id"] = f"urn:bottlenecks:component:{comp.name}"
        out["$defs"] = {k: _parts(v) for k, v in schema["$defs"].items()}
    return out


def _step_properties(comps: dict[str, Any]) -> dict[str, Any]:
    """The keys a step may have: uses, with, matrix, needs, retries, cache, resources, description."""
    return {
        "uses": {
            "type": "string",
            "description": "registered component name or package.module:function",
            "anyOf": [{"enum": sorted(comps)}, {"pattern": r"^[\w.]+:\w+$"}],
        },
        "with": {"type": _MAP, "description": "component parameters"},
        "matrix": {
            "type": _MAP,
            "description": "fan out: axis -> list of values (or ${params.x})",
            "additionalProperties": {
                "anyOf": [{"type": "array", "minItems": 1, "uniqueItems": True, "items": _SCALAR}, _REF]
            },
        },
        "needs": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            "description": "steps that must finish first (without passing data)",
        },
        "retries": {"type": "integer", "minimum": 0},
        "retry_delay": {"type": "number", "minimum": 0},
        "cache": {"type": "boolean", "description": "false: always recompute this step"},
        "resources": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "gpu": {
                    "anyOf": [{"type": "integer", "minimum": 0}, {"const": "all"}],
                    "description": "GPUs this step holds: a count, or all (every GPU the run is offered)",
                }
            },
            "description": "what a worker must offer, e.g. {gpu: 1}, {gpu: 4} or {gpu: all}",
        },
        "description": {"type": _TEXT},
    }


def _step(comps: dict[str, Any], step_props: dict[str, Any]) -> dict[str, Any]:
    """A step: its keys, with ``with:`` checked against the schema of the component it uses."""
    conditions = [
        {
            "if": {"properties": {"uses": {"const": name}}, "required": ["uses"]},
            "then": {"properties": {"with": _with_schema(comp)}},
        }
        for name, comp in sorted(comps.items())
    ]
    return {
        "type": "object",
        "properties": step_props,
        "required": ["uses"],
        "additionalProperties": False,
        "allOf": conditions,
    }


def _profiles(settings: dict[str, Any], step_props: dict[str, Any]) -> dict[str, Any]:
    """Named profiles: a description, params, settings and per-step overrides of a few keys."""
    profile_step = {
        "type": _MAP,
        "additionalProperties": False,
        "properties": {k: step_props[k] for k in PROFILE_STEP_KEYS},
    }
    return {
        "type": _MAP,
        "additionalProperties": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "description": {"type": _TEXT},
                "params": {"type": _MAP},
                "settings": settings,
                "steps": {"type": _MAP, "additionalProperties": profile_step},
            },
        },
    }


def pipeline_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a pipeline file with every component (shipped ones read
    from their declarations, without importing them)."""
    comps = declared()
    step_props = _step_properties(comps)
    settings = {**settings_schema(), "type": _MAP}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "bottlenecks pipeline",
        "type": "object",
        "required": ["name", "steps"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "description": {"type": _TEXT},
            "params": {"type": _MAP, "description": "pipeline-wide values, overridable with --set"},
            "settings": settings,
            "default_profile": {"type": "string"},
            "profiles": _profiles(settings, step_props),
            "schedule": {
                "type": "object",
                "required": ["cron"],
                "additionalProperties": False,
                "properties": {k: {"type": _MAP if k == "parameters" else _TEXT} for k in SCHEDULE_KEYS}
                | {"cron": {"type": "string"}},
            },
            "steps": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": _step(comps, step_props),
                "propertyNames": {"pattern": r"^[A-Za-z0-9_-]+$"},
            },
        },
    }
