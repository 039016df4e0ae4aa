"""Run a plan as one Prefect flow run: a task run per step instance, results in MLflow.

Caching is ours (``flows/cache.py``), keyed at plan time; a cached step returns a Prefect
``Completed`` state named ``Cached`` so the Prefect UI shows it as such.
"""
from __future__ import annotations

import json
import os
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flows import settings, threadsafe

settings.configure()

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.states import Completed  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

threadsafe.patch_matplotlib()
threadsafe.patch_tqdm()

from flows.cache import StepCache  # noqa: E402
from flows.order import submission_order  # noqa: E402
from flows.plan import Instance, Plan  # noqa: E402
from flows.refs import Ref  # noqa: E402
from flows.tracking import MlflowContext, Tracker, flatten, git_commit  # noqa: E402


class StepFailed(Exception):
    """A step raised; the message names the step."""


@dataclass
class RunResult:
    """What a pipeline run did, step by step."""

    pipeline: str
    parent_run_id: str
    flow_run_id: str | None = None
    status: dict[str, str] = field(default_factory=dict)   # done / cached / failed / skipped
    errors: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and all(s in ("done", "cached") for s in self.status.values())


def _materialize(value: Any, outputs: dict[str, dict]) -> Any:
    if isinstance(value, Ref):
        return value.resolve(outputs)
    if isinstance(value, dict):
        return {k: _materialize(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [_materialize(v, outputs) for v in value]
    return value


def _device(name: str) -> str:
    if name != "auto":
        return name
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def torch_threads(plan: Plan) -> int:
    """Threads per step so parallel branches share the cores instead of oversubscribing them."""
    if plan.settings.get("torch_threads"):
        return int(plan.settings["torch_threads"])
    return max(1, (os.cpu_count() or 1) // max(1, int(plan.settings["workers"])))


class Executor:
    """Runs one step instance: cache lookup, MLflow child run, component call, cache write."""

    def __init__(self, plan: Plan, tracker: Tracker, parent_run_id: str, cache: StepCache,
                 use_cache: bool, view, result: RunResult):
        self.plan, self.tracker, self.parent = plan, tracker, parent_run_id
        self.cache, self.use_cache, self.view, self.result = cache, use_cache, view, result
        self.device = _device(str(plan.settings.get("device", "auto")))
        self.threads = torch_threads(plan)

    def tags(self, inst: Instance) -> dict[str, str]:
        tags = {"pipeline": self.plan.name, "step": inst.step.id, "component": inst.component.name,
                "cache_key": inst.key, "spec_hash": self.plan.spec_hash,
                "code_version": inst.component.code_version}
        if inst.component.bottleneck:
            tags["bottleneck"] = inst.component.bottleneck
        tags.update({f"matrix.{k}": str(v) for k, v in inst.bindings.items()})
        return tags

    def execute(self, iid: str, upstream: dict[str, dict]) -> Any:
        inst = self.plan.instances[iid]
        params = _materialize(inst.params, upstream)
        with self.cache.lock(inst.key):
            record = self.cache.get(inst.key) if (self.use_cache and inst.step.cache) else None
            if record is not None:
                return self._reuse(inst, record)
            return self._compute(inst, params)

    def _reuse(self, inst: Instance, record: dict):
        origin = record.get("run_id", "")
        run_id = self.tracker.start(inst.id, {**self.tags(inst), "cached": "true", "reused_from": origin},
                                    parent=self.parent)
        self.tracker.copy_results(origin, run_id)
        self.tracker.finish(run_id, ok=True)
        self.result.status[inst.id] = "cached"
        self.result.outputs[inst.id] = record["outputs"]
        self.view.event(inst.id, "cached", f"from run {origin[:8]}")
        return Completed(data=record["outputs"], name="Cached", message=f"reused outputs of run {origin}")

    def _compute(self, inst: Instance, params: dict):
        run_id = self.tracker.start(inst.id, {**self.tags(inst), "cached": "false"}, parent=self.parent)
        work = self.cache.work_dir(inst.step.id, inst.key)
        seed = int(inst.bindings.get("seed", self.plan.settings.get("seed", 0)))
        ctx = MlflowContext(tracker=self.tracker, run_id=run_id, view=self.view, work_dir=work,
                            device=self.device, seed=seed, step_name=inst.id)
        self.view.event(inst.id, "running")
        started = time.monotonic()
        try:
            self.tracker.log(run_id, params=flatten(params))
            _set_threads(self.threads)
            outputs = inst.component(ctx, **params)
            json.dumps(outputs)  # outputs travel as JSON; big things are files in the work dir
            ctx.flush()
        except Exception as e:
            self._record_failure(inst, run_id, ctx, e)
            raise StepFailed(f"{inst.id}: {type(e).__name__}: {e}") from e
        outputs = {**outputs, "run_id": run_id}
        self.tracker.log(run_id, tags={"seconds": f"{time.monotonic() - started:.2f}"})
        self.tracker.finish(run_id, ok=True)
        self.cache.put(inst.key, {"outputs": outputs, "run_id": run_id, "step": inst.id,
                                  "component": inst.component.name, "work_dir": str(ctx.work_dir)})
        self.result.status[inst.id] = "done"
        self.result.outputs[inst.id] = outputs
        self.result.errors.pop(inst.id, None)  # a retry succeeded
        self.view.event(inst.id, "done")
        return outputs

    def _record_failure(self, inst: Instance, run_id: str, ctx: MlflowContext, error: Exception) -> None:
        """Keep what the step logged, its traceback and the error; mark the run failed."""
        message = f"{type(error).__name__}: {error}"
        self.result.errors[inst.id] = message
        self.view.event(inst.id, "failed", message.splitlines()[0][:200])
        trace = ctx.work_dir / "error.txt"
        trace.write_text(traceback.format_exc())
        try:
            ctx.flush()
            self.tracker.log(run_id, tags={"error": message[:4000]})
            self.tracker.client.log_artifact(run_id, str(trace))
            self.tracker.finish(run_id, ok=False)
        except Exception:  # the tracking server itself may be what failed
            pass


def _set_threads(n: int) -> None:
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass


def run(plan: Plan, *, use_cache: bool = True, view=None) -> RunResult:
    """Execute ``plan`` as a Prefect flow run tracked in MLflow; never raises for a failed step."""
    from flows.view import StepView

    view = view or StepView(list(plan.instances), enabled=False)
    tracker = Tracker(plan.name)
    parent_tags = {"pipeline": plan.name, "spec_hash": plan.spec_hash, "profile": plan.profile or "",
                   "pipeline_file": os.path.basename(plan.pipeline.file), "git_commit": git_commit(),
                   "overrides": " ".join(plan.overrides)}
    parent = tracker.start(f"{plan.name}", parent_tags)
    tracker.log(parent, params=flatten({**plan.params, "profile": plan.profile or "",
                                        "workers": plan.settings["workers"]}))
    result = RunResult(plan.name, parent)
    executor = Executor(plan, tracker, parent, StepCache(settings.home()), use_cache, view, result)
    started = time.monotonic()

    @task(cache_policy=NO_CACHE, persist_result=False)
    def step_task(iid: str, upstream: dict[str, Any]):
        return executor.execute(iid, upstream)

    @flow(name=plan.name, task_runner=ThreadPoolTaskRunner(max_workers=int(plan.settings["workers"])),
          persist_result=False, log_prints=False, validate_parameters=False)
    def pipeline_flow():
        from prefect.runtime import flow_run

        result.flow_run_id = flow_run.get_id()
        tracker.log(parent, tags={"prefect_flow_run_id": result.flow_run_id or ""})
        futures = {}
        for iid in submission_order(plan, int(plan.settings["workers"])):  # longest branches first
            inst = plan.instances[iid]
            upstream = {d: futures[d] for d in inst.deps}
            futures[iid] = step_task.with_options(
                name=inst.step.id, task_run_name=iid, retries=inst.step.retries,
                retry_delay_seconds=inst.step.retry_delay,
            ).submit(iid, upstream)
        for iid, fut in futures.items():
            fut.wait()
            if iid not in result.status:
                state = fut.state
                if iid in result.errors:
                    result.status[iid] = "failed"
                else:
                    result.status[iid] = "skipped"
                    failed_up = [d for d in plan.instances[iid].deps if d in result.errors
                                 or result.status.get(d) == "skipped"]
                    view.event(iid, "skipped", f"upstream {', '.join(failed_up) or state.name} did not finish")
        if not result.ok:
            names = ", ".join(i for i, s in result.status.items() if s == "failed")
            raise StepFailed(f"failed steps: {names}")
        return {"parent_run_id": parent}

    with view:
        try:
            pipeline_flow(return_state=True)
            _promote_reports(plan, result, tracker)
        except Exception as e:  # a server went away mid-run; finished steps are in the cache
            where = os.environ.get("PREFECT_API_URL") or "the embedded Prefect server"
            result.errors["(servers)"] = (f"lost a server (Prefect API at {where}, MLflow at "
                                          f"{os.environ.get('MLFLOW_TRACKING_URI')}): {type(e).__name__}: {e}")
        finally:
            result.seconds = time.monotonic() - started
            try:
                tracker.log(parent, tags={"status_counts": json.dumps(_counts(result))})
                tracker.finish(parent, ok=result.ok)
            except Exception as e:  # the tracking server went away mid-run: report it, don't crash
                result.errors["(tracking)"] = f"could not close parent run {parent}: {type(e).__name__}: {e}"
    return result


def _promote_reports(plan: Plan, result: RunResult, tracker: Tracker) -> None:
    """Copy the files and metrics of steps whose component is a report (``promote=True``) onto
    the parent run, where users look first."""
    for iid, outputs in result.outputs.items():
        if not plan.instances[iid].component.promote:
            continue
        tracker.copy_results(outputs["run_id"], result.parent_run_id, params=False)
        for value in outputs.values():
            if isinstance(value, str) and os.path.isfile(value):
                tracker.client.log_artifact(result.parent_run_id, value)


def _counts(result: RunResult) -> dict[str, int]:
    return dict(Counter(result.status.values()))
