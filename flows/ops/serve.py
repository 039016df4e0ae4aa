"""``bottlenecks serve``: run the schedules on this machine until a signal, then stop in one line.

A Prefect ``Runner`` polls the server for the deployments' due flow runs and runs each in a
process of its own. Before it starts, every schedule's missed and skipped slots are recorded and
the newest missed slot is caught up (``flows/ops/slots.py``). It leaves the schedules as they are
when it stops (Prefect's ``serve`` pauses them by default, which hides the nights it is down), and
SIGTERM or Ctrl-C stops it the same way whether its deployments still exist or its server went
away: runs in progress are cancelled, and the command says so in one line and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Callable

from flows.ops.deployments import ScheduleError, ScheduleSpec

STOP_TIMEOUT = 30.0  # seconds to cancel the runs in progress before giving up on the server


def serve(
    served: list[tuple[ScheduleSpec, dict | None]],
    limit: int | None = None,
    catch_up: bool = True,
    say: Callable[[str], None] = print,
) -> str:
    """Serve ``served`` (a spec and its deployment's JSON, None when not made yet) until a signal;
    return the line that says why it stopped. Needs a Prefect server (``PREFECT_API_URL``)."""
    if not os.environ.get("PREFECT_API_URL"):
        raise ScheduleError(
            "serving schedules needs a Prefect server (the embedded store runs no "
            "scheduler); set PREFECT_API_URL or let `bottlenecks serve` start one"
        )
    got: list[int] = []

    def early(signum, frame):  # before the runner polls: nothing runs yet, stop at once
        got.append(signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, early) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        runner = _prepare(served, limit, catch_up, say)
    except KeyboardInterrupt:
        name = signal.Signals(got[0]).name if got else "SIGINT"
        return f"stopped serving on {name} before it polled for runs"
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return _run(runner)


def _prepare(served, limit: int | None, catch_up: bool, say: Callable[[str], None]):
    """Catch up every schedule, then a runner with their deployments applied."""
    from flows.ops.schedule import to_deployment

    for spec, dep in served:
        if dep is not None:
            _catch_up(spec, dep, catch_up, say)
    runner = _runner(limit)
    for spec, _ in served:
        runner.add_deployment(to_deployment(spec))
    return runner


def _catch_up(spec: ScheduleSpec, dep: dict, run_newest: bool, say: Callable[[str], None]) -> None:
    """Record the slots that did not run, catch up the newest missed one; say what was done or why not."""
    from flows.ops import prefect_api, slots

    try:
        for line in slots.catch_up(spec, dep, run_newest=run_newest):
            say(line)
    except (prefect_api.PrefectAPIError, OSError) as e:
        say(f"{spec.deployment}: could not look for missed or skipped slots, none caught up: {e}")
    except Exception as e:  # noqa: BLE001  (MLflow refused a row: serving goes on, and says so)
        say(f"{spec.deployment}: could not record the missed or skipped slots: {type(e).__name__}: {e}")


def _runner(limit: int | None):
    from prefect.runner import Runner

    class QuietRunner(Runner):
        """A runner that stops on SIGINT as on SIGTERM, and stops even when the API is gone."""

        signalled: int | None = None

        def handle_sigterm(self, signum: int = signal.SIGTERM, *args) -> None:
            again, self.signalled = self.signalled is not None, self.signalled or signum
            if again or not self.started or self._loop is None:
                raise SystemExit(0)  # a second signal, or one before the loop runs: stop now
            self.stopping = True
            self.execute_in_background(_stop, self)

    return QuietRunner(pause_on_shutdown=False, limit=limit)


async def _stop(runner) -> None:
    """Cancel the runs in progress (when the API answers) and end the polling loops whatever happens."""
    try:
        await asyncio.wait_for(runner.astop(), STOP_TIMEOUT)
    except BaseException:  # noqa: BLE001  (a removed deployment, a server gone: stop all the same)
        group = getattr(runner, "_loops_task_group", None)
        if group is not None:
            group.cancel_scope.cancel()


def _run(runner) -> str:
    """Run ``runner`` until it stops; the line that says how."""
    from prefect.exceptions import TerminationSignal

    previous = {s: signal.signal(s, runner.handle_sigterm) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(runner.start())  # sets SIGTERM's handler again, to the same
    except (KeyboardInterrupt, TerminationSignal, SystemExit):
        pass
    except Exception as e:  # noqa: BLE001  (the server went away, or refused the runner)
        if runner.signalled is None:
            raise ScheduleError(f"stopped serving: {type(e).__name__}: {str(e).splitlines()[0][:300]}") from None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    name = signal.Signals(runner.signalled).name if runner.signalled else "a signal"
    return f"stopped serving on {name}; any run in progress was cancelled, the schedules stay as they are"
