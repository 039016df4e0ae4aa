"""Run a plan as one Prefect flow run: a task run per step instance, results in MLflow.

The parent process keeps orchestration: the Prefect flow and task runs, the cache lookup and
its lease, the MLflow parent run and the live view. Each step's work runs on an executor
(``flows/execute/executors.py``: worker processes by default) from a picklable payload, and comes back
as data. Caching is ours (``flows/execute/cache.py``), keyed at plan time; a cached step returns a
Prefect ``Completed`` state named ``Cached`` so the Prefect UI shows it as such.
Ctrl-C or SIGTERM stops the run: workers are ended, unfinished runs are marked KILLED, Prefect's
flow run is CANCELLED, and the next run resumes from the cache and the checkpoints.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flows import home

home.configure()

from prefect import flow, task  # noqa: E402
from prefect import tags as prefect_tags  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.context import TagsContext  # noqa: E402
from prefect.states import Cancelled, Completed  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows.execute import executors, prefect_view  # noqa: E402
from flows.execute.cache import StepCache  # noqa: E402
from flows.execute.order import submission_order  # noqa: E402
from flows.execute.pool import Stopped  # noqa: E402
from flows.execute.worker import StepPayload, StepResult  # noqa: E402
from flows.language.refs import Ref  # noqa: E402
from flows.plan.build import Instance, Plan  # noqa: E402
from flows.plan.resources import gpus as selected_gpus  # noqa: E402
from flows.track import links  # noqa: E402
from flows.track.note import run_note  # noqa: E402
from flows.track.runs import Tracker, flatten, git_commit  # noqa: E402


class StepFailed(Exception):
    """A step raised or its worker died; the message names the step."""


@dataclass
class RunResult:
    """What a pipeline run did, step by step."""

    pipeline: str
    parent_run_id: str
    flow_run_id: str | None = None
    status: dict[str, str] = field(default_factory=dict)  # done / cached / failed / skipped / stopped
    errors: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0
    workers: dict[str, dict] = field(default_factory=dict)  # instance -> {pid, host, device}
    stopped_by: int | None = None  # the signal that stopped the run
    zombies: list = field(default_factory=list)  # runs a dead process had left RUNNING, now KILLED

    @property
    def ok(self) -> bool:
        return (
            not self.errors and self.stopped_by is None and all(s in ("done", "cached") for s in self.status.values())
        )

    @property
    def exit_code(self) -> int:
        if self.stopped_by is not None:
            return 128 + self.stopped_by
        return 0 if self.ok else 1


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


def torch_threads(plan: Plan) -> int:
    """Threads per step so parallel branches share the cores instead of oversubscribing them."""
    if plan.settings.torch_threads:
        return int(plan.settings.torch_threads)
    return max(1, (os.cpu_count() or 1) // max(1, int(plan.settings.workers)))


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
        self._artifacts: dict[str, tuple] = {}  # instance -> (Prefect progress artifact, last update)
        self._lock = threading.Lock()
        self.logs = prefect_view.StepLogs()  # each step's lines on its Prefect task run
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
            from flows.execute.cache import describe_owner

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
        home = str(self.cache.root)
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
        seed = int(inst.bindings.get("seed", self.plan.settings.seed))
        payload = StepPayload(
            instance=inst.id,
            component=inst.component.name,
            params=params,
            key=inst.key,
            work_dir=str(work),
            run_id=run_id,
            seed=seed,
            tracking_uri=os.environ.get("MLFLOW_TRACKING_URI", ""),
            home=home,
            threads=int(self.plan.settings.torch_threads or 0),
            device=self._device(inst),
            module=inst.component.fn.__module__,
            inputs=sorted(set(_files_under(params, home))),
        )
        self.view.event(inst.id, "running")
        self.logs.started(inst.id, f"the {self.executor.name} executor")
        try:
            result: StepResult = self.executor.run(payload, inst.gpu, lambda ev: self._on_event(ev))
        except Stopped:
            self._close_run(inst.id, run_id, "KILLED", "stopped: the run was interrupted")
            self.result.status[inst.id] = "stopped"
            self.view.event(inst.id, "failed", "stopped")
            self.logs.stopped(inst.id)
            raise
        self.result.workers[inst.id] = {"pid": result.pid, "host": result.host, "device": result.device}
        if result.status != "done":
            message = result.error if result.status != "died" else f"step {inst.id} {result.error}"
            if result.status == "stopped" or self.stopping.is_set():
                self._close_run(inst.id, run_id, "KILLED", message)
                self.result.status[inst.id] = "stopped"
                self.view.event(inst.id, "failed", "stopped")
                self.logs.stopped(inst.id)
                raise Stopped()
            self.result.errors[inst.id] = message
            self.logs.failed(inst.id, message, result.traceback, _worker(result))
            self.view.event(inst.id, "failed", message.splitlines()[0][:200])
            self._close_run(inst.id, run_id, "FAILED", message)
            raise StepFailed(f"{inst.id}: {message}")
        outputs = {**result.outputs, "run_id": run_id}
        self._close_run(inst.id, run_id, "FINISHED")
        self.cache.put(
            inst.key,
            {
                "outputs": outputs,
                "run_id": run_id,
                "step": inst.id,
                "component": inst.component.name,
                "work_dir": str(work),
                "host": result.host,
                "device": result.device,
            },
        )
        if forced:  # the earlier outputs' files, now that the new ones are recorded
            self.cache.retire_work_dirs(inst.step.id, inst.key, keep=work)
        self.result.status[inst.id] = "done"
        self.result.outputs[inst.id] = outputs
        self.result.errors.pop(inst.id, None)  # a retry succeeded
        self.view.event(inst.id, "done")
        self.logs.finished(inst.id, result.seconds, _worker(result))
        return outputs

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
            self._prefect_progress(iid, event)
        elif kind == "log":
            import logging

            level = event.get("level", logging.WARNING)
            logging.getLogger("bottlenecks").log(level, f"{iid}: {event.get('message', '')}")
            self.logs.warning(iid, level, event.get("message", ""))

    def _prefect_progress(self, iid: str, event: dict) -> None:
        """Mirror a step's progress onto its Prefect task run (a progress artifact), at most every
        few seconds; only from the task's own thread, where Prefect knows the task run."""
        total = event.get("total")
        if not total:
            return
        percent = min(100.0, 100.0 * float(event.get("completed", 0)) / float(total))
        now = time.monotonic()
        with self._lock:
            artifact, last = self._artifacts.get(iid, (None, 0.0))
            if artifact is not None and percent < 100.0 and now - last < 5.0:
                return
            self._artifacts[iid] = (artifact, now)
        try:
            from prefect.artifacts import create_progress_artifact, update_progress_artifact
            from prefect.context import TaskRunContext

            if TaskRunContext.get() is None:
                return
            description = f"{iid}: {event.get('description') or 'progress'}"
            if artifact is None:
                artifact = create_progress_artifact(percent, description=description)
            else:
                update_progress_artifact(artifact, percent, description=description)
            with self._lock:
                self._artifacts[iid] = (artifact, now)
        except Exception:  # progress is a courtesy; never fail a step over it
            pass

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


def _worker(result: StepResult) -> str:
    """``host pid 123 (cpu)``: where a step ran, for its log lines."""
    return f"{result.host or 'an unknown host'} pid {result.pid} ({result.device})"


def _to_compute(plan: Plan, cache: StepCache, use_cache: bool) -> tuple[int, int]:
    """(CPU, GPU) step instances without a cache record: how many workers to start at once."""
    todo = [i for i in plan.instances.values() if not (use_cache and i.step.cache and cache.get(i.key) is not None)]
    return sum(1 for i in todo if not i.gpu), sum(1 for i in todo if i.gpu)


def _executor(plan: Plan, eager: tuple[int, int] = (0, 0)):
    gpus = selected_gpus(plan.settings.devices)
    if str(plan.settings.device) == "cpu":
        gpus = []
    address = plan.settings.address
    name = plan.settings.executor
    if name == "dask" and address:
        _require_servers(address)
    executor = executors.make(
        name, workers=int(plan.settings.workers), gpus=gpus, threads=torch_threads(plan), address=address, eager=eager
    )
    offered = getattr(executor, "gpu_workers", len(gpus))
    from flows.plan.build import place_on

    place_on(plan, offered)  # the cluster may differ from what the plan assumed (remote, overridden)
    wanting = [i for i in plan.instances.values() if i.gpu > offered]
    if wanting:
        executor.close()
        step = wanting[0].step
        line, col = step.node.vpos("resources") if "resources" in step.node else step.node.pos
        raise executors.ExecutorError(
            f"{plan.pipeline.file}:{line}:{col}: step {step.id} asks for gpu: "
            f"{wanting[0].gpu} but this cluster offers none (no worker of the "
            f"{name} cluster has the resource GPU)"
        )
    return executor


def _require_servers(address: str) -> None:
    """Remote workers cannot reach this machine's SQLite store or ephemeral Prefect API."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith(("sqlite:", "file:")) or "://" not in uri:
        raise executors.ExecutorError(
            f"executor dask at {address} needs an MLflow tracking server its workers can reach, not "
            f"{uri or 'a local store'}: set MLFLOW_TRACKING_URI=http://HOST:5000 (see docs/deployment.md)"
        )
    if not os.environ.get("PREFECT_API_URL"):
        raise executors.ExecutorError(
            f"executor dask at {address} needs a Prefect server: set PREFECT_API_URL=http://HOST:4200/api "
            "(see docs/deployment.md)"
        )


class _Signals:
    """Route SIGINT/SIGTERM to ``stop`` while a run is in progress (main thread only)."""

    def __init__(self, on_signal):
        self.on_signal, self.saved = on_signal, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def reinstall(self) -> None:
        """Take SIGTERM back inside the flow: Prefect's engine installs its own there, which
        raises in the main thread and then waits for busy steps instead of stopping them."""
        if self.saved and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        if getattr(self, "fired", False):  # a second Ctrl-C: the user insists
            raise KeyboardInterrupt
        self.fired = True
        threading.Thread(target=self.on_signal, args=(signum,), daemon=True).start()

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def start_executor(plan: Plan, use_cache: bool = True):
    """The run's executor, with the workers its uncached steps need already starting (the CLI calls
    this before waiting for the Prefect server, so the workers' imports overlap its start)."""
    return _executor(plan, _to_compute(plan, StepCache(home.home()), use_cache))


def run(plan: Plan, *, use_cache: bool = True, view=None, executor=None) -> RunResult:
    """Execute ``plan`` as a Prefect flow run tracked in MLflow; never raises for a failed step.
    ``executor``: one from ``start_executor`` (closed here); default: started now."""
    from flows.execute.view import StepView

    view = view or StepView(list(plan.instances), enabled=False)
    cache = StepCache(home.home())
    executor = executor or _executor(plan, _to_compute(plan, cache, use_cache))
    tracker = Tracker(plan.name)
    swept = tracker.sweep_zombies()
    parent_tags = {
        "pipeline": plan.name,
        "spec_hash": plan.spec_hash,
        "profile": plan.profile or "",
        "pipeline_file": os.path.basename(plan.pipeline.file),
        "git_commit": git_commit(),
        "overrides": " ".join(plan.overrides),
        "executor": executor.name,
    }
    parent = tracker.start(f"{plan.name}", parent_tags)
    tracker.log(
        parent, params=flatten({**plan.params, "profile": plan.profile or "", "workers": plan.settings.workers})
    )
    result = RunResult(plan.name, parent, zombies=swept)
    runner = StepRunner(plan, tracker, parent, cache, use_cache, view, result, executor)
    started = time.monotonic()

    @task(cache_policy=NO_CACHE, persist_result=False)
    def step_task(iid: str):
        try:
            return runner.execute(iid, {d: result.outputs[d] for d in plan.instances[iid].deps})
        except (StepFailed, Stopped):
            raise
        except Exception as e:  # the engine's own part failed (a lease timeout, a lost server)
            message = f"{type(e).__name__}: {e}"
            result.errors[iid] = message
            view.event(iid, "failed", message.splitlines()[0][:200])
            runner.logs.failed(iid, message, traceback.format_exc())
            raise StepFailed(f"{iid}: {message}") from e

    def _retry(task_, task_run, state) -> bool:
        return not runner.stopping.is_set()  # a stopped step is not retried

    @flow(
        name=plan.name,
        flow_run_name=lambda name=prefect_view.flow_run_name(plan): name,  # a string would be str.format-ted
        task_runner=ThreadPoolTaskRunner(max_workers=max(1, executor.slots)),
        persist_result=False,
        log_prints=False,
        validate_parameters=False,
    )
    def pipeline_flow(params: dict[str, Any]):  # the resolved ``params:``, for Prefect's Parameters tab
        from prefect.runtime import flow_run

        signals.reinstall()
        began = time.monotonic()
        result.flow_run_id = flow_run.get_id()
        tracker.log(parent, tags={"prefect_flow_run_id": result.flow_run_id or ""})
        links.announce(view.console, tracker.experiment_id, parent, result.flow_run_id)
        logger = prefect_view.run_logger()
        if logger is not None:
            logger.info(
                f"{plan.name}: {len(plan.instances)} step runs on the {executor.name} executor "
                f"({executor.slots} at a time); MLflow parent run {parent}"
            )
        futures = {}
        # the run's tags are the flow run's, not each task run's: a tagged task run asks the API for tag
        # concurrency slots as it starts (an answer cached for 5 s), so a Prefect server lost mid-run
        # would crash every later step instead of only the run's last report to it
        with TagsContext(current_tags=set()):
            # upstream futures go in wait_for (the graph's edges), not in the parameters: Prefect resolves
            # parameters before it names the task run, so a step skipped after a failure would be `after-497`
            for iid in submission_order(plan, max(1, executor.slots)):  # longest branches first
                inst = plan.instances[iid]
                futures[iid] = step_task.with_options(
                    name=inst.step.id,
                    task_run_name=lambda name=iid: name,  # as is: a string is str.format-ted (`cfg={'a': 1}`)
                    retries=inst.step.retries,
                    retry_delay_seconds=inst.step.retry_delay,
                    retry_condition_fn=_retry,
                ).submit(iid, wait_for=[futures[d] for d in inst.deps])
        for iid, fut in futures.items():
            fut.wait()
            if iid not in result.status:
                state = fut.state
                if iid in result.errors:
                    result.status[iid] = "failed"
                elif runner.stopping.is_set():
                    result.status[iid] = "stopped"
                else:
                    result.status[iid] = "skipped"
                    failed_up = [
                        d for d in plan.instances[iid].deps if d in result.errors or result.status.get(d) == "skipped"
                    ]
                    why = f"upstream {', '.join(failed_up) or state.name} did not finish"
                    view.event(iid, "skipped", why)
                    prefect_view.skipped(fut.task_run_id, iid, why)
        _report_to_prefect(plan, result, tracker, logger, time.monotonic() - began)
        if runner.stopping.is_set():
            name = signal.Signals(result.stopped_by).name if result.stopped_by else "a signal"
            return Cancelled(message=f"stopped by {name}; finished steps are in the cache")
        if not result.ok:
            names = ", ".join(i for i, s in result.status.items() if s == "failed")
            raise StepFailed(f"failed steps: {names}")
        return {"parent_run_id": parent}

    interrupted = None
    signals = _Signals(runner.stop)
    with view, signals, prefect_tags(*prefect_view.run_tags(plan)):
        try:
            pipeline_flow(plan.params, return_state=True)
            if not runner.stopping.is_set():
                _promote_reports(plan, result, tracker)
        except KeyboardInterrupt:  # a second Ctrl-C while stopping
            runner.stop(signal.SIGINT)
        except Exception as e:  # a server went away mid-run; finished steps are in the cache
            where = os.environ.get("PREFECT_API_URL") or "the embedded Prefect server"
            result.errors["(servers)"] = (
                f"lost a server (Prefect API at {where}, MLflow at "
                f"{os.environ.get('MLFLOW_TRACKING_URI')}): {type(e).__name__}: {e}"
            )
        except BaseException as e:  # Ctrl-C and the like: the run is KILLED, never FINISHED
            interrupted = f"interrupted ({type(e).__name__})"
            raise
        finally:
            executor.close()
            prefect_view.flush(2.0 if result.stopped_by is not None else 10.0)  # a stop exits promptly
            result.seconds = time.monotonic() - started
            status = "KILLED" if result.stopped_by is not None else ("FINISHED" if result.ok else "FAILED")
            try:
                tracker.log(parent, tags={"status_counts": json.dumps(_counts(result))})
                tracker.note(parent, run_note(plan, result, interrupted or _stopped(result)))
                if result.stopped_by is not None or interrupted:
                    tracker.kill(parent, interrupted or _stopped(result))
                else:
                    tracker.client.set_terminated(parent, status)
            except Exception as e:  # the tracking server went away mid-run: report it, don't crash
                result.errors["(tracking)"] = f"could not close parent run {parent}: {type(e).__name__}: {e}"
    return result


def _report_to_prefect(plan: Plan, result: RunResult, tracker: Tracker, logger, seconds: float) -> None:
    """The run's outcome on its flow run: a summary line, the scorecard and the MLflow link."""
    try:
        prefect_view.publish_results(plan, result, tracker.experiment_id)
    except Exception as e:  # artifacts are a view of the run, never its outcome
        if logger is not None:
            logger.warning(f"could not publish the results as Prefect artifacts: {type(e).__name__}: {e}")
    if logger is None:
        return
    counts = ", ".join(f"{n} {s}" for s, n in sorted(_counts(result).items()))
    failed = [i for i, s in result.status.items() if s == "failed"]
    line = f"{plan.name}: {counts} in {seconds:.1f}s" + (f"; failed: {', '.join(failed)}" if failed else "")
    logger.log(logging.ERROR if failed else logging.INFO, line)


def _stopped(result: RunResult) -> str | None:
    """``stopped by SIGTERM`` for a run a signal stopped, else None."""
    if result.stopped_by is None:
        return None
    return f"stopped by {signal.Signals(result.stopped_by).name}"


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
