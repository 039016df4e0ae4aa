"""Fail fast, before any work, when a configured tracking or orchestration server is unreachable or
refuses this client's login (``flows/services/logins.py``)."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

from flows.services import logins


class ServerUnreachable(Exception):
    """A configured server did not answer its health check, or refused the login."""


PATIENCE_SECONDS = 30.0  # how long a server that is up but slow (a loaded host) may take to answer


def _probe(url: str, timeout: float) -> tuple[str | None, bool]:
    """(None, _) when ``url`` answers 2xx, else (why not, whether asking again may help)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            ok = 200 <= response.status < 300
            return (None, False) if ok else (f"HTTP {response.status}", response.status >= 500)
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}", e.code >= 500  # 5xx: starting, or busy
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        return str(reason), isinstance(reason, TimeoutError) or "timed out" in str(reason)


def _health(url: str, timeout: float, patience: float = PATIENCE_SECONDS) -> str | None:
    """Return None when ``url`` answers 2xx, otherwise why not. A refused connection is an answer at
    once; a timeout or a 5xx is asked again until ``patience`` seconds have gone."""
    deadline = time.monotonic() + patience
    while True:
        why, again = _probe(url, timeout)
        if why is None or not again or time.monotonic() + timeout > deadline:
            return why
        time.sleep(1.0)


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


# a cheap read each server guards with its login (health checks are open to anyone), how this client
# logs in, and what to say when the server answers 401
_LOGINS = {
    "MLFLOW_TRACKING_URI": (
        "/api/2.0/mlflow/experiments/search?max_results=1",
        logins.mlflow_headers,
        logins.mlflow_refused,
    ),
    "PREFECT_API_URL": ("/admin/version", logins.prefect_headers, logins.prefect_refused),
}


def _login_refused(url: str, var: str, timeout: float) -> str | None:
    """What to do when the server at ``url`` answers 401 to this client's login; None otherwise (any
    other answer is left to the command, which reports it in context)."""
    path, headers, refused = _LOGINS[var]
    request = urllib.request.Request(url.rstrip("/") + path, headers=headers())
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as e:
        return refused(url) if e.code == 401 else None
    except (urllib.error.URLError, OSError):
        return None


def check_servers(timeout: float = 5.0) -> None:
    """Check MLFLOW_TRACKING_URI and PREFECT_API_URL when they name HTTP servers: each answers, and
    takes this client's login where it asks for one."""
    problems = []
    for var, message in _SERVERS:
        url = os.environ.get(var, "")
        if url.startswith(("http://", "https://")):
            why = _health(url.rstrip("/") + "/health", timeout)
            if why:
                problems.append(message.format(url=url, why=why))
            elif refused := _login_refused(url, var, timeout):
                problems.append(refused)
    if problems:
        raise ServerUnreachable("\n".join(problems))
