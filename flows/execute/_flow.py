"""The Prefect side of a run's wiring: one flow run per pipeline run, a task run per step
instance (submitted longest branches first, upstream futures as the graph's edges), the statuses
of steps that never ran, and the run's outcome on the flow run."""

from __future__ import annotations

import logging
import signal
import time
import traceback
from contextlib import contextmanager
from typing import Any, Iterator

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.context import TagsContext
from prefect.states import Cancelled
from prefect.task_runners import ThreadPoolTaskRunner

from flows.execute import prefect_view
from flows.execute._result import RunResult, StepFailed, counts
from flows.execute._signals import Signals
from flows.execute._steps import StepRunner
from flows.execute.order import submission_order
from flows.execute.pool import Stopped
from flows.plan.build import Plan
from flows.track import links


def pipeline_flow(plan: Plan, runner: StepRunner, signals: Signals):
    """The run's Prefect flow, called with the resolved ``params:`` (for Prefect's Parameters tab)."""
    result, executor = runner.result, runner.executor

    @task(cache_policy=NO_CACHE, persist_result=False)
    def step_task(iid: str):
        return _step(plan, runner, iid)

    @flow(
        name=plan.name,
        flow_run_name=lambda name=prefect_view.flow_run_name(plan): name,  # a string would be str.format-ted
        task_runner=ThreadPoolTaskRunner(max_workers=max(1, executor.slots)),
        persist_result=False,
        log_prints=False,
        validate_parameters=False,
    )
    def run_steps(params: dict[str, Any]):
        signals.reinstall()
        began = time.monotonic()
        logger = _announce(plan, runner)
        futures = _submit(plan, runner, step_task)
        _settle(plan, runner, futures)
        _report(plan, runner, logger, time.monotonic() - began)
        if runner.stopping.is_set():
            name = signal.Signals(result.stopped_by).name if result.stopped_by else "a signal"
            return Cancelled(message=f"stopped by {name}; finished steps are in the cache")
        if not result.ok:
            names = ", ".join(i for i, s in result.status.items() if s == "failed")
            raise StepFailed(f"failed steps: {names}")
        return {"parent_run_id": result.parent_run_id}

    return run_steps


def call_flow(run_steps, params: dict[str, Any], in_flow_run: bool = False, heartbeats: bool = True) -> None:
    """Run the flow ``pipeline_flow`` made: as a flow run of its own, or (``in_flow_run``, a schedule's
    deployment) inside the flow run we are in, so that a scheduled slot is one flow run whose task
    runs are the steps. A failed step is in the run's result either way. ``heartbeats=False`` (a run
    with nothing to compute) sends no Prefect flow-run heartbeats."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get() if in_flow_run else None
    if context is None:
        with _heartbeats(heartbeats):
            run_steps(params, return_state=True)
        return
    with run_steps.task_runner.duplicate() as task_runner, context.model_copy(update={"task_runner": task_runner}):
        try:
            run_steps.fn(params)
        except StepFailed:
            pass


@contextmanager
def _heartbeats(on: bool) -> Iterator[None]:
    """Prefect's flow-run heartbeats, or none: a run that only reuses cached results ends long
    before the first interval (180 s), and the heartbeat thread, which sleeps in whole seconds,
    holds the end of every flow run by up to a second (half a second on average)."""
    if on:
        yield
        return
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield


def _step(plan: Plan, runner: StepRunner, iid: str):
    """One step's task run; an error of the engine's own part is the step's failure, with its trace."""
    result = runner.result
    try:
        return runner.execute(iid, {d: result.outputs[d] for d in plan.instances[iid].deps})
    except (StepFailed, Stopped):
        raise
    except Exception as e:  # the engine's own part failed (a lease timeout, a lost server)
        message = f"{type(e).__name__}: {e}"
        result.errors[iid] = message
        runner.view.event(iid, "failed", message.splitlines()[0][:200])
        runner.logs.failed(iid, message, traceback.format_exc())
        raise StepFailed(f"{iid}: {message}") from e


def _announce(plan: Plan, runner: StepRunner):
    """Tie the flow run to the MLflow parent run (both ways) and say so; the flow run's logger."""
    from prefect.runtime import flow_run

    result, executor = runner.result, runner.executor
    result.flow_run_id = flow_run.get_id()
    runner.tracker.log(result.parent_run_id, tags={"prefect_flow_run_id": result.flow_run_id or ""})
    links.announce(runner.view.console, runner.tracker.experiment_id, result.parent_run_id, result.flow_run_id)
    logger = prefect_view.run_logger()
    if logger is not None:
        logger.info(
            f"{plan.name}: {len(plan.instances)} step runs on the {executor.name} executor "
            f"({executor.slots} at a time); MLflow parent run {result.parent_run_id}"
        )
    return logger


def _submit(plan: Plan, runner: StepRunner, step_task) -> dict:
    """Submit every step instance's task run; instance -> its future."""

    def retry(task_, task_run, state) -> bool:
        return not runner.stopping.is_set()  # a stopped step is not retried

    futures = {}
    # the run's tags are the flow run's, not each task run's: a tagged task run asks the API for tag
    # concurrency slots as it starts (an answer cached for 5 s), so a Prefect server lost mid-run
    # would crash every later step instead of only the run's last report to it
    with TagsContext(current_tags=set()):
        # upstream futures go in wait_for (the graph's edges), not in the parameters: Prefect resolves
        # parameters before it names the task run, so a step skipped after a failure would be `after-497`
        for iid in submission_order(plan, max(1, runner.executor.slots)):  # longest branches first
            inst = plan.instances[iid]
            futures[iid] = step_task.with_options(
                name=inst.step.id,
                task_run_name=lambda name=iid: name,  # as is: a string is str.format-ted (`cfg={'a': 1}`)
                retries=inst.step.retries,
                retry_delay_seconds=inst.step.retry_delay,
                retry_condition_fn=retry,
            ).submit(iid, wait_for=[futures[d] for d in inst.deps])
    return futures


def _settle(plan: Plan, runner: StepRunner, futures: dict) -> None:
    """Wait for every task run; give the steps that never ran a status, and say why on their task run."""
    result = runner.result
    for iid, fut in futures.items():
        fut.wait()
        if iid in result.status:
            continue
        if iid in result.errors:
            result.status[iid] = "failed"
        elif runner.stopping.is_set():
            result.status[iid] = "stopped"
        else:
            result.status[iid] = "skipped"
            failed_up = [d for d in plan.instances[iid].deps if d in result.errors or result.status.get(d) == "skipped"]
            why = f"upstream {', '.join(failed_up) or fut.state.name} did not finish"
            runner.view.event(iid, "skipped", why)
            prefect_view.skipped(fut.task_run_id, iid, why)


def _report(plan: Plan, runner: StepRunner, logger, seconds: float) -> None:
    """The run's outcome on its flow run: the reports' artifacts, the MLflow link and a summary line."""
    result: RunResult = runner.result
    try:
        prefect_view.publish_results(plan, result, runner.tracker.experiment_id)
    except Exception as e:  # artifacts are a view of the run, never its outcome
        if logger is not None:
            logger.warning(f"could not publish the results as Prefect artifacts: {type(e).__name__}: {e}")
    if logger is None:
        return
    said = ", ".join(f"{n} {s}" for s, n in sorted(counts(result).items()))
    failed = [i for i, s in result.status.items() if s == "failed"]
    line = f"{plan.name}: {said} in {seconds:.1f}s" + (f"; failed: {', '.join(failed)}" if failed else "")
    logger.log(logging.ERROR if failed else logging.INFO, line)
