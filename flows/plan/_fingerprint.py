"""Fingerprints of the files a step reads from outside the run store, for its cache key.

Which parameters name such files: one whose declared type holds ``pathlib.Path`` (a file or a
folder; a missing one counts as missing), and any text value that names an existing folder
(relative to the working folder) outside the state folder and not holding it (``"."`` does not
count): a ``data_dir``, a corpus folder; an empty folder adds nothing to the key. A text naming a
single file counts only through its folder or a ``Path`` declaration, since marker, counter and log
files a step writes itself are passed as text too, and fingerprinting them would give the step a
new key on every run (and lose the checkpoints an interrupted run left under the old one).

A path's fingerprint is a hash of its files' relative names and content hashes, as DVC does: each
file's SHA-256 is kept in ``fingerprints.db`` under the state folder with the file's size, mtime
and inode, and is computed again only when one of those changed, so an unchanged corpus costs a
``stat`` per file. A file rewritten with other bytes but the same size, mtime (to the nanosecond)
and inode is not noticed (a clock set back, ``touch -d`` to the old time); ``run --fresh`` computes
its steps again. A file modified in the last two seconds is hashed and not remembered (git's
"racily clean" rule). Each path's list of file hashes (its manifest) is kept too, so ``plan`` can
say how many files changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import typing
from pathlib import Path, PurePath
from typing import Any

from components.registry import Component
from flows.language.refs import Ref

DB = "fingerprints.db"
RACY_NS = 2_000_000_000  # a file younger than this may still change within its mtime's tick


def path_params(comp: Component, params: dict[str, Any], store: Path) -> dict[str, Path]:
    """Each path ``params`` names outside ``store``, by where it sits (``data_dir``, ``files.train[0]``)."""
    fields = comp.params_model.model_fields
    found: dict[str, Path] = {}
    for name, value in params.items():
        declared = name in fields and _holds_path(fields[name].annotation)
        for where, text in _texts(value, name):
            path = _as_path(text, declared, store)
            if path is not None:
                found[where] = path
    return found


def _holds_path(annotation: Any) -> bool:
    """Whether a parameter's type is, or holds, ``pathlib.Path``."""
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return True
    return any(_holds_path(arg) for arg in typing.get_args(annotation))


def _texts(value: Any, where: str):
    """Yield (where, text) for every text in ``value``; references to other steps are skipped."""
    if isinstance(value, Ref):
        return
    if isinstance(value, (str, PurePath)):
        yield where, str(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _texts(v, f"{where}[{i}]")


def _as_path(text: str, declared: bool, store: Path) -> Path | None:
    """The path ``text`` names when it is one to fingerprint, else None."""
    if not text or "\n" in text or "\0" in text or "://" in text or len(text) > 4096:
        return None
    path = Path(os.path.abspath(os.path.expanduser(text)))
    try:
        if not (declared or path.is_dir()):
            return None
    except OSError:
        return None
    real, home = Path(os.path.realpath(path)), Path(os.path.realpath(store))
    if real == home or home in real.parents or real in home.parents:
        return None
    return path


class Fingerprints:
    """Content fingerprints of paths, remembered by (size, mtime, inode) in ``store/fingerprints.db``."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self._db: sqlite3.Connection | None = None
        self._seen: dict[Path, dict[str, Any]] = {}  # a path read by many steps of a plan is walked once

    def of(self, path: Path) -> dict[str, Any]:
        """``{"digest": ..., "files": n}`` of the file or folder at ``path``; ``{"missing": True}`` if none."""
        if path not in self._seen:
            self._seen[path] = self._fingerprint(path)
        return self._seen[path]

    def _fingerprint(self, path: Path) -> dict[str, Any]:
        if not path.exists():
            return {"missing": True}
        manifest = self._manifest(path)
        lines = "".join(f"{name}\0{digest}\n" for name, digest in sorted(manifest.items()))
        digest = hashlib.sha256(lines.encode()).hexdigest()[:16]
        self._keep_manifest(digest, manifest)
        self._commit()  # now, not at the end of the plan: another plan waits on the lock while it is held
        return {"digest": digest, "files": len(manifest)}

    def manifest(self, digest: str) -> dict[str, str] | None:
        """The file name -> content hash list a fingerprint was made of, when it is remembered."""
        row = self._sql("SELECT body FROM manifests WHERE digest = ?", (digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def _manifest(self, path: Path) -> dict[str, str]:
        """Relative file name -> content hash of every file at ``path`` (a file: its own name)."""
        if path.is_file():
            return {path.name: self._hash(path, self._known(path, single=True))}
        files = _files(path, self.store)
        known = self._known(path)
        return {name: self._hash(path / name, known) for name in files}

    def _hash(self, file: Path, known: dict[str, tuple]) -> str:
        st = file.stat()
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        row = known.get(str(file))
        if row is not None and row[:3] == stamp:
            return row[3]
        with open(file, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        if time.time_ns() - st.st_mtime_ns > RACY_NS:
            self._sql("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", (str(file), *stamp, digest))
        return digest

    def _known(self, path: Path, single: bool = False) -> dict[str, tuple]:
        """Remembered (size, mtime, inode, hash) of the file ``path`` or of every file under it."""
        if single:
            rows = self._sql("SELECT * FROM files WHERE path = ?", (str(path),))
        else:
            prefix = str(path).rstrip(os.sep) + os.sep
            rows = self._sql("SELECT * FROM files WHERE path >= ? AND path < ?", (prefix, prefix + "\uffff"))
        return {row[0]: row[1:] for row in rows}

    def _keep_manifest(self, digest: str, manifest: dict[str, str]) -> None:
        self._sql("INSERT OR IGNORE INTO manifests VALUES (?, ?)", (digest, json.dumps(manifest)))

    def _sql(self, query: str, args: tuple) -> sqlite3.Cursor:
        """Run ``query``; a database that cannot be read or written (locked past the timeout, on a
        file system without locks) is left for one in memory: hashes are then computed again."""
        try:
            return self.db.execute(query, args)
        except sqlite3.Error:
            self.close()
            self._db = _open(":memory:")
            return self._db.execute(query, args)

    @property
    def db(self) -> sqlite3.Connection:  # opened on first use: a plan without such paths never opens it
        """The remembered hashes; in memory when the state folder cannot be written."""
        if self._db is None:
            try:
                self.store.mkdir(parents=True, exist_ok=True)
                self._db = _open(str(self.store / DB))
            except (OSError, sqlite3.Error):
                self._db = _open(":memory:")
        return self._db

    def _commit(self) -> None:
        try:
            self.db.commit()
        except sqlite3.Error:  # another writer held it past the timeout: hashes are computed again next time
            pass

    def close(self) -> None:
        """Write what was learnt and close the database."""
        if self._db is not None:
            self._commit()
            self._db.close()
            self._db = None


def _open(where: str) -> sqlite3.Connection:
    db = sqlite3.connect(where, timeout=10)
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INT, mtime_ns INT, inode INT, digest TEXT)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS manifests (digest TEXT PRIMARY KEY, body TEXT)")
    return db


def _files(folder: Path, store: Path) -> list[str]:
    """Names, relative to ``folder``, of the files beneath it (links followed to files, not folders)."""
    out: list[str] = []
    skip = os.path.realpath(store)
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if os.path.realpath(os.path.join(top, d)) != skip)
        rel = os.path.relpath(top, folder)
        out += [n if rel == "." else os.path.join(rel, n) for n in names if os.path.isfile(os.path.join(top, n))]
    return sorted(out)


def changed_files(old: dict[str, str] | None, new: dict[str, str] | None) -> str:
    """``3 files: 1 changed, 2 added`` between two manifests, or '' when either is unknown."""
    if old is None or new is None:
        return ""
    changed = sum(1 for n in new if n in old and old[n] != new[n])
    added, removed = len(set(new) - set(old)), len(set(old) - set(new))
    counts = [(changed, "changed"), (added, "added"), (removed, "removed")]
    total = changed + added + removed
    return f"{total} file{'s' if total != 1 else ''}: " + ", ".join(f"{n} {what}" for n, what in counts if n)
