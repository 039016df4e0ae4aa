"""What a step shows while it runs: its events on the live view, its lines and progress bar on its
Prefect task run, and the progress and warnings its worker sends back."""

from __future__ import annotations

import logging
import time

from flows.execute import prefect_view
from flows.execute.cache import describe_owner
from flows.execute.worker import StepResult


def _worker(result: StepResult) -> str:
    """``host pid 123 (cpu)``: where a step ran, for its log lines."""
    return f"{result.host or 'an unknown host'} pid {result.pid} ({result.device})"


class StepEvents:
    """Each step's events, said on the live view and on its Prefect task run."""

    def __init__(self, view):
        self.view = view
        self.logs = prefect_view.StepLogs()  # each step's lines on its Prefect task run
        self.progress = prefect_view.ProgressArtifacts()  # and its progress bar there
        self._began: dict[str, float] = {}  # instance -> when its task run started

    def begin(self, iid: str) -> None:
        """The step's task run started (call in its thread, where Prefect knows the run)."""
        self._began[iid] = time.monotonic()
        self.logs.bind(iid)

    def waiting(self, iid: str, holder: dict) -> None:
        self.view.event(iid, "waiting", f"for {describe_owner(holder)}, which computes this step")

    def cached(self, iid: str, origin: str) -> None:
        self.view.event(iid, "cached", f"from run {origin[:8]}")
        self.logs.cached(iid, origin, time.monotonic() - self._began.get(iid, time.monotonic()))

    def running(self, iid: str, executor: str) -> None:
        self.view.event(iid, "running")
        self.logs.started(iid, f"the {executor} executor")

    def done(self, iid: str, result: StepResult) -> None:
        self.view.event(iid, "done")
        self.logs.finished(iid, result.seconds, _worker(result))

    def failed(self, iid: str, message: str, result: StepResult) -> None:
        self.logs.failed(iid, message, result.traceback, _worker(result))
        self.view.event(iid, "failed", message.splitlines()[0][:200])

    def stopped(self, iid: str) -> None:
        self.view.event(iid, "failed", "stopped")
        self.logs.stopped(iid)

    def forward(self, event: dict) -> None:
        """Show a worker's progress or log event (called from the executor's threads)."""
        kind, iid = event.get("kind"), event.get("instance", "")
        if kind == "progress":
            self.view.progress_of(iid, event.get("completed", 0), event.get("total"), event.get("description", ""))
            self.logs.progress(iid, event.get("completed", 0), event.get("total"), event.get("description") or "")
            self.progress.update(iid, event)
        elif kind == "log":
            level = event.get("level", logging.WARNING)
            logging.getLogger("bottlenecks").log(level, f"{iid}: {event.get('message', '')}")
            self.logs.warning(iid, level, event.get("message", ""))
