"""The steps of the chaos pipeline (benchmarks/chaos.yaml): a little deterministic arithmetic that
takes a few tenths of a second, with every start and finish written to a ledger, so the chaos
script can tell which step was computed how often and which process computed it."""

from __future__ import annotations

import os
import time

from components import Context, component

LEDGER = "BOTTLENECKS_CHAOS_LEDGER"  # a file; each line: event, salt, work dir name, pid, time


def _note(ctx: Context, event: str, salt: int) -> None:
    ledger = os.environ.get(LEDGER)
    if ledger:
        with open(ledger, "a") as fh:  # one short write per line: appends from processes do not interleave
            fh.write(f"{event} {salt} {ctx.work_dir.name} {os.getpid()} {time.time():.6f}\n")


@component("chaostest.work", outputs=["value"])
def work(
    ctx: Context, *, part: int, upstream: float | dict[str, float] = 0.0, seconds: float = 0.4, salt: int = 0
) -> dict:
    """``10 * part`` plus twice the upstream values, after ``seconds`` of sleep in small slices.

    ``salt`` changes the cache key only (each chaos round computes afresh), never the value.
    """
    _note(ctx, "start", salt)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)
    total = sum(upstream.values()) if isinstance(upstream, dict) else upstream
    value = 10.0 * part + 2.0 * total
    ctx.log_metric("value", value)
    _note(ctx, "done", salt)
    return {"value": value}
