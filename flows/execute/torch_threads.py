"""Torch's thread count for the steps of this process, set without importing torch for them.

A step runs with ``n`` torch threads (its share of the cores). Where torch is already loaded the
count is set at once; where it is not, it is set the moment torch is first imported, by the step
or by anything it calls, before torch computes anything. A worker whose steps never use torch
(data preparation, reports, a user's own component) then never pays for importing it, in time or
in memory (docs/performance.md, "The test suite").
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading

_lock = threading.Lock()


def set_threads(n: int) -> None:
    """Run torch with ``n`` threads in this process, now or as torch is first imported."""
    with _lock:
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "set_num_threads"):
            _FINDER.wanted = 0
            torch.set_num_threads(n)
            return
        _FINDER.wanted = n
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)


def pending() -> int:
    """The thread count waiting for torch's import (0: none waits)."""
    return _FINDER.wanted if _FINDER in sys.meta_path else 0


class _WhenTorchLoads(importlib.abc.MetaPathFinder):
    """Finds torch as the other finders do; its loader then sets the thread count once torch has run."""

    wanted = 0

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or not self.wanted:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _SettingLoader(spec.loader, self)
                return spec
        return None


class _SettingLoader(importlib.abc.Loader):
    """Torch's own loader, and after it has run the thread count set; the module keeps the real loader."""

    def __init__(self, inner, finder: _WhenTorchLoads):
        self.inner, self.finder = inner, finder

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        with _lock:
            n, self.finder.wanted = self.finder.wanted, 0
            if self.finder in sys.meta_path:
                sys.meta_path.remove(self.finder)
        if n:
            module.set_num_threads(n)

    def __getattr__(self, name):  # resources, source and code come from torch's own loader
        return getattr(self.inner, name)


_FINDER = _WhenTorchLoads()
