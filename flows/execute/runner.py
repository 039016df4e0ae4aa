"""Run a plan as one Prefect flow run: a task run per step instance, results in MLflow.

The parent process keeps orchestration: the Prefect flow and task runs, the cache lookup and
its lease, the MLflow parent run and the live view. Each step's work runs on an executor
(``flows/execute/executors.py``: worker processes by default) from a picklable payload, and comes back
as data. Caching is ours (``flows/execute/cache.py``), keyed at plan time; a cached step returns a
Prefect ``Completed`` state named ``Cached`` so the Prefect UI shows it as such.
Ctrl-C or SIGTERM stops the run: workers are ended, unfinished runs are marked KILLED, Prefect's
flow run is CANCELLED, and the next run resumes from the cache and the checkpoints.

``run`` is a facade over private modules:

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

import os
import signal
import time

from flows import home

home.configure()

from prefect import tags as prefect_tags  # noqa: E402

from flows.execute import prefect_view  # noqa: E402
from flows.execute._executor_choice import choose, start_executor, to_compute, torch_threads  # noqa: E402
from flows.execute._flow import call_flow, pipeline_flow  # noqa: E402
from flows.execute._parent import close_parent, open_parent, promote_reports  # noqa: E402
from flows.execute._result import RunResult, StepFailed  # noqa: E402
from flows.execute._signals import Signals  # noqa: E402
from flows.execute._steps import StepRunner  # noqa: E402
from flows.execute.cache import StepCache  # noqa: E402
from flows.plan.build import Plan  # noqa: E402
from flows.services import mlflow_db  # noqa: E402
from flows.track.runs import Tracker  # noqa: E402

__all__ = ["RunResult", "StepFailed", "StepRunner", "run", "start_executor", "torch_threads"]


def run(plan: Plan, *, use_cache: bool = True, view=None, executor=None, in_flow_run: bool = False) -> RunResult:
    """Execute ``plan`` as a Prefect flow run tracked in MLflow; never raises for a failed step.
    ``executor``: one from ``start_executor`` (closed here); default: started now. ``in_flow_run``:
    the steps become task runs of the flow run this is called in (a schedule's), not of their own."""
    from flows.execute.view import StepView

    view = view or StepView(list(plan.instances), enabled=False)
    cache = StepCache(home.home())
    mlflow_db.prepare(artifact_root=home.artifact_root())  # a new store exists before any worker opens it
    computing = to_compute(plan, cache, use_cache)
    executor = executor or choose(plan, computing)
    tracker = Tracker(plan.name)
    swept = tracker.sweep_zombies()
    if use_cache:  # the runs the cached steps copy their results from, in one query
        tracker.read_ahead([_origin(cache, inst) for inst in plan.instances.values() if inst.cacheable])
    result = RunResult(plan.name, open_parent(plan, tracker, executor.name), zombies=swept)
    runner = StepRunner(plan, tracker, result.parent_run_id, cache, use_cache, view, result, executor)
    signals = Signals(runner.stop)
    flow = pipeline_flow(plan, runner, signals)
    started, interrupted = time.monotonic(), None
    with view, signals, prefect_tags(*prefect_view.run_tags(plan)):
        try:
            call_flow(flow, plan.params, in_flow_run, heartbeats=any(computing))
            if not runner.stopping.is_set():
                promote_reports(plan, result, tracker)
        except KeyboardInterrupt:  # a second Ctrl-C while stopping
            runner.stop(signal.SIGINT)
        except Exception as e:  # a server went away mid-run; finished steps are in the cache
            result.errors["(servers)"] = _lost_server(e)
        except BaseException as e:  # Ctrl-C and the like: the run is KILLED, never FINISHED
            interrupted = f"interrupted ({type(e).__name__})"
            raise
        finally:
            executor.close()
            prefect_view.flush(2.0 if result.stopped_by is not None else 10.0)  # a stop exits promptly
            result.seconds = time.monotonic() - started
            close_parent(plan, result, tracker, interrupted)
    return result


def _origin(cache: StepCache, inst) -> str:
    """The run a step's cached result came from, or "" when it has none."""
    record = cache.peek(inst.key)
    return str(record.get("run_id") or "") if isinstance(record, dict) else ""


def _lost_server(e: Exception) -> str:
    where = os.environ.get("PREFECT_API_URL") or "the embedded Prefect server"
    return (
        f"lost a server (Prefect API at {where}, MLflow at "
        f"{os.environ.get('MLFLOW_TRACKING_URI')}): {type(e).__name__}: {e}"
    )
