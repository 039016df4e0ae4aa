"""The user's code a step runs because a parameter names it: a model factory
(``model: mymodels:build_cnn``), a model variant a plugin registered, or any other
``package.module:function`` a component imports and calls.

A component's own code is its code version (``components.code_version``). A callable named by a
parameter is code the step runs too, so its module's closure (the module, its package and every
module of the user's it imports, found as ``code_version`` walks a component's) is a key part,
one short hash per file, so that ``plan`` can name the file that changed. A callable that lives
in an installed library counts by that library's version instead.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from components import code_version
from flows.plan._fingerprint import _texts

# ``package.module:function`` (what components.imports.import_function accepts), nothing else
SPEC = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


def user_code(params: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``where`` -> what the callable named there runs: ``{module: file hash}`` for the user's
    code, ``{"library": "dist==version"}`` for an installed one. Empty when no parameter names
    one (every shipped pipeline: its keys keep their value)."""
    found: dict[str, dict[str, str]] = {}
    texts = [pair for name, value in params.items() for pair in _texts(value, name)]
    for where, text in texts:
        module = _module_of(text)
        if module is None:
            continue
        with _cwd_on_path():  # as the import will: users keep their modules beside their pipelines
            path = code_version.module_file(module)
            if path is None:
                continue
            if code_version.is_library(path):
                found[where] = {"library": _distribution(module)}
            else:
                found[where] = {"callable": text, **code_version.file_digests(module)}
    return found


def code_files(module: str) -> dict[str, str]:
    """Module -> file hash of every file ``module``'s closure holds (a user's component), found as
    its import will find them."""
    with _cwd_on_path():
        return code_version.file_digests(module) if code_version.module_file(module) else {}


def file_changes(before: dict[str, str], after: dict[str, str]) -> str:
    """``mylayers.py changed, extra.py added``: the files whose syntax changed, appeared or went."""
    files = []
    for m in sorted((set(before) | set(after)) - {"callable"}):
        if before.get(m) != after.get(m):
            state = "added" if m not in before else "removed" if m not in after else "changed"
            files.append(f"{_file_of(m)} {state}")
    return ", ".join(files)


def code_changes(old: dict, new: dict) -> list[str]:
    """``model mymodels:build_cnn: mymodels.py changed``, naming each file of the user's whose
    syntax changed, appeared or went (a module's file shown relative to this folder)."""
    said = []
    for where in sorted(set(old) | set(new)):
        before, after = old.get(where), new.get(where)
        if before == after:
            continue
        if before is None:
            said.append(f"{where} names code of the user's now ({(after or {}).get('callable', '')})")
            continue
        if after is None:
            said.append(f"{where} names no code of the user's now (was {before.get('callable', '')})")
            continue
        if "library" in before or "library" in after:
            said.append(f"{where}: {before.get('library', 'user code')} -> {after.get('library', 'user code')}")
            continue
        what = file_changes(before, after) or "its code changed"
        said.append(f"{where} {after.get('callable', '')}: {what}".replace("  ", " "))
    return said


def _module_of(text: str) -> str | None:
    """The module a ``package.module:function`` text names; a registered variant's module, for a
    model name a plugin registered; else None."""
    if SPEC.match(text):
        return text.partition(":")[0]
    registry = sys.modules.get("components.models.registry")  # only where a plugin has registered
    variant = getattr(registry, "_VARIANTS", {}).get(text) if registry is not None else None
    module = getattr(getattr(variant, "make", None), "__module__", None)
    if module and not module.startswith("components."):
        return module
    return None


def _distribution(module: str) -> str:
    top = module.split(".")[0]
    names = metadata.packages_distributions().get(top, [top])
    try:
        return f"{names[0]}=={metadata.version(names[0])}"
    except metadata.PackageNotFoundError:
        return f"{top} (version unknown)"


def _file_of(module: str) -> str:
    with _cwd_on_path():
        path = code_version.module_file(module)
    if path is None:
        return module
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _cwd_on_path:
    """``sys.path`` with the working folder first while a module is looked up, as
    ``components.imports.import_module`` has it when the step imports the module."""

    def __enter__(self):
        cwd = str(Path.cwd())
        self.added = cwd not in sys.path
        if self.added:
            sys.path.insert(0, cwd)

    def __exit__(self, *exc):
        if self.added:
            try:
                sys.path.remove(str(Path.cwd()))
            except ValueError:
                pass
