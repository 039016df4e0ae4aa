"""The libraries a component's results depend on, and their installed versions, for its cache key.

A component depends on torch and numpy (the engine's context seeds both for every step), on each
library of ``KNOWN`` that its code imports (its module's import closure inside its package, as for
its code version: imports inside functions count) and on what it declares with
``@component(..., depends_on=[...])``. Versions come from package metadata, never by importing a
library, and are read once per process (a forked command is a process of its own).
"""

from __future__ import annotations

import os
from importlib import metadata

from components import code_version
from components.registry import Component

ALWAYS = ("torch", "numpy")
# import name -> distribution: libraries whose version can move a number, a file or a figure
KNOWN = {
    "torch": "torch",
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "sklearn": "scikit-learn",
    "statsmodels": "statsmodels",
    "matplotlib": "matplotlib",
    "sacrebleu": "sacrebleu",
    "sacremoses": "sacremoses",
    "tokenizers": "tokenizers",
    "sentencepiece": "sentencepiece",
    "datasets": "datasets",
    "pyarrow": "pyarrow",
    "transformers": "transformers",
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "PIL": "pillow",
}

_VERSIONS: dict[str, str | None] = {}
_READ_BY = [0]  # the process that read _VERSIONS: a forked child reads again


def libraries(comp: Component) -> dict[str, str | None]:
    """Distribution -> installed version (None: not installed) of what ``comp``'s results depend on."""
    names = set(ALWAYS) | set(comp.depends_on)
    if comp.module:
        names |= {KNOWN[top] for top in code_version.imported_packages(comp.module) if top in KNOWN}
    return {name: version(name) for name in sorted(names)}


def version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (None when it is not installed), read once per process."""
    if _READ_BY[0] != os.getpid():
        _VERSIONS.clear()
        _READ_BY[0] = os.getpid()
    if distribution not in _VERSIONS:
        try:
            _VERSIONS[distribution] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            _VERSIONS[distribution] = None
    return _VERSIONS[distribution]
