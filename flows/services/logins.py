"""The logins the team servers ask for, read from the variables MLflow's and Prefect's clients read,
for the requests this project sends itself (the server check, the schedule commands' REST calls).

MLflow: ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (or the ``[mlflow]`` section of
``~/.mlflow/credentials``), else ``MLFLOW_TRACKING_TOKEN``. Prefect: ``PREFECT_API_AUTH_STRING``
(``user:password``, the server's ``PREFECT_SERVER_API_AUTH_STRING``), else ``PREFECT_API_KEY``.
"""

from __future__ import annotations

import base64
import configparser
import os
from pathlib import Path


def _basic(login: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(login.encode()).decode()}


def _mlflow_user() -> tuple[str | None, str | None]:
    """Username and password as MLflow's client finds them: the environment first, then the file."""
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return user, password
    saved = configparser.ConfigParser(interpolation=None)
    try:
        saved.read(Path("~/.mlflow/credentials").expanduser())
    except (configparser.Error, OSError):
        return user, password
    section = saved["mlflow"] if saved.has_section("mlflow") else {}
    return user or section.get("mlflow_tracking_username"), password or section.get("mlflow_tracking_password")


def mlflow_headers() -> dict[str, str]:
    """The Authorization header MLflow's client sends, or none."""
    user, password = _mlflow_user()
    if user and password:
        return _basic(f"{user}:{password}")
    if token := os.environ.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {token}"}
    return {}


def mlflow_refused(url: str) -> str:
    """What to do when the MLflow server at ``url`` answers 401."""
    user, _ = _mlflow_user()
    if not mlflow_headers():
        return (
            f"MLflow server at {url} asks for a login (HTTP 401): set MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD (see docs/deployment.md)"
        )
    who = f"of user {user!r}" if user else "in MLFLOW_TRACKING_TOKEN"
    return f"MLflow server at {url} refused the login {who} (HTTP 401): check MLFLOW_TRACKING_PASSWORD"


def prefect_headers() -> dict[str, str]:
    """The Authorization header Prefect's client sends: the auth string first, else the API key."""
    if auth := os.environ.get("PREFECT_API_AUTH_STRING"):
        return _basic(auth)
    if key := os.environ.get("PREFECT_API_KEY"):
        return {"Authorization": f"Bearer {key}"}
    return {}


def prefect_refused(url: str) -> str:
    """What to do when the Prefect API at ``url`` answers 401."""
    if not prefect_headers():
        return (
            f"Prefect API at {url} asks for a login (HTTP 401): set PREFECT_API_AUTH_STRING to the "
            "server's PREFECT_SERVER_API_AUTH_STRING (user:password)"
        )
    return (
        f"Prefect API at {url} refused the login (HTTP 401): check that PREFECT_API_AUTH_STRING is the "
        "server's PREFECT_SERVER_API_AUTH_STRING (user:password)"
    )
