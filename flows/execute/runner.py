"""Run a plan as one Prefect flow run: a task run per step instance, results in MLflow.

The parent process keeps orchestration: the Prefect flow and task runs, the cache lookup and
its lease, the MLflow parent run and the live view. Each step's work runs on an executor
(``flows/execute/executors.py``: worker processes by default) from a picklable payload, and comes back
as data. Caching is ours (``flows/execute/cache.py``), keyed at plan time; a cached step returns a
Prefect ``Completed`` state named ``Cached`` so the Prefect UI shows it as such.
Ctrl-C or SIGTERM stops the run: workers are ended, unfinished runs are marked KILLED, Prefect's
flow run is CANCELLED, and the next run resumes from the cache and the checkpoints.

``run`` is a facade over private modules. Importing this one loads neither Prefect nor MLflow:
``load`` (called by ``run``) configures the process (``flows/home.py``) first, since both read
their settings from the environment when first imported.

    _run.py              the run's body, importing Prefect and MLflow
    _executor_choice.py  ``start_executor``, ``choose``: the executor the settings name, checked
                         against the GPUs its cluster offers
    _parent.py           the MLflow parent run: opened, given the reports, closed with note and status
    _flow.py             the Prefect flow and its task runs, the steps that never ran, the outcome
    _steps.py            ``StepRunner``: one step under its cache lease, reused or computed; a stop
    _step_cache.py       ``reuse``, ``record``: an earlier run's outputs given to a step, a result kept
    _step_compute.py     ``Computation``: a step on the executor, its result into run, cache and views
    _step_payload.py     ``payload``: the step's parameters, input files and device, for a worker
    _step_runs.py        ``StepRuns``: each step's MLflow child run, opened with its tags, closed once
    _step_events.py      ``StepEvents``: the live view, the Prefect task run's lines, worker events
    _signals.py          ``Signals``: Ctrl-C and SIGTERM while a run is in progress
    _result.py           ``RunResult``, ``StepFailed`` and the counts said about them
"""

from __future__ import annotations

from flows import home
from flows.execute._executor_choice import start_executor, torch_threads
from flows.execute._result import RunResult, StepFailed
from flows.plan.build import Plan

__all__ = ["RunResult", "StepFailed", "load", "run", "start_executor", "torch_threads"]


def load():
    """Configure the process (``home.configure``, idempotent) and import what a run needs, Prefect
    and MLflow among it; the CLI calls this while Prefect's server boots."""
    home.configure()
    from flows.execute import _run

    return _run


def run(plan: Plan, *, use_cache: bool = True, view=None, executor=None, in_flow_run: bool = False) -> RunResult:
    """Execute ``plan`` as a Prefect flow run tracked in MLflow; never raises for a failed step.
    ``executor``: one from ``start_executor`` (closed here); default: started now. ``in_flow_run``:
    the steps become task runs of the flow run this is called in (a schedule's), not of their own."""
    return load().run(plan, use_cache=use_cache, view=view, executor=executor, in_flow_run=in_flow_run)
