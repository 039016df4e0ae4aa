"""Migrated empty stores kept in the user's cache folder, and copies of them for new folders.

Both moves are atomic, so concurrent first runs (two shells, a test suite on two workers) never
see half a file: a template is written under a private name and renamed into place; a folder's
copy is written under a private name and hard-linked to its final name, which never replaces a
store another command created meanwhile.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Callable


def _private(path: Path) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}.partial")


def publish(template: Path, write: Callable[[Path], None]) -> Path:
    """Have ``write`` create the template at a private path, then rename it into place."""
    template.parent.mkdir(parents=True, exist_ok=True)
    partial = _private(template)
    try:
        write(partial)
        partial.replace(template)
    finally:
        partial.unlink(missing_ok=True)
    return template


def snapshot(database: Path) -> Callable[[Path], None]:
    """A ``write`` for ``publish`` that copies a live SQLite database consistently."""

    def write(partial: Path) -> None:
        with sqlite3.connect(database) as source, sqlite3.connect(partial) as copy:
            source.backup(copy)

    return write


def copy_to(template: Path, target: Path, edit: Callable[[sqlite3.Connection], None] | None = None) -> bool:
    """Give ``target`` a copy of ``template`` (after ``edit`` on the copy); False when another
    process created ``target`` first (theirs is kept)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = _private(target)
    shutil.copyfile(template, partial)
    try:
        if edit is not None:
            with sqlite3.connect(partial) as con:
                edit(con)
        os.link(partial, target)
        return True
    except FileExistsError:
        return False
    finally:
        partial.unlink(missing_ok=True)
