"""Bound the size of a plan before it is expanded: step runs and the links between them.

A matrix is a product: three axes of a hundred values, or one ``${params.x}`` list crossed with
itself, make a million step runs that would take minutes to plan and forever to run. The
bound is counted from the axis lengths alone, so an oversized plan is refused in milliseconds.
"""

from __future__ import annotations

import math
import os

from components.bounds import written
from flows.language.errors import Collector
from flows.settings import Settings

MAX_STEP_RUNS = 10_000  # default; settings.max_step_runs or BOTTLENECKS_MAX_STEP_RUNS raise it
LINKS_PER_RUN = 10  # links (one step run taking another's output) allowed per step run
ENV = "BOTTLENECKS_MAX_STEP_RUNS"
_HOW = f"raise the limit with settings.max_step_runs in the pipeline or {ENV} in the environment"


def limit(settings: Settings, errors: Collector, where) -> int:
    """The step-run limit in force: the pipeline's setting, else the environment, else the default."""
    value = settings.max_step_runs
    if value is None:
        raw = os.environ.get(ENV, "")
        try:
            value = int(raw) if raw else MAX_STEP_RUNS
        except ValueError:
            errors.add(where, f"{ENV}={raw!r} is not a whole number")
            return MAX_STEP_RUNS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.add(where, f"settings.max_step_runs must be a whole number >= 1, got {written(value)}")
        return MAX_STEP_RUNS
    return value


def check(
    axes: dict[str, dict[str, list]],
    links: list[tuple[str, str, bool]],
    steps: dict,
    settings: Settings,
    errors: Collector,
    where,
) -> bool:
    """Add an error and return False when the plan would exceed the limits.

    ``links`` holds (consumer, producer, elementwise): an elementwise reference pairs instances
    on the axes both steps share; otherwise (``needs``) every consumer run takes every producer run.
    """
    most = limit(settings, errors, where)
    runs = {sid: math.prod(len(v) for v in step_axes.values()) for sid, step_axes in axes.items()}
    total = sum(runs.values())
    if total > most:
        sid = max(runs, key=runs.__getitem__)
        step_axes = axes[sid]
        shape = " × ".join(f"{a} ({len(v):,})" for a, v in step_axes.items()) or "no matrix"
        pos = _axis_pos(steps[sid], step_axes)
        others = f"; {total:,} in the whole plan" if total != runs[sid] else ""
        errors.add(
            pos,
            f"step {sid!r}: the matrix {shape} expands to {runs[sid]:,} step runs{others}; "
            f"a plan may have at most {most:,}; {_HOW}",
        )
        return False
    count = 0
    for consumer, producer, elementwise in links:
        shared = [a for a in axes[producer] if a in axes[consumer]] if elementwise else []
        per_run = runs[producer] // max(1, math.prod(len(axes[producer][a]) for a in shared))
        count += runs[consumer] * per_run
        if count > LINKS_PER_RUN * most:
            errors.add(
                steps[consumer].node.pos,
                f"step {consumer!r}: its {runs[consumer]:,} runs would each take {per_run:,} runs of "
                f"{producer!r}: more than {LINKS_PER_RUN * most:,} links in the plan ({LINKS_PER_RUN} per "
                f"allowed step run); share a matrix axis with {producer!r} or {_HOW}",
            )
            return False
    return True


def _axis_pos(step, step_axes: dict[str, list]):
    if not step_axes:
        return step.node.pos
    longest = max(step_axes, key=lambda a: len(step_axes[a]))
    return step.matrix.vpos(longest)


def refuse(pipe, axes: dict[str, dict[str, list]], ref_links: set[tuple[str, str]], settings: Settings, errors) -> None:
    """Raise ``PipelineInvalid`` when ``pipe``'s plan would exceed the limits: checked before any
    component is imported or any step expanded, so an oversized plan is refused, not built."""
    steps = pipe.steps
    links = [(c, p, True) for c, p in sorted(ref_links)]
    links += [(s.id, n, False) for s in steps.values() for n in s.needs if n in steps and n != s.id]
    root = pipe.root
    where = root.kpos("settings") if "settings" in root else root.pos
    if not check(axes, links, steps, settings, errors, where):
        errors.raise_if_any()
