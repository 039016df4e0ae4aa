"""Each step's MLflow child run: opened with the step's tags, closed once with its status (by the
step, or by a stop, whichever comes first)."""

from __future__ import annotations

import signal
import threading

from flows.plan.build import Instance, Plan
from flows.plan.facts import facts, seed_axes
from flows.track.runs import Tracker


class StepRuns:
    """The child runs of one pipeline run, and which of them are still open."""

    def __init__(self, plan: Plan, tracker: Tracker, parent_run_id: str):
        self.plan, self.tracker, self.parent = plan, tracker, parent_run_id
        self.active: dict[str, str] = {}  # instance -> MLflow run id, while it runs
        self._lock = threading.Lock()
        self._axes = seed_axes(plan)  # where each step's seeds are, for its `seed` tag

    def tags(self, inst: Instance) -> dict[str, str]:
        tags = {
            "pipeline": self.plan.name,
            "step": inst.step.id,
            "component": inst.component.name,
            "cache_key": inst.key,
            "spec_hash": self.plan.spec_hash,
            "code_version": inst.component.code_version,
        }
        # architecture, task, bottleneck, seed, profile: what MLflow's "Group by" offers
        tags.update(facts(self.plan, inst, self._axes))
        tags.update({f"matrix.{k}": str(v) for k, v in inst.bindings.items()})
        return tags

    def reused(self, inst: Instance, origin: str) -> str:
        """A finished run holding the results of run ``origin``, whose outputs the step reuses."""
        run_id = self.tracker.start(
            inst.id, {**self.tags(inst), "cached": "true", "reused_from": origin}, parent=self.parent
        )
        self.tracker.copy_results(origin, run_id)
        self.tracker.finish(run_id, ok=True)
        return run_id

    def open(self, inst: Instance, executor: str) -> str:
        """The run of a step about to be computed, open until ``close`` or ``take_active``."""
        run_id = self.tracker.start(
            inst.id, {**self.tags(inst), "cached": "false", "executor": executor}, parent=self.parent
        )
        with self._lock:
            self.active[inst.id] = run_id
        return run_id

    def close(self, iid: str, run_id: str, status: str, error: str | None = None) -> None:
        with self._lock:
            if self.active.pop(iid, None) is None:
                return  # already closed (by a stop)
        try:
            if error:
                self.tracker.log(run_id, tags={"error": error[:4000]})
            if status == "FINISHED":
                _describe_training(self.tracker.client, run_id)
            self.tracker.client.set_terminated(run_id, status)
        except Exception:  # the tracking server itself may be what failed
            pass

    def take_active(self) -> dict[str, str]:
        """The open runs (instance -> run id), now no longer the steps' to close."""
        with self._lock:
            active, self.active = dict(self.active), {}
        return active

    def kill(self, run_id: str, signum: int) -> None:
        """Mark a run KILLED by ``signum``."""
        try:
            self.tracker.log(run_id, tags={"error": f"stopped by {signal.Signals(signum).name}"})
            self.tracker.client.set_terminated(run_id, "KILLED")
        except Exception:
            pass


def _describe_training(client, run_id: str) -> None:
    """A finished training's run opens on its convergence and curves (flows/track/training_note.py);
    a figure that cannot be drawn never fails the step."""
    from flows.track import training_note

    try:
        training_note.describe(client, run_id)
    except Exception:  # a figure is no reason to lose a finished step
        pass
