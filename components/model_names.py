"""The model a step builds, as a parameter type: a shipped variant (``lstm-small``) or a user's
factory (``package.module:function``), checked where the pipeline is checked.

`bottlenecks check` must not import torch to say that ``lstmm-small`` is a typo, so the shipped
variant names are read from the ``@variant("NAME", ...)`` decorators in ``components/models``'
source (cached by file size and time); a name not found there is looked up in the variants
registered at run time before it is refused. A factory (``package.module:function``) is found in its
module's source, as a component's declaration is, and the module is imported when the step runs.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Callable

from pydantic import AfterValidator

from components.imports import ModuleImportFailed, import_function, suggest
from components.registry import ParameterValueError

MODELS = Path(__file__).resolve().parent / "models"


@functools.lru_cache(maxsize=None)  # every model file once a version: shipped() reads all ~26 in turn
def _declared_in(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    source = Path(path).read_bytes()
    if b"variant" not in source and source.isascii():  # no decorator named variant: nothing to parse
        return frozenset()
    tree = ast.parse(source, path)
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
    with os.scandir(MODELS) as entries:  # checked once a model parameter: a stat a file, no more
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                st = entry.stat()
                names |= _declared_in(entry.path, st.st_mtime_ns, st.st_size)
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


def _defined_in_source(spec: str) -> bool:
    """Whether the module of ``package.module:function`` defines the function at its top level, read
    from its source without running it (so `check` does not import the module, and torch with it).
    False where only importing can tell: the module already imported, no ``.py`` source, a star
    import or a module ``__getattr__``, or the name not found (the import then says why)."""
    import importlib.util

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr or module_name in sys.modules:
        return False
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # as the import would: users keep their modules beside their pipelines
        sys.path.insert(0, cwd)
    try:
        found = importlib.util.find_spec(module_name)
        origin = Path(found.origin) if found is not None and found.origin else None
        tree = ast.parse(origin.read_bytes(), str(origin)) if origin and origin.suffix == ".py" else None
    except Exception:  # noqa: BLE001  (a parent package that fails to import, a syntax error: the import says)
        return False
    if tree is None:
        return False
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return False
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return attr in names and "__getattr__" not in names


def check(value: str) -> str:
    """``value`` when it names a model this installation can build; else ParameterValueError saying why.
    A factory is found in its module's source; the module is imported here only where the source
    cannot tell (and at run time, when the step builds the model)."""
    if ":" in value:
        if not _defined_in_source(value):
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
