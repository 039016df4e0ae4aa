"""What a run's reports show: each step whose component declares a display role (``shows=`` on
``@component``, roles in ``components.registry.SHOW_ROLES``), with the value of the output that
role names. The engine renders these values and knows no report by name."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERDICTS_TAG = "verdicts_file"  # the parent run's tag naming its verdicts artifact
HEADLINE_TAG = "headline"  # the parent run's tag holding a report's one-line headline
TAG_MOST = 5000  # MLflow keeps a tag value of at most this many characters


@dataclass
class Shown:
    """One step's value for one display role."""

    step: str  # the step instance
    value: Any
    component: Any  # its components.registry.Component


def shown(plan, result, role: str) -> list[Shown]:
    """The step instances of ``result`` whose component shows ``role``, in the plan's order."""
    found = []
    for iid, inst in plan.instances.items():
        value = inst.component.shown(role, result.outputs.get(iid) or {})
        if value is not None:
            found.append(Shown(iid, value, inst.component))
    return found


def markdown(value: Any) -> str | None:
    """The Markdown a shown value stands for: a ``.md`` file's text, or the text itself."""
    if not isinstance(value, str):
        return None
    if value.endswith(".md"):
        return Path(value).read_text(encoding="utf-8") if os.path.isfile(value) else None
    return value


def renderer(component) -> str | None:
    """The ``module:function`` a component names to render its console value, if any."""
    declared = component.shows.get("console")
    return declared[1] if isinstance(declared, (list, tuple)) else None


def short_label(name: str) -> str:
    """``long_lag_lstm[forget_bias=3,seed=0]`` -> ``long_lag_lstm_fb3_s0``: a matrixed plot's name with
    each axis cut to its initials, so that MLflow's file list, which cuts long names, still shows
    which seed a figure is."""
    found = re.fullmatch(r"(.*)\[(.*)\]", name)
    if not found:
        return name
    parts = []
    for pair in found.group(2).split(","):
        key, eq, value = pair.partition("=")
        parts.append("".join(w[0] for w in key.strip().split("_") if w) + value.strip() if eq else pair.strip())
    return "_".join([found.group(1), *parts])


def figures(value: Any) -> dict[str, str]:
    """File name -> path of the image files a shown ``figures`` value names (a list of paths, or
    name -> path); names become file names, keeping the image's extension."""
    if isinstance(value, dict):
        named = {str(k): v for k, v in value.items()}
    elif isinstance(value, list):
        named = {os.path.splitext(os.path.basename(str(p)))[0]: p for p in value}
    else:
        return {}
    out = {}
    for name, path in named.items():
        if isinstance(path, str) and os.path.isfile(path):
            stem = base = re.sub(r"[^A-Za-z0-9_.=-]+", "_", short_label(name)).strip("_") or "figure"
            ext, n = os.path.splitext(path)[1], 2
            while stem + ext in out:  # two steps' plot.png
                stem, n = f"{base}-{n}", n + 1
            out[stem + ext] = path
    return out
