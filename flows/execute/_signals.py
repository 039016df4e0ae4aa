"""Ctrl-C and SIGTERM during a run: the first stops it (from a thread), a second one insists."""

from __future__ import annotations

import os
import signal
import threading

KILL_AT = "BOTTLENECKS_TEST_KILL_AT"


def kill_point(name: str, step: str = "") -> None:
    """Die here by SIGKILL when ``BOTTLENECKS_TEST_KILL_AT`` names this point (``NAME`` or ``NAME:STEP``):
    tests of what a kill leaves in the stores, at moments a timed signal could not hit."""
    asked = os.environ.get(KILL_AT)
    if asked and asked in (name, f"{name}:{step}"):
        os.kill(os.getpid(), signal.SIGKILL)


class Signals:
    """Route SIGINT/SIGTERM to ``on_signal`` while a run is in progress (main thread only)."""

    def __init__(self, on_signal):
        self.on_signal, self.saved = on_signal, {}
        self.fired = False

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
        if self.fired:  # a second Ctrl-C: the user insists
            raise KeyboardInterrupt
        self.fired = True
        threading.Thread(target=self.on_signal, args=(signum,), daemon=True).start()

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
