"""Importing a user's module (a plugin's components, a model factory) so that any failure inside it
reads as one line that says which module, what went wrong and where in the user's file, instead
of a traceback through the engine."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Callable


class ModuleImportFailed(Exception):
    """Importing a user's module failed; the message says why and where."""


def suggest(word, choices, cutoff: float = 0.6) -> str:
    """Return ' (did you mean X?)' for the closest choice (compared as text), or ''; a choice with the
    same letters in another order (``mialc`` for ``claim``) counts as close too."""
    texts = [str(c) for c in choices]
    match = difflib.get_close_matches(str(word), texts, n=1, cutoff=cutoff)
    if not match:
        match = [t for t in texts if len(t) > 2 and sorted(t.lower()) == sorted(str(word).lower())][:1]
    return f" (did you mean {match[0]!r}?)" if match else ""


def _source_root(name: str) -> Path | None:
    """The file of module ``name`` or the folder of the package it belongs to."""
    try:
        spec = importlib.util.find_spec(name.partition(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin else None


def _where(exc: BaseException, name: str) -> str:
    """`` (at FILE:LINE)``: the innermost frame of ``exc``'s traceback in the module's own source
    (its package's, for a package), else the innermost outside Python's import machinery."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen ")]
    root = _source_root(name)
    own = [f for f in frames if root is not None and (Path(f.filename) == root or root in Path(f.filename).parents)]
    frames = own or [f for f in frames if Path(f.filename).parent.name != "importlib"]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def import_module(name: str) -> ModuleType:
    """``importlib.import_module(name)``; any exception raised while importing becomes
    ``ModuleImportFailed`` with the module's name, the error and its place in the source. The
    working directory is on the path: users keep their modules next to their pipelines."""
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except SyntaxError as e:  # IndentationError and TabError too
        where = f"{e.filename}:{e.lineno}:{e.offset or 1}" if e.filename else "its source"
        raise ModuleImportFailed(
            f"module {name!r} has a syntax error at {where}: {e.msg}; fix it and check again"
        ) from None
    except ModuleNotFoundError as e:
        if e.name == name or (e.name and name.startswith(e.name + ".")):
            raise ModuleImportFailed(
                f"no module named {name!r} (is it installed, or in the folder the command runs in?)"
            ) from None
        raise ModuleImportFailed(
            f"module {name!r} imports {e.name!r}, which is not installed{_where(e, name)}: {e}"
        ) from None
    except Exception as e:  # anything the module's own code raised while it ran
        raise ModuleImportFailed(f"importing module {name!r} raised {type(e).__name__}: {e}{_where(e, name)}") from None


def import_function(spec: str) -> Callable:
    """The callable ``package.module:function`` names, imported; else ``ModuleImportFailed`` saying
    why (the spec's shape, the import's failure, or the names the module does have)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ModuleImportFailed(f"{spec!r} is not written package.module:function")
    module = import_module(module_name)
    fn = getattr(module, attr, None)
    if fn is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        raise ModuleImportFailed(f"module {module_name!r} has no function {attr!r}{suggest(attr, names)}")
    if not callable(fn):
        raise ModuleImportFailed(f"{spec!r} is not callable")
    return fn
