"""Fail fast, before any work, when a configured tracking or orchestration server is unreachable."""

from __future__ import annotations

import os
import urllib.error
import urllib.request


class ServerUnreachable(Exception):
    """A configured server did not answer its health check."""


def _health(url: str, timeout: float) -> str | None:
    """Return None when ``url`` answers 2xx, otherwise why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return None if 200 <= response.status < 300 else f"HTTP {response.status}"
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return str(getattr(e, "reason", e))


_SERVERS = (
    (
        "MLFLOW_TRACKING_URI",
        "MLflow server at {url} is unreachable ({why}); check that `mlflow server` "
        "is running and MLFLOW_TRACKING_URI is right, or unset it to use the local store",
    ),
    (
        "PREFECT_API_URL",
        "Prefect API at {url} is unreachable ({why}); check that `prefect server "
        "start` is running and PREFECT_API_URL ends in /api, or unset it to run embedded",
    ),
)


def check_servers(timeout: float = 5.0) -> None:
    """Check MLFLOW_TRACKING_URI and PREFECT_API_URL when they name HTTP servers."""
    problems = []
    for var, message in _SERVERS:
        url = os.environ.get(var, "")
        if url.startswith(("http://", "https://")):
            why = _health(url.rstrip("/") + "/health", timeout)
            if why:
                problems.append(message.format(url=url, why=why))
    if problems:
        raise ServerUnreachable("\n".join(problems))
