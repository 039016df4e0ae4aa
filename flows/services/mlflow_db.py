"""Give a new project folder a migrated, empty MLflow store by copying a template.

MLflow creates its SQLite store by running every Alembic migration, which dominates a first run
in a new folder. The first time on a machine (per MLflow version) a store is migrated in the
user's cache folder (``BOTTLENECKS_CACHE``, as the Prefect template) and kept; later new folders
start from a copy of it (``templates.py``). Only the embedded ``sqlite:`` store is affected: a
tracking server, a Postgres store or an existing file are left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from flows.home import cache_dir
from flows.services import templates

PREFIX = "sqlite:///"


def database_file(uri: str) -> Path | None:
    """The SQLite file of a ``sqlite:///`` tracking URI, or None for any other store."""
    if not uri.startswith(PREFIX) or ":memory:" in uri:
        return None
    return Path(uri[len(PREFIX) :].split("?")[0])


def _template() -> Path:
    import mlflow

    template = cache_dir() / f"mlflow-{mlflow.__version__}.db"
    if template.exists():
        return template
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    def migrate(partial: Path) -> None:
        store = SqlAlchemyStore(f"{PREFIX}{partial}", str(template.parent / "unused-artifacts"))
        store.engine.dispose()

    return templates.publish(template, migrate)


def prepare(uri: str | None = None, artifact_root: str | None = None) -> str:
    """Make sure the store at ``uri`` (default: MLFLOW_TRACKING_URI) exists; say how."""
    db = database_file(uri or os.environ.get("MLFLOW_TRACKING_URI", ""))
    if db is None or db.exists():
        return "existing store"
    template = _template()

    def own_artifacts(con) -> None:  # the Default experiment's folder: this project's, not the template's
        con.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (f"{artifact_root.rstrip('/')}/0",)
        )

    templates.copy_to(template, db, own_artifacts if artifact_root else None)
    return f"copied {template}"
