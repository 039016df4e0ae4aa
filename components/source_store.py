"""What was read from a source file, kept across processes by the hash of the file's bytes.

A ``SourceStore`` is one JSON file in the user's cache folder (``BOTTLENECKS_CACHE``, else
``$XDG_CACHE_HOME/bottlenecks``, as ``flows.home.user_cache``), named for what it holds and the
Python version (whose syntax it read): ``code-trees-py311.json`` holds the parses behind code
versions (``components/code_version.py``), ``declarations-py311.json`` the skeletons component
declarations are read from (``components/declared.py``). An entry is found only for the same
bytes, so an edited file is read afresh. A cache only: unreadable or unwritable, it is not used.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


class SourceStore:
    """Entries by key (a file's content hash, and what else the entry depends on), the newest
    ``LIMIT`` kept; read on first use, written by ``save``."""

    LIMIT = 4096  # entries kept, the newest

    def __init__(self, name: str) -> None:
        self.name = name
        self._entries: dict[str, Any] | None = None
        self._dirty = False

    def path(self) -> Path:
        default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bottlenecks"
        folder = Path(os.environ.get("BOTTLENECKS_CACHE", default))
        return folder / f"{self.name}-py{sys.version_info[0]}{sys.version_info[1]}.json"

    def entry(self, key: str) -> Any:
        """The entry kept under ``key`` as JSON gave it (the caller checks its shape), or None."""
        if self._entries is None:
            self._entries = self._read()
        return self._entries.get(key)

    def keep(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) under ``key`` until the next ``save``; an entry once kept stays."""
        if self._entries is None:
            self._entries = self._read()
        if key not in self._entries:
            self._entries[key] = value
            self._dirty = True

    def save(self) -> None:
        """Write the entries added since the last save (the newest ``LIMIT``), atomically."""
        if not self._dirty or self._entries is None:
            return
        self._dirty = False
        keep = dict(list(self._entries.items())[-self.LIMIT :])
        path = self.path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(keep, fh, separators=(",", ":"))
            os.replace(tmp, path)  # readers see the old file or the new one, never half of one
        except OSError:
            Path(tmp).unlink(missing_ok=True)

    def _read(self) -> dict[str, Any]:
        try:
            entries = json.loads(self.path().read_text())
        except (OSError, ValueError):
            return {}
        return entries if isinstance(entries, dict) else {}
