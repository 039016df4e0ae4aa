"""A step computed on the executor: its child run opened, its payload sent, and its result closed
into the run, the cache and the run's result (a failure raises ``StepFailed``, a stop ``Stopped``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from flows.execute._result import RunResult, StepFailed
from flows.execute._signals import kill_point
from flows.execute._step_cache import record
from flows.execute._step_events import StepEvents
from flows.execute._step_payload import payload
from flows.execute._step_runs import StepRuns
from flows.execute.cache import StepCache
from flows.execute.pool import Stopped
from flows.execute.worker import StepResult
from flows.plan.build import Instance, Plan


@dataclass
class Computation:
    """Computes steps on ``executor``, shared by every step of one run."""

    plan: Plan
    cache: StepCache
    executor: object
    runs: StepRuns
    events: StepEvents
    result: RunResult
    stopping: threading.Event

    def run(self, inst: Instance, params: dict, forced: bool) -> dict:
        """Compute the step and return its outputs; ``forced``: recomputed on purpose."""
        run_id = self.runs.open(inst, self.executor.name)
        work = self._work_dir(inst, run_id, forced)
        self.events.running(inst.id, self.executor.name)
        try:
            sent = payload(self.plan, str(self.cache.root), self.executor.name, inst, params, run_id, str(work))
            result: StepResult = self.executor.run(sent, inst.gpu, self.events.forward)
        except Stopped:
            self._stopped(inst.id, run_id, "stopped: the run was interrupted")
            raise
        self.result.workers[inst.id] = {
            "pid": result.pid,
            "host": result.host,
            "device": result.device,
            "gpus": list(result.gpus),  # the GPU ids it held (``[]`` on a CPU)
            "seconds": result.seconds,
        }
        if result.status != "done":
            self._failed(inst, run_id, result)
        outputs = {**result.outputs, "run_id": run_id}
        # the result before the run's end: a process killed between the two leaves a result a sweep
        # can tell finished (``flows/execute/sweep.py``), never a FINISHED run without its result
        record(self.cache, inst, outputs, str(work), result, self.plan.name)
        kill_point("step-recorded", inst.id)
        self.runs.close(inst.id, run_id, "FINISHED")
        kill_point("step-finished", inst.id)  # before Prefect hears of it
        if forced:  # the earlier outputs' files, now that the new ones are recorded
            self.cache.retire_work_dirs(inst.step.id, inst.key, keep=work)
        self.result.status[inst.id] = "done"
        self.result.outputs[inst.id] = outputs
        self.result.errors.pop(inst.id, None)  # a retry succeeded
        self.events.done(inst.id, result)
        return outputs

    def _work_dir(self, inst: Instance, run_id: str, forced: bool) -> Path:
        # a step recomputed on purpose starts from an empty folder; otherwise the key's stable one,
        # where a step interrupted earlier finds its checkpoints
        if forced:
            return self.cache.fresh_work_dir(inst.step.id, inst.key, run_id[:8])
        return self.cache.work_dir(inst.step.id, inst.key)

    def _failed(self, inst: Instance, run_id: str, result: StepResult) -> None:
        """Close the run of a step that did not finish and raise: ``Stopped`` for a stop, else ``StepFailed``."""
        message = result.error if result.status != "died" else f"step {inst.id} {result.error}"
        if result.status == "stopped" or self.stopping.is_set():
            self._stopped(inst.id, run_id, message)
            raise Stopped()
        self.result.errors[inst.id] = message
        self.events.failed(inst.id, message, result)
        self.runs.close(inst.id, run_id, "FAILED", message)
        raise StepFailed(f"{inst.id}: {message}")

    def _stopped(self, iid: str, run_id: str, message: str) -> None:
        self.runs.close(iid, run_id, "KILLED", message)
        self.result.status[iid] = "stopped"
        self.events.stopped(iid)
