"""Content-addressed step cache: a work dir and an outputs record per cache key.

The work dir of a key is stable, so a step that was interrupted (a killed training run) finds
its checkpoints again on the rerun; a step recomputed on purpose (``--no-cache``, ``cache: false``)
gets an empty one instead, and the earlier outputs stay whole until the new ones are recorded.
A lease per key keeps two concurrent pipeline runs from computing or writing the same step at
once; the second waits and then takes the cached result. The lease is an exclusive ``flock`` (the
kernel drops it when its holder dies) whose file names its owner (host, pid, run), so a waiter can
say whom it waits for and give up after a timeout.

A record holds its key's parts (``flows/plan/_keys.py``), and ``last/`` points from each
pipeline's step run to the key its latest run computed or reused, so that ``plan`` can say why a
step's key changed since.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


class LeaseTimeout(Exception):
    """Another run held a step's lease for longer than the timeout; the message names it."""


# a full disk, a file-size limit (``ulimit -f``, RLIMIT_FSIZE) or a used-up quota
NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


class NoRoom(OSError):
    """A file could not be written for want of room; the message names the folder."""


def no_room(error: OSError, folder: str | Path) -> str | None:
    """What to tell the user when ``error`` means there is no room in ``folder``; None otherwise."""
    if error.errno not in NO_ROOM:
        return None
    where = Path(error.filename).parent if error.filename else folder
    return (
        f"no room to write in {where}: {error.strerror} (the disk holding it is full, or a file-size "
        "limit is set: see `ulimit -f`); free space or raise the limit, then rerun"
    )


def no_room_behind(error: BaseException, folder: str | Path) -> str | None:
    """``no_room``'s message for the first error in ``error``'s chain that means a full disk: an
    ``OSError`` (ENOSPC, EFBIG, EDQUOT) or SQLite's "database or disk is full" (the tracking store,
    which MLflow wraps twice); None when nothing in the chain does."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and (message := no_room(e, folder)):
            return message
        if type(e).__name__ == "OperationalError" and "database or disk is full" in str(e):
            return no_room(OSError(errno.ENOSPC, "database or disk is full"), folder)
        e = e.__cause__ or e.__context__
    return None


STALE_TMP_SECONDS = 600


class StepCache:
    """Outputs of finished steps under ``root/cache`` and their files under ``root/work``."""

    def __init__(self, root: Path, *, create: bool = True):
        """``create=False`` reads only (``plan``): no folder is made and nothing is swept, so a command
        that only looks leaves no files behind; a missing folder reads as an empty cache."""
        self.root = Path(root)
        if create:
            for sub in ("cache", "last", "work", "locks"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            self._sweep_temporaries()

    def _sweep_temporaries(self) -> None:
        """Remove half-written records (``KEY.PID.tmp``) left by a process killed while it saved
        one: a save takes milliseconds, so one older than ``STALE_TMP_SECONDS`` has no writer."""
        now = time.time()
        for tmp in [*(self.root / "cache").glob("*.tmp"), *(self.root / "last").glob("*.tmp")]:
            try:
                if now - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                    tmp.unlink()
            except OSError:  # another run swept it first
                pass

    def work_dir(self, step_id: str, key: str) -> Path:
        """The key's stable work dir: a step computed after an interruption finds its checkpoints."""
        path = self.root / "work" / f"{step_id}-{key[:16]}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def fresh_work_dir(self, step_id: str, key: str, tag: str) -> Path:
        """An empty work dir for a step recomputed on purpose (``--no-cache``, ``cache: false``):
        nothing of an earlier computation (a finished run's checkpoints) is resumed, and the earlier
        outputs stay whole until the new ones are recorded (``retire_work_dirs``)."""
        path = self.root / "work" / f"{step_id}-{key[:16]}-{tag}"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def retire_work_dirs(self, step_id: str, key: str, keep: Path) -> None:
        """Remove the key's other work dirs once ``keep`` holds its recorded outputs."""
        stem = f"{step_id}-{key[:16]}"
        work = self.root / "work"
        for path in [work / stem, *work.glob(f"{stem}-*")]:
            if path != keep and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)

    def _entry(self, key: str) -> Path:
        return self.root / "cache" / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record of a finished step, or None (also when its work dir has gone)."""
        record = self.peek(key)
        if record is None:
            return None
        work = record.get("work_dir")
        if work and not Path(work).exists():
            return None
        return record

    def peek(self, key: str) -> dict | None:
        """The record of ``key`` as written, even when its work dir has gone; None when there is none."""
        try:
            return json.loads(self._entry(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict) -> None:
        """Write atomically, so a reader never sees half a record; a record that cannot be written
        whole leaves nothing behind (``NoRoom`` names the folder when the disk is full)."""
        _write_atomically(self._entry(key), {**record, "written_at": time.time()})

    def remember(self, pipeline: str, step: str, key: str) -> None:
        """Note ``key`` as the one the latest run of ``pipeline``'s step run ``step`` computed or reused."""
        _write_atomically(self._last(pipeline, step), {"pipeline": pipeline, "step": step, "key": key})

    def last(self, pipeline: str, step: str) -> dict | None:
        """The record of the key the latest run of ``pipeline``'s step run ``step`` computed or reused
        (work dir or not); None when no run of it recorded one."""
        try:
            pointer = json.loads(self._last(pipeline, step).read_text())
        except (OSError, ValueError):
            return None
        return self.peek(pointer["key"]) if isinstance(pointer, dict) and "key" in pointer else None

    def _last(self, pipeline: str, step: str) -> Path:
        name = hashlib.sha256(f"{pipeline}\0{step}".encode()).hexdigest()[:32]
        return self.root / "last" / f"{name}.json"

    def forget(self, key: str) -> None:
        self._entry(key).unlink(missing_ok=True)

    @contextmanager
    def lock(
        self,
        key: str,
        *,
        owner: dict | None = None,
        timeout: float | None = None,
        waiting: Callable[[dict], None] | None = None,
        poll: float = 0.2,
    ) -> Iterator[None]:
        """Hold the lease on ``key`` across processes (and hosts sharing the folder).

        ``owner`` is written into the lease file (host and pid are added); ``waiting`` is called
        once with the holder's record when the lease is taken; after ``timeout`` seconds of
        waiting ``LeaseTimeout`` names the holder.
        """
        path = self.root / "locks" / f"{key[:32]}.lock"
        with open(path, "a+") as fh:
            started, told = time.monotonic(), False
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = _read_owner(path)
                    if waiting is not None and not told:
                        waiting(holder)
                        told = True
                    if timeout is not None and time.monotonic() - started > timeout:
                        raise LeaseTimeout(
                            f"step cache key {key[:16]} is held by {describe_owner(holder)}; "
                            f"gave up after {timeout:.0f}s (raise settings.lease_timeout, or "
                            "stop that run)"
                        ) from None
                    time.sleep(poll)
            try:
                fh.seek(0)
                fh.truncate()
                fh.write(
                    json.dumps(
                        {**(owner or {}), "host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
                    )
                )
                fh.flush()
                yield
            finally:
                fh.seek(0)
                fh.truncate()
                fh.flush()
                fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomically(path: Path, record: dict) -> None:
    """Write ``record`` as JSON so a reader never sees half of it; nothing is left behind when it
    cannot be written whole (``NoRoom`` names the folder when the disk is full)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record, indent=1, default=str))
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        message = no_room(e, path.parent)
        if message is None:
            raise
        full = NoRoom(message)
        full.errno = e.errno
        raise full from None


def _read_owner(path: Path) -> dict:
    try:
        return json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}


def describe_owner(owner: dict) -> str:
    """``run 1a2b3c4d (pid 42 on host gpu1, for 3m)``, or what is known of it."""
    if not owner:
        return "another process"
    since = owner.get("since")
    took = f", for {int((time.time() - since) // 60)}m" if isinstance(since, (int, float)) else ""
    run = f"run {str(owner['run'])[:8]} " if owner.get("run") else ""
    return f"{run}(pid {owner.get('pid', '?')} on host {owner.get('host', '?')}{took})"
