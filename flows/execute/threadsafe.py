"""Make the parts of matplotlib (and tqdm) that keep global state safe for steps running in threads.

Only ``executor: threads`` needs this (worker processes have a matplotlib each): there steps run
concurrently in one process (Prefect's thread pool); pyplot's figure registry and the
mathtext parser (pyparsing state) are not thread-safe, and concurrent plots fail with parse
errors on log-scale tick labels. One lock around those entry points fixes it for every
component without them knowing about threads.
"""

from __future__ import annotations

import functools
import threading

_LOCK = threading.RLock()
_done = False


def _locked(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _LOCK:
            return fn(*args, **kwargs)

    return wrapper


def patch_matplotlib() -> None:
    """Serialise mathtext parsing, figure creation/closing and rendering (idempotent)."""
    global _done
    if _done:
        return
    _done = True
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.mathtext
    import matplotlib.pyplot as plt

    matplotlib.mathtext.MathTextParser.parse = _locked(matplotlib.mathtext.MathTextParser.parse)
    for name in ("figure", "subplots", "close", "savefig", "subplot_mosaic"):
        setattr(plt, name, _locked(getattr(plt, name)))
    for name in ("savefig", "draw", "tight_layout"):
        setattr(matplotlib.figure.Figure, name, _locked(getattr(matplotlib.figure.Figure, name)))


def patch_tqdm() -> None:
    """Serialise tqdm's thread_map: it swaps a class-level lock in and out (used by `datasets`
    when loading from disk), which races when two steps load datasets at once."""
    import tqdm.contrib.concurrent as concurrent

    if not getattr(concurrent._executor_map, "_bottlenecks_locked", False):
        concurrent._executor_map = _locked(concurrent._executor_map)
        concurrent._executor_map._bottlenecks_locked = True
