"""What a run did, step by step: ``RunResult``, ``StepFailed`` and the counts said about them."""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import dataclass, field


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
    workers: dict[str, dict] = field(default_factory=dict)  # instance -> {pid, host, device, gpus, seconds}
    stopped_by: int | None = None  # the signal that stopped the run
    zombies: list = field(default_factory=list)  # runs a dead process had left RUNNING, now KILLED
    prefect_gone: bool = False  # the Prefect server stopped answering: its queued logs and events cannot go
    comparisons: dict[str, str] = field(default_factory=dict)  # validation metric -> MLflow link comparing trainings

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


def counts(result: RunResult) -> dict[str, int]:
    """Step instances by status: ``{"done": 3, "cached": 2}``."""
    return dict(Counter(result.status.values()))


def stopped(result: RunResult) -> str | None:
    """``stopped by SIGTERM`` for a run a signal stopped, else None."""
    if result.stopped_by is None:
        return None
    return f"stopped by {signal.Signals(result.stopped_by).name}"
