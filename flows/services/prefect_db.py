"""Give a new project folder a migrated, empty Prefect database by copying a template.

Prefect creates its SQLite database by running every Alembic migration (over a hundred), most of
a first run in a new folder. The first time on a machine (per Prefect version) the background
server migrates a database of its own, keeps a copy in the user's cache folder, and later new
folders start from that copy (``templates.py``). Runs in the server process only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from flows.home import cache_dir
from flows.services import templates

PREFIX = "sqlite+aiosqlite:///"


def _database_file() -> Path | None:
    """The server's SQLite file, or None when the database is not a local SQLite file."""
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url
    url = url.get_secret_value() if url is not None else ""
    if not url.startswith(PREFIX) or ":memory:" in url:
        return None
    return Path(url[len(PREFIX) :].split("?")[0])


def prepare() -> str:
    """Make sure the server's database exists and is migrated; say how (for the server log)."""
    import prefect

    db = _database_file()
    if db is None or db.exists():
        return "existing database"
    template = cache_dir() / f"prefect-{prefect.__version__}.db"
    if template.exists():
        templates.copy_to(template, db)
        return f"copied {template}"
    from prefect.server.database import provide_database_interface

    db.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(provide_database_interface().create_db())
    # a consistent snapshot, before the server writes anything of its own
    templates.publish(template, templates.snapshot(db))
    return f"migrated a new database; kept a copy in {template}"
