"""A run's body: the facade ``runner.py`` imports it once the process is configured, since Prefect
and MLflow, which load with it, read their settings from the environment at import."""

from __future__ import annotations

import os
import signal
import time

from prefect import tags as prefect_tags

from flows import home
from flows.execute import prefect_view
from flows.execute._executor_choice import choose, to_compute
from flows.execute._flow import call_flow, pipeline_flow
from flows.execute._parent import close_parent, open_parent, promote_reports
from flows.execute._result import RunResult
from flows.execute._signals import Signals, kill_point
from flows.execute._steps import StepRunner
from flows.execute.cache import StepCache
from flows.execute.sweep import close_dead_runs, recorded
from flows.plan.build import Plan
from flows.services import mlflow_db
from flows.track import open_runs
from flows.track.runs import Tracker


def run(plan: Plan, *, use_cache: bool = True, view=None, executor=None, in_flow_run: bool = False) -> RunResult:
    """``runner.run`` in a configured process."""
    from flows.execute.view import StepView

    view = view or StepView(list(plan.instances), enabled=False)
    cache = StepCache(home.home())
    mlflow_db.prepare(artifact_root=home.artifact_root())  # a new store exists before any worker opens it
    computing = to_compute(plan, cache, use_cache)
    executor = executor or choose(plan, computing)
    tracker = Tracker(plan.name)
    try:  # this folder's, whatever pipeline (Prefect is set up)
        swept = close_dead_runs(prefect_url=lambda: None)
    except Exception:  # another run's note a store cannot close now: never a reason not to run; retried next time
        swept = []
    swept += tracker.sweep_zombies(finished=recorded(cache))  # this pipeline's, wherever they ran
    if use_cache:  # the runs the cached steps copy their results from, in one query
        tracker.read_ahead([_origin(cache, inst) for inst in plan.instances.values() if inst.cacheable])
    result = RunResult(plan.name, open_parent(plan, tracker, executor.name), zombies=swept)
    note = open_runs.record(result.parent_run_id, tracker.experiment_id)  # dropped once the run is closed
    runner = StepRunner(plan, tracker, result.parent_run_id, cache, use_cache, view, result, executor)
    signals = Signals(runner.stop)
    flow = pipeline_flow(plan, runner, signals)
    started, interrupted = time.monotonic(), None
    with view, signals, prefect_tags(*prefect_view.run_tags(plan)):
        try:
            call_flow(flow, plan.params, in_flow_run, heartbeats=any(computing))
            kill_point("flow-ended")
            if not runner.stopping.is_set():
                promote_reports(plan, result, tracker)
        except KeyboardInterrupt:  # a second Ctrl-C while stopping
            runner.stop(signal.SIGINT)
        except Exception as e:  # a server went away mid-run; finished steps are in the cache
            result.errors["(servers)"] = _lost_server(e)
            result.prefect_gone = not prefect_view.answers()
        except BaseException as e:  # Ctrl-C and the like: the run is KILLED, never FINISHED
            interrupted = f"interrupted ({type(e).__name__})"
            raise
        finally:
            executor.close()
            # a stop exits promptly; logs for a server that is gone would only wait out their retries
            prefect_view.flush(0.0 if result.prefect_gone else 2.0 if result.stopped_by is not None else 10.0)
            result.seconds = time.monotonic() - started
            close_parent(plan, result, tracker, interrupted)
            kill_point("parent-closed")
            open_runs.remove(note)
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
