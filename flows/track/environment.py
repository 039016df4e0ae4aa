"""The environment a run's numbers came from (the engine's face of ``components.report.environment``,
which the scorecard uses too): ``describe()``, ``git_commit(path)``, ``differences(a, b)``, and the
parent run's record of it as ``env.*`` tags (``as_tags``/``from_tags``).
"""

from __future__ import annotations

import json
from typing import Any

from components.report.environment import (
    LIBRARIES,
    NUMERIC_KEYS,
    cpu_info,
    describe,
    differences,
    git_commit,
    git_dirty,
    library_versions,
    machine_id,
    machine_summary,
)

TAG_PREFIX = "env."


def as_tags(env: dict[str, Any]) -> dict[str, str]:
    """``env.<key>`` tags (``env.libraries.numpy``); lists as JSON; None left out."""
    tags: dict[str, str] = {}
    for key, value in env.items():
        if isinstance(value, dict):
            tags.update({f"{TAG_PREFIX}{key}.{k}": str(v) for k, v in value.items() if v is not None})
        elif isinstance(value, list):
            tags[f"{TAG_PREFIX}{key}"] = json.dumps(value)
        elif value is not None:
            tags[f"{TAG_PREFIX}{key}"] = str(value)
    return tags


def from_tags(tags: dict[str, str]) -> dict[str, Any]:
    """The environment a run's ``env.*`` tags record (values as text; empty when it has none)."""
    env: dict[str, Any] = {}
    for tag, value in tags.items():
        if not tag.startswith(TAG_PREFIX):
            continue
        key, _, sub = tag[len(TAG_PREFIX) :].partition(".")
        if sub:
            env.setdefault(key, {})[sub] = value
        else:
            env[key] = value
    return env


__all__ = [
    "LIBRARIES",
    "NUMERIC_KEYS",
    "as_tags",
    "cpu_info",
    "describe",
    "differences",
    "from_tags",
    "git_commit",
    "git_dirty",
    "library_versions",
    "machine_id",
    "machine_summary",
]
