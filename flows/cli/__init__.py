"""The ``bottlenecks`` command line: the only entry point; nothing in the engine imports it.

    app.py         the Typer app, its consoles, shared options, error printing
    run.py         ``run``
    inspection.py  ``check``, ``plan``, ``components``, ``schema``
    servers.py     ``stop``, ``ui``
    schedules.py   ``schedule``, ``serve``, ``deploy``
    ops.py         ``history``

``main`` first offers a ``run`` to the warm process (``flows.services.daemon``), naming itself as
what the warm process runs, so the service layer never imports the CLI.
"""

from __future__ import annotations

import sys

from flows.cli import inspection, ops, run, schedules, servers  # noqa: F401  (each registers its commands)
from flows.cli.app import app

ENTRY = "flows.cli:main"
# what a run imports, loaded once by the warm process; nothing here starts a thread
PRELOAD = (
    "mlflow",
    "mlflow.store.tracking.sqlalchemy_store",
    "prefect.client.orchestration",
    "prefect.flow_engine",
    "prefect.task_engine",
    "rich.live",
    "rich.table",
    "typer",
    "flows.execute.executors",
    "flows.execute.pool",
    "flows.execute.runner",
    "flows.execute._run",
    "flows.execute.view",
    "flows.track.runs",
    "flows.track.zombies",
    # what a run imported on first use, each command again (graphviz through Prefect's flow
    # visualisation, the SQLite dialect, Alembic for MLflow's schema check, the local services)
    "prefect.utilities.visualization",
    "prefect.artifacts",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "alembic.config",
    "anyio._backends._asyncio",
    "mlflow.store.tracking.sqlalchemy_workspace_store",
    "rich.logging",
    "flows.services.prefect_server",
    "flows.services.mlflow_db",
    "components.library",
    # the library a user's own component or model module imports first: planning a pipeline that
    # names one imports that module (its declaration is read by running it), which is then cheap
    "torch",
)

__all__ = ["app", "main"]


def main() -> None:
    """``bottlenecks ...``: a ``run`` goes to a warm process where one serves this environment."""
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        from flows.services import daemon

        rc = daemon.hand_over(sys.argv[1:], ENTRY, PRELOAD)
        if rc is not None:
            sys.exit(rc)
    app()
