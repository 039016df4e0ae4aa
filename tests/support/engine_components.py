"""Small components for the engine's tests, used through the `module:function` form."""

import sys
from pathlib import Path

from components import Context, component


@component("enginetest.numbers", outputs=["values", "file"])
def numbers(ctx: Context, *, n: int = 3, offset: int = 0) -> dict:
    """Write n numbers to a file and return them."""
    values = [offset + i for i in range(n)]
    path = ctx.path("numbers.txt")
    path.write_text("\n".join(map(str, values)))
    ctx.log_params({"n": n})
    for i, v in enumerate(values):
        ctx.log_metric("value", v, step=i)
    ctx.log_artifact(path)
    return {"values": values, "file": str(path)}


@component("enginetest.total", outputs=["total"])
def total(ctx: Context, *, values: list[int], scale: float = 1.0) -> dict:
    """Sum the values."""
    result = sum(values) * scale
    ctx.log_metric("total", result)
    return {"total": result}


@component("enginetest.collect", outputs=["table"])
def collect(ctx: Context, *, totals: dict[str, float]) -> dict:
    """Gather totals keyed by matrix value."""
    return {"table": dict(sorted(totals.items()))}


@component("enginetest.fail", outputs=["never"])
def fail(ctx: Context, *, message: str = "boom", marker: str = "") -> dict:
    """Fail unless the marker file exists."""
    if marker and Path(marker).exists():
        return {"never": "recovered"}
    raise RuntimeError(message)


@component("enginetest.flaky", outputs=["attempts"])
def flaky(ctx: Context, *, counter: str, succeed_on: int = 2) -> dict:
    """Fail until called `succeed_on` times (counts in a file)."""
    path = Path(counter)
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    if count < succeed_on:
        raise RuntimeError(f"attempt {count} fails")
    return {"attempts": count}


@component("enginetest.whoami", outputs=["pid", "visible", "device", "started", "ended", "torch"])
def whoami(ctx: Context, *, seconds: float = 0.0, tag: str | int = "", meet: str = "", party: int = 0) -> dict:
    """Report the process, the GPUs it sees, when it ran and whether torch is loaded in it (for
    isolation and placement tests).

    With ``meet`` (a folder) and ``party``, wait until ``party`` steps have arrived there: the
    step then provably ran at the same time as the others.
    """
    import os
    import time

    started = time.time()
    if meet:
        Path(meet).mkdir(parents=True, exist_ok=True)
        Path(meet, f"{os.getpid()}-{tag}").touch()
        deadline = time.monotonic() + 120
        while len(list(Path(meet).iterdir())) < party:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(list(Path(meet).iterdir()))} of {party} steps arrived")
            time.sleep(0.05)
    time.sleep(seconds)
    return {
        "pid": os.getpid(),
        "parent": os.getppid(),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "device": ctx.device,
        "started": started,
        "ended": time.time(),
        "torch": "torch" in sys.modules,
    }


@component("enginetest.crash", outputs=["never"])
def crash(ctx: Context, *, how: str = "abort", marker: str = "") -> dict:
    """Die the way native code does (``os.abort()``, a segfault), as the OOM killer ends a process
    (``kill``: SIGKILL) or by ``os._exit(3)``, unless the marker exists."""
    import os

    if marker and Path(marker).exists():
        return {"never": "recovered"}
    ctx.log_metric("before", 1.0)
    ctx.flush() if hasattr(ctx, "flush") else None
    if how == "abort":
        os.abort()
    if how == "segfault":
        import ctypes

        ctypes.string_at(0)  # reads address 0
    if how == "kill":
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


@component("enginetest.slow_train", outputs=["resumed_from", "steps"])
def slow_train(ctx: Context, *, steps: int = 40, seconds_per_step: float = 0.1, started_file: str = "") -> dict:
    """Count to ``steps`` with a checkpoint every step; resume from it (a stand-in for training)."""
    import json
    import os
    import time

    ckpt = ctx.path("checkpoint.json")
    start = json.loads(ckpt.read_text())["step"] if ckpt.exists() else 0
    if started_file:
        Path(started_file).write_text(str(os.getpid()))
    with ctx.progress(total=steps, description="count") as bar:
        bar.update(completed=start)
        for step in range(start, steps):
            time.sleep(seconds_per_step)
            tmp = ckpt.with_suffix(".tmp")
            tmp.write_text(json.dumps({"step": step + 1}))
            os.replace(tmp, ckpt)
            ctx.log_metric("step", step + 1, step=step + 1)
            bar.advance(1)
    return {"resumed_from": start, "steps": steps}


@component("enginetest.read", outputs=["text", "pid", "cwd"])
def read(ctx: Context, *, path: str) -> dict:
    """Read a file another step wrote (on another worker, for the multi-host test)."""
    import os

    return {"text": Path(path).read_text(), "pid": os.getpid(), "cwd": os.getcwd()}
