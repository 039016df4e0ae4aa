"""Content-addressed step cache: a work dir and an outputs record per cache key.

The work dir of a key is stable, so a step that was interrupted (a killed training run) finds
its checkpoints again on the rerun. A lock per key keeps two concurrent pipeline runs from
computing or writing the same step at once; the second waits and then takes the cached result.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class StepCache:
    """Outputs of finished steps under ``root/cache`` and their files under ``root/work``."""

    def __init__(self, root: Path):
        self.root = Path(root)
        for sub in ("cache", "work", "locks"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def work_dir(self, step_id: str, key: str) -> Path:
        path = self.root / "work" / f"{step_id}-{key[:16]}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _entry(self, key: str) -> Path:
        return self.root / "cache" / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record of a finished step, or None (also when its work dir has gone)."""
        path = self._entry(key)
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        work = record.get("work_dir")
        if work and not Path(work).exists():
            return None
        return record

    def put(self, key: str, record: dict) -> None:
        """Write atomically, so a reader never sees half a record."""
        path = self._entry(key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**record, "written_at": time.time()}, indent=1, default=str))
        os.replace(tmp, path)

    def forget(self, key: str) -> None:
        self._entry(key).unlink(missing_ok=True)

    @contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold an exclusive lock on ``key`` across processes."""
        with open(self.root / "locks" / f"{key[:32]}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
