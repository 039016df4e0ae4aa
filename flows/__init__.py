"""The engine: YAML pipeline -> validated plan -> Prefect flow run, tracked in MLflow.

Packages, lowest layer first; each imports only the ones above it in this list:

    settings.py  the pipeline's ``settings:`` block, defined once (names, types, defaults, docs)
    home.py      where state lives and how quiet the libraries are (read before Prefect/MLflow load)
    language/    YAML loading and composing, the spec, references, errors, JSON Schema
    plan/        a validated pipeline expanded into step runs: sizes, resources, cache keys
    services/    the warm process, the background Prefect server, server checks, store templates
    track/       MLflow: parent and step runs, the run note, links, the zombie sweep
    execute/     runner, executors, worker pool, worker, order, cache and leases, live view
    ops/         schedules and deployments, history
    cli/         the ``bottlenecks`` commands; nothing imports it

A program needs only the names below; they load their layer on first use, so ``import flows``
costs nothing::

    from flows import build, run
    plan = build("pipelines/b2_gradients.yaml", profile="quick", sets=["steps=300"])
    result = run(plan)          # a RunResult: statuses, outputs, the MLflow parent run
"""

from __future__ import annotations

import importlib

__all__ = ["build", "run", "Plan", "RunResult", "PipelineInvalid"]

_HOME = {
    "build": "flows.plan.build",
    "Plan": "flows.plan.build",
    "run": "flows.execute.runner",
    "RunResult": "flows.execute.runner",
    "PipelineInvalid": "flows.language.errors",
}


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'flows' has no attribute {name!r}")
