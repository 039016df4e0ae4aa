"""The model a step builds, as a parameter type: a shipped variant (``lstm-small``) or a user's
factory (``package.module:function``), checked where the pipeline is checked.

`bottlenecks check` must not import torch to say that ``lstmm-small`` is a typo, so the shipped
variant names are read from the ``@variant("NAME", ...)`` decorators in ``components/models``'
source (cached by file size and time); a name not found there is looked up in the variants
registered at run time before it is refused. A factory's module is imported, as a component's is.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import Annotated, Callable

from pydantic import AfterValidator

from components.imports import ModuleImportFailed, import_function, suggest
from components.registry import ParameterValueError

MODELS = Path(__file__).resolve().parent / "models"


@functools.lru_cache(maxsize=None)  # every model file once a version: shipped() reads all ~26 in turn
def _declared_in(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    tree = ast.parse(path.read_bytes(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for deco in node.decorator_list:
                func = deco.func if isinstance(deco, ast.Call) else None
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name == "variant" and deco.args and isinstance(deco.args[0], ast.Constant):
                    found.add(deco.args[0].value)
    return frozenset(found)


def shipped() -> frozenset[str]:
    """The variant names ``components/models`` declares, read from its source."""
    names: set[str] = set()
    for path in sorted(MODELS.glob("*.py")):
        st = path.stat()
        names |= _declared_in(path, st.st_mtime_ns, st.st_size)
    return frozenset(names)


def _registered() -> set[str]:
    """Variants registered by running code (a user's module that called ``variant``), if any ran."""
    registry = sys.modules.get("components.models.registry")
    return set(getattr(registry, "_VARIANTS", {}))


def factory(spec: str) -> Callable:
    """The function ``package.module:function`` names (imported); else ParameterValueError saying why."""
    try:
        return import_function(spec)
    except ModuleImportFailed as e:
        raise ParameterValueError(f"model {spec!r}: {e}") from None


def check(value: str) -> str:
    """``value`` when it names a model this installation can build; else ParameterValueError saying why."""
    if ":" in value:
        factory(value)
        return value
    known = shipped() | _registered()
    if value in known:
        return value
    raise ParameterValueError(
        f"unknown model {value!r}{suggest(value, sorted(known))}; the shipped variants are listed in docs/models.md, "
        "or give a factory as package.module:function"
    )


ModelName = Annotated[str, AfterValidator(check)]
