"""The terminal view of a pipeline run: one row per step instance, with the component's progress."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from components.context import Progress as Handle

STYLES = {
    "pending": "dim",
    "running": "cyan",
    "cached": "blue",
    "done": "green",
    "failed": "red",
    "skipped": "yellow",
    "waiting": "magenta",
    "stopped": "red",
}


class StepView:
    """Rich progress rows; state changes are also printed as lines (readable in CI logs)."""

    def __init__(self, instance_ids: list[str], console: Console | None = None, enabled: bool = True):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", style="bold"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}"),
            console=self.console,
            transient=False,
            disable=not (enabled and self.console.is_terminal),
        )
        self.rows = {
            iid: self.progress.add_task(escape(iid), total=None, status="[dim]pending", note="", start=False)
            for iid in instance_ids
        }
        self.started: dict[str, float] = {}
        self._lock = threading.Lock()

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def _set(self, iid: str, status: str, note: str = "", **kw) -> None:
        with self._lock:
            row = self.rows.get(iid)
            if row is None:
                return
            self.progress.update(row, status=f"[{STYLES.get(status, '')}]{status}", note=escape(note), **kw)

    def event(self, iid: str, status: str, note: str = "") -> None:
        """Record a state change; print a line for finished states."""
        if status == "running":
            self.started[iid] = time.monotonic()
            self.progress.start_task(self.rows[iid])
        elapsed = time.monotonic() - self.started.get(iid, time.monotonic())
        if status in ("done", "cached", "failed", "skipped"):
            if iid not in self.started:
                self.progress.start_task(self.rows[iid])
            self._set(iid, status, note, total=1, completed=1)
            self.progress.stop_task(self.rows[iid])
            if self.enabled:
                mark = {"done": "[green]✓", "cached": "[blue]↺", "failed": "[red]✗", "skipped": "[yellow]-"}[status]
                took = f" in {elapsed:.1f}s" if status == "done" else ""
                self.console.print(f"{mark}[/] {escape(iid)} {status}{took}{(': ' + escape(note)) if note else ''}")
        else:
            self._set(iid, status, note)

    def progress_of(self, iid: str, completed: float, total: float | None, description: str = "") -> None:
        """Show a step's progress as reported by its worker."""
        self._set(iid, "running", description or "", total=total, completed=completed)

    @contextmanager
    def component_progress(self, iid: str, total: float | None, description: str):
        """A handle a component advances; mirrored onto the step's row."""

        def show(handle: Handle) -> None:
            self._set(iid, "running", handle.description or "", total=handle.total, completed=handle.completed)

        handle = Handle(total, description, on_change=show)
        show(handle)
        yield handle
