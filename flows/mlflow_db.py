"""Give a new project folder a migrated, empty MLflow store in a few milliseconds.

MLflow creates its SQLite store by running every Alembic migration; on the 2-core machine that is
about 3 s of the first run in a new folder. The first time on a machine (per MLflow version) a
store is migrated in the user's cache folder (``BOTTLENECKS_CACHE``, as the Prefect template) and
kept; later new folders start from a copy of it. Only the embedded ``sqlite:`` store is affected: a
tracking server, a Postgres store or an existing file are left alone.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from flows.settings import cache_dir

PREFIX = "sqlite:///"


def database_file(uri: str) -> Path | None:
    """The SQLite file of a ``sqlite:///`` tracking URI, or None for any other store."""
    if not uri.startswith(PREFIX) or ":memory:" in uri:
        return None
    return Path(uri[len(PREFIX):].split("?")[0])


def _template() -> Path:
    import mlflow

    template = cache_dir() / f"mlflow-{mlflow.__version__}.db"
    if template.exists():
        return template
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    template.parent.mkdir(parents=True, exist_ok=True)
    building = template.with_name(f"{template.stem}.{os.getpid()}.partial")
    store = SqlAlchemyStore(f"{PREFIX}{building}", str(template.parent / "unused-artifacts"))
    store.engine.dispose()
    building.replace(template)  # atomic: a concurrent first run sees no template or a whole one
    return template


def prepare(uri: str | None = None, artifact_root: str | None = None) -> str:
    """Make sure the store at ``uri`` (default: MLFLOW_TRACKING_URI) exists; say how."""
    db = database_file(uri or os.environ.get("MLFLOW_TRACKING_URI", ""))
    if db is None or db.exists():
        return "existing store"
    template = _template()
    db.parent.mkdir(parents=True, exist_ok=True)
    partial = db.with_name(f"{db.name}.{os.getpid()}.partial")
    shutil.copyfile(template, partial)
    if artifact_root:  # the Default experiment's folder: this project's, not the template's
        with sqlite3.connect(partial) as con:
            con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                        (f"{artifact_root.rstrip('/')}/0",))
    try:
        os.link(partial, db)  # never replaces a store another command created meanwhile
    except FileExistsError:
        pass
    finally:
        partial.unlink()
    return f"copied {template}"
