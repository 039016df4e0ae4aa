"""Cache keys: a step instance's key hashes its component, code version, resolved parameters and the
keys of the instances it reads; the plan's spec hash covers the file, profile and overrides."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flows.language.refs import Ref
from flows.language.spec import Pipeline
from flows.plan._model import Instance
from flows.plan.resources import device_class
from flows.settings import Settings


def cache_key(inst: Instance, instances: dict[str, Instance], settings: Settings) -> str:
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


def spec_hash(pipe: Pipeline, profile: str | None, sets: list[str]) -> str:
    """Hash of what the plan was built from: the file's text, the profile and the ``--set``s."""
    spec = json.dumps({"text": pipe.text, "profile": profile, "sets": sets}, sort_keys=True)
    return hashlib.sha256(spec.encode()).hexdigest()[:16]
