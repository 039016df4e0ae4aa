"""The environment of a test that runs `bottlenecks` commands with the warm process (the zygote) on,
in a private runtime folder, and the wait until a zygote serves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# longer than any test's first run on a loaded machine (a zygote idle past it exits before the test
# looks for it); the test's own `stop` ends it
IDLE_SECONDS = "900"


@contextmanager
def warm_env(folder: Path, *pythonpath: Path, **extra: str) -> Iterator[dict[str, str]]:
    """A clean environment (no PREFECT_/MLFLOW_/BOTTLENECKS_ of the caller's) with the zygote on, in
    a runtime folder of its own; every zygote it started is stopped afterwards."""
    runtime = Path(tempfile.mkdtemp(prefix="bn-", dir="/tmp"))  # a socket path must stay short
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_", "BOTTLENECKS_"))}
    if "PREFECT_API_URL" in os.environ:  # the suite's Prefect server (conftest.py): no temporary one per command
        env["PREFECT_API_URL"] = os.environ["PREFECT_API_URL"]
    env.update(
        {
            "BOTTLENECKS_DAEMON": "on",
            "BOTTLENECKS_DAEMON_IDLE": IDLE_SECONDS,
            "XDG_RUNTIME_DIR": str(runtime),
            "BOTTLENECKS_PREFECT_SERVER": "off",
            "PYTHONPATH": os.pathsep.join([str(REPO), *map(str, pythonpath), env.get("PYTHONPATH", "")]),
            **extra,
        }
    )
    try:
        yield env
    finally:
        subprocess.run(
            [sys.executable, "-m", "flows.cli", "stop", "--all"], cwd=folder, env=env, capture_output=True, timeout=60
        )
        shutil.rmtree(runtime, ignore_errors=True)


def wait_serving(sock: Path, timeout: float = 120.0) -> Path:
    """Until the zygote at ``sock`` answers: its log's last line says it serves once its imports
    are done."""
    log = sock.with_suffix(".log")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and (lines := log.read_text().splitlines()) and "serving" in lines[-1]:
            return sock
        time.sleep(0.2)
    raise AssertionError(
        f"no zygote served {sock}: {log.read_text() if log.exists() else 'no log'}; "
        f"{sorted(p.name for p in sock.parent.iterdir()) if sock.parent.exists() else 'no runtime folder'}"
    )
