"""Task kind name -> its class, and the choice of a data folder's kind (stands alone: the classes
import it to register, and ``Task`` calls ``choose``)."""

from __future__ import annotations

import difflib
from typing import Any, Callable

from components.train.errors import TrainError

KINDS: dict[str, type] = {}  # name -> a subclass of ``base.Task`` (not imported here: it imports this)


def register(cls: type) -> type:
    """Class decorator: make ``cls`` the task kind ``cls.kind`` (a name taken twice is an error)."""
    if cls.kind in KINDS:
        raise TrainError(f"task kind {cls.kind!r} is registered twice: {KINDS[cls.kind].__name__} and {cls.__name__}")
    KINDS[cls.kind] = cls
    return cls


def known() -> str:
    return ", ".join(sorted(KINDS))


def lookup(name: str) -> type:
    """The class of task kind ``name``; an unknown name says the known ones."""
    if name not in KINDS:
        close = difflib.get_close_matches(name, KINDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TrainError(f"unknown task kind {name!r}: the known kinds are {known()}{hint}")
    return KINDS[name]


def choose(meta: dict[str, Any], train: Callable[[], dict] | None = None) -> type:
    """The kind that reads a folder: meta.json's ``task_kind`` when it names one, else the one kind
    whose ``reads`` is meta.json's ``kind`` and whose ``fits`` holds (``train`` loads the train split)."""
    if "task_kind" in meta:
        return lookup(meta["task_kind"])
    found = [c for c in KINDS.values() if c.reads == meta.get("kind") and c.fits(meta, train)]
    if len(found) == 1:
        return found[0]
    data = f"meta.json kind {meta.get('kind')!r}" + (f", target {meta['target']!r}" if "target" in meta else "")
    if not found:
        raise TrainError(f"no task kind reads this data ({data}): the known kinds are {known()}")
    raise TrainError(f"several task kinds read this data ({data}): {', '.join(c.kind for c in found)}")
