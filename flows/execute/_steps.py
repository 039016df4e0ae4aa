"""One step instance run from the parent: its cache lookup under a lease, then the reused record
(``_step_cache.py``) or the computation on the executor (``_step_compute.py``); its child run
(``_step_runs.py``) and what the views show of it (``_step_events.py``) are shared by both."""

from __future__ import annotations

import threading
from typing import Any

from flows.execute._result import RunResult
from flows.execute._step_cache import reuse
from flows.execute._step_compute import Computation
from flows.execute._step_events import StepEvents
from flows.execute._step_payload import materialize
from flows.execute._step_runs import StepRuns
from flows.execute.cache import StepCache
from flows.execute.pool import Stopped
from flows.plan.build import Plan
from flows.track.runs import Tracker


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
        self.runs = StepRuns(plan, tracker, parent_run_id)
        self.events = StepEvents(view)
        self.logs = self.events.logs  # each step's lines on its Prefect task run
        self.computation = Computation(plan, cache, executor, self.runs, self.events, result, self.stopping)

    def execute(self, iid: str, upstream: dict[str, dict]) -> Any:
        """The step's outputs (a ``Cached`` state when reused); raises ``StepFailed`` or ``Stopped``."""
        if self.stopping.is_set():
            raise Stopped()
        inst = self.plan.instances[iid]
        self.events.begin(iid)
        params = materialize(inst.params, upstream)
        owner = {"run": self.parent, "pipeline": self.plan.name, "step": iid}
        timeout = float(self.plan.settings.lease_timeout or 0) or None
        cached = self.use_cache and inst.cacheable

        def waiting(holder: dict) -> None:
            self.events.waiting(iid, holder)

        with self.cache.lock(inst.key, owner=owner, timeout=timeout, waiting=waiting):
            record = self.cache.get(inst.key) if cached else None
            if record is not None:
                return reuse(inst, record, self.runs, self.events, self.result, self.cache)
            return self.computation.run(inst, params, forced=not cached)

    def stop(self, signum: int) -> None:
        """End the workers and mark every unfinished step run KILLED (safe from any thread)."""
        self.stopping.set()
        self.result.stopped_by = self.result.stopped_by or signum
        self.executor.close()
        for iid, run_id in self.runs.take_active().items():
            self.result.status[iid] = "stopped"
            self.runs.kill(run_id, signum)
