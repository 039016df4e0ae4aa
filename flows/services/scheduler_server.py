"""A temporary Prefect server for one `schedule` or `serve` command when neither ``PREFECT_API_URL``
nor the folder's background server is to be used (``BOTTLENECKS_PREFECT_SERVER=off``): it lives
exactly as long as the command that started it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from typing import Iterator

from flows.services.ports import free_port


@contextmanager
def local_prefect_server(timeout: float = 120.0) -> Iterator[str]:
    """Start ``prefect server start`` on loopback over the project's Prefect store; yield its API URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    log = tempfile.NamedTemporaryFile(prefix="prefect-server-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PREFECT_UI_ENABLED": "false"},
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the local Prefect server exited ({proc.returncode}); see {log.name}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the local Prefect server did not answer in {timeout:.0f}s; see {log.name}"
                    ) from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
