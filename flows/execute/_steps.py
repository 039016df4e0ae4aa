"""One step instance run from the parent: its cache lookup under a lease, its MLflow child run,
its payload to the executor, and its result back into the cache, the run's result and the views."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from flows import home

home.configure()

from prefect.states import Completed  # noqa: E402

from flows.execute import prefect_view  # noqa: E402
from flows.execute._result import RunResult, StepFailed  # noqa: E402
from flows.execute.cache import StepCache, describe_owner  # noqa: E402
from flows.execute.pool import Stopped  # noqa: E402
from flows.execute.worker import StepPayload, StepResult  # noqa: E402
from flows.language.refs import Ref  # noqa: E402
from flows.plan.build import Instance, Plan  # noqa: E402
from flows.track.runs import Tracker  # noqa: E402


def _materialize(value: Any, outputs: dict[str, dict]) -> Any:
    if isinstance(value, Ref):
        return value.resolve(outputs)
    if isinstance(value, dict):
        return {k: _materialize(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [_materialize(v, outputs) for v in value]
    return value


def _files_under(value: Any, root: str) -> list[str]:
    """Paths inside ``root`` that a step's parameters name (its producers' files)."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in _files_under(v, root)]
    if isinstance(value, list):
        return [p for v in value for p in _files_under(v, root)]
    return [value] if isinstance(value, str) and value.startswith(root + os.sep) else []


def _worker(result: StepResult) -> str:
    """``host pid 123 (cpu)``: where a step ran, for its log lines."""
    return f"{result.host or 'an unknown host'} pid {result.pid} ({result.device})"


class StepRunner:
    """Runs one step instance from the parent: cache lookup under its lease, the MLflow child
    run, the payload to the executor, and the result back into the cache and the view."""

    def __init__(
        self,
        plan: Plan,
        tracker: Tracker,
        parent_run_id: str,
        cache: StepCache,
        use_cache: bool,
        view,
        result: RunResult,
        executor,
    ):
        self.plan, self.tracker, self.parent = plan, tracker, parent_run_id
        self.cache, self.use_cache, self.view, self.result = cache, use_cache, view, result
        self.executor = executor
        self.stopping = threading.Event()
        self.active: dict[str, str] = {}  # instance -> MLflow run id, while it runs
        self._lock = threading.Lock()
        self.logs = prefect_view.StepLogs()  # each step's lines on its Prefect task run
        self.progress = prefect_view.ProgressArtifacts()  # and its progress bar there
        self._began: dict[str, float] = {}  # instance -> when its task run started

    def tags(self, inst: Instance) -> dict[str, str]:
        tags = {
            "pipeline": self.plan.name,
            "step": inst.step.id,
            "component": inst.component.name,
            "cache_key": inst.key,
            "spec_hash": self.plan.spec_hash,
            "code_version": inst.component.code_version,
        }
        if inst.component.bottleneck:
            tags["bottleneck"] = inst.component.bottleneck
        tags.update({f"matrix.{k}": str(v) for k, v in inst.bindings.items()})
        return tags

    def execute(self, iid: str, upstream: dict[str, dict]) -> Any:
        if self.stopping.is_set():
            raise Stopped()
        inst = self.plan.instances[iid]
        self._began[iid] = time.monotonic()
        self.logs.bind(iid)
        params = _materialize(inst.params, upstream)
        owner = {"run": self.parent, "pipeline": self.plan.name, "step": iid}
        timeout = float(self.plan.settings.lease_timeout or 0) or None

        def waiting(holder: dict) -> None:
            self.view.event(iid, "waiting", f"for {describe_owner(holder)}, which computes this step")

        with self.cache.lock(inst.key, owner=owner, timeout=timeout, waiting=waiting):
            record = self.cache.get(inst.key) if (self.use_cache and inst.step.cache) else None
            if record is not None:
                return self._reuse(inst, record)
            return self._compute(inst, params)

    def _reuse(self, inst: Instance, record: dict):
        origin = record.get("run_id", "")
        run_id = self.tracker.start(
            inst.id, {**self.tags(inst), "cached": "true", "reused_from": origin}, parent=self.parent
        )
        self.tracker.copy_results(origin, run_id)
        self.tracker.finish(run_id, ok=True)
        self.result.status[inst.id] = "cached"
        self.result.outputs[inst.id] = record["outputs"]
        self.view.event(inst.id, "cached", f"from run {origin[:8]}")
        self.logs.cached(inst.id, origin, time.monotonic() - self._began.get(inst.id, time.monotonic()))
        return Completed(data=record["outputs"], name="Cached", message=f"reused outputs of run {origin}")

    def _compute(self, inst: Instance, params: dict):
        run_id = self.tracker.start(
            inst.id, {**self.tags(inst), "cached": "false", "executor": self.executor.name}, parent=self.parent
        )
        with self._lock:
            self.active[inst.id] = run_id
        # a step recomputed on purpose starts from an empty folder; otherwise the key's stable one,
        # where a step interrupted earlier finds its checkpoints
        forced = not (self.use_cache and inst.step.cache)
        if forced:
            work = self.cache.fresh_work_dir(inst.step.id, inst.key, run_id[:8])
        else:
            work = self.cache.work_dir(inst.step.id, inst.key)
        self.view.event(inst.id, "running")
        self.logs.started(inst.id, f"the {self.executor.name} executor")
        try:
            result: StepResult = self.executor.run(
                self._payload(inst, params, run_id, str(work)), inst.gpu, self._on_event
            )
        except Stopped:
            self._stopped(inst.id, run_id, "stopped: the run was interrupted")
            raise
        self.result.workers[inst.id] = {"pid": result.pid, "host": result.host, "device": result.device}
        if result.status != "done":
            self._failed(inst, run_id, result)
        outputs = {**result.outputs, "run_id": run_id}
        self._close_run(inst.id, run_id, "FINISHED")
        self._record(inst, outputs, str(work), result)
        if forced:  # the earlier outputs' files, now that the new ones are recorded
            self.cache.retire_work_dirs(inst.step.id, inst.key, keep=work)
        self.result.status[inst.id] = "done"
        self.result.outputs[inst.id] = outputs
        self.result.errors.pop(inst.id, None)  # a retry succeeded
        self.view.event(inst.id, "done")
        self.logs.finished(inst.id, result.seconds, _worker(result))
        return outputs

    def _payload(self, inst: Instance, params: dict, run_id: str, work: str) -> StepPayload:
        """What a worker needs to run the step, as plain data."""
        root = str(self.cache.root)
        return StepPayload(
            instance=inst.id,
            component=inst.component.name,
            params=params,
            key=inst.key,
            work_dir=work,
            run_id=run_id,
            seed=int(inst.bindings.get("seed", self.plan.settings.seed)),
            tracking_uri=os.environ.get("MLFLOW_TRACKING_URI", ""),
            home=root,
            threads=int(self.plan.settings.torch_threads or 0),
            device=self._device(inst),
            module=inst.component.fn.__module__,
            inputs=sorted(set(_files_under(params, root))),
        )

    def _failed(self, inst: Instance, run_id: str, result: StepResult) -> None:
        """Close the run of a step that did not finish and raise: ``Stopped`` for a stop, else ``StepFailed``."""
        message = result.error if result.status != "died" else f"step {inst.id} {result.error}"
        if result.status == "stopped" or self.stopping.is_set():
            self._stopped(inst.id, run_id, message)
            raise Stopped()
        self.result.errors[inst.id] = message
        self.logs.failed(inst.id, message, result.traceback, _worker(result))
        self.view.event(inst.id, "failed", message.splitlines()[0][:200])
        self._close_run(inst.id, run_id, "FAILED", message)
        raise StepFailed(f"{inst.id}: {message}")

    def _stopped(self, iid: str, run_id: str, message: str) -> None:
        self._close_run(iid, run_id, "KILLED", message)
        self.result.status[iid] = "stopped"
        self.view.event(iid, "failed", "stopped")
        self.logs.stopped(iid)

    def _record(self, inst: Instance, outputs: dict, work: str, result: StepResult) -> None:
        """Put a computed step's outputs in the cache, with where they were computed."""
        self.cache.put(
            inst.key,
            {
                "outputs": outputs,
                "run_id": outputs["run_id"],
                "step": inst.id,
                "component": inst.component.name,
                "work_dir": work,
                "host": result.host,
                "device": result.device,
            },
        )

    def _device(self, inst: Instance) -> str:
        """``settings.device: cpu`` keeps every step on the CPU; otherwise a worker's pinning
        decides (in threads, where nothing is pinned: a fixed device, or the step's GPU count)."""
        fixed = str(self.plan.settings.device)
        if fixed == "cpu":
            return "cpu"
        if self.executor.name == "threads":
            return fixed if fixed != "auto" else ("cuda" if inst.gpu else "cpu")
        return ""

    def _close_run(self, iid: str, run_id: str, status: str, error: str | None = None) -> None:
        with self._lock:
            if self.active.pop(iid, None) is None:
                return  # already closed (by a stop)
        try:
            if error:
                self.tracker.log(run_id, tags={"error": error[:4000]})
            self.tracker.client.set_terminated(run_id, status)
        except Exception:  # the tracking server itself may be what failed
            pass

    def _on_event(self, event: dict) -> None:
        kind, iid = event.get("kind"), event.get("instance", "")
        if kind == "progress":
            self.view.progress_of(iid, event.get("completed", 0), event.get("total"), event.get("description", ""))
            self.logs.progress(iid, event.get("completed", 0), event.get("total"), event.get("description") or "")
            self.progress.update(iid, event)
        elif kind == "log":
            level = event.get("level", logging.WARNING)
            logging.getLogger("bottlenecks").log(level, f"{iid}: {event.get('message', '')}")
            self.logs.warning(iid, level, event.get("message", ""))

    def stop(self, signum: int) -> None:
        """End the workers and mark every unfinished step run KILLED (safe from any thread)."""
        self.stopping.set()
        self.result.stopped_by = self.result.stopped_by or signum
        self.executor.close()
        with self._lock:
            active, self.active = dict(self.active), {}
        for iid, run_id in active.items():
            self.result.status[iid] = "stopped"
            try:
                self.tracker.log(run_id, tags={"error": f"stopped by {signal.Signals(signum).name}"})
                self.tracker.client.set_terminated(run_id, "KILLED")
            except Exception:
                pass
