"""The few Prefect REST calls the schedule commands make, over the standard library.

``schedule``, ``schedule --list`` and ``--remove`` talk to a running Prefect server and nothing
else: importing the Prefect client costs seconds (``import prefect`` loads its settings, client
schemas and plugins), the calls themselves milliseconds. The payloads are the ones Prefect's own
client sends (``tests/ops/test_schedule.py`` checks them against ``RunnerDeployment``), and so is
the login (``flows/services/logins.py``: ``PREFECT_API_AUTH_STRING``, a server's basic authentication).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from flows.services.logins import prefect_headers, prefect_refused


class PrefectAPIError(Exception):
    """The Prefect API refused a request or did not answer; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0, detail: Any = None):
        super().__init__(message)
        self.status = status
        self.detail = detail


def call(url: str, method: str, path: str, body: Any = None, timeout: float = 30.0, attempts: int = 4) -> Any:
    """``METHOD url/path`` with a JSON body; the decoded answer (None for 204). A 503 (a SQLite-backed
    server busy with another writer) is asked again; other errors raise ``PrefectAPIError``."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **prefect_headers()}
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method, headers=headers)
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text = response.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            detail = _detail(e)
            if e.code == 503 and attempt + 1 < attempts:
                time.sleep(0.5 * (attempt + 1))
                continue
            message = f"Prefect API at {url}: {method} {path} answered {e.code}: {detail}"
            if e.code == 401:
                message = prefect_refused(url)
            raise PrefectAPIError(message, e.code, detail) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise PrefectAPIError(f"Prefect API at {url} is unreachable ({reason})") from None
    raise AssertionError("unreachable")  # the loop returns or raises


def _detail(error: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(error.read()).get("detail")
    except (ValueError, AttributeError, OSError):
        return error.reason


def quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")
