"""Read a component's declaration (its ``@component`` call and signature) from its module's source.

`bottlenecks check` and `plan` validate pipelines from these declarations, so they need not import
a component's module (and torch with it); the module is imported when one of its steps runs. A
declaration that only running the module can tell (a computed default, a type defined in the
module) raises ``Unreadable`` and the caller imports the module instead.

A module is read as its skeleton: its top-level imports and assignments, the names of its classes
and functions, and the signature and docstring of each decorated function, which is all a
declaration can use. The skeleton is kept as source text by the hash of the module's bytes and of
this file (``components/source_store.py``), so a new process parses the skeleton of an unchanged
module (a fraction of it) instead of the module, and an edited module or reader is read afresh.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.source_store import SourceStore

_KEYWORDS = {
    "outputs",
    "version",
    "bottleneck",
    "promote",
    "shows",
    "config",
    "depends_on",
    "resources",
    "logged_before",
    "renamed_before",
    "group_by",
    "summary",
    "references",
}
_NAMED = {"config"}  # keywords that name a class, evaluated as an annotation is; the others are literals


class Unreadable(Exception):
    """The declaration cannot be read without running the module."""


@dataclass
class Declaration:
    """What ``@component(...)`` and the function signature say, evaluated."""

    name: str
    module: str
    doc: str
    keywords: dict[str, Any]
    fields: dict[str, tuple[Any, Any]]  # parameter -> (annotation, default or ...), a config's fields included


def read(module: str, path: Path, name: str) -> Declaration | None:
    """Return the declaration of component ``name`` in ``module`` (source at ``path``), or None."""
    tree = skeleton(path)
    names = _Names(module, path, tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                keywords = _component_call(deco, name, names)
                if keywords is not None:
                    fields = _config_fields(node, keywords["config"]) if "config" in keywords else _fields(node, names)
                    return Declaration(name, module, ast.get_docstring(node) or "", keywords, fields)
    return None


def skeleton(path: Path) -> ast.Module:
    """The skeleton of the module at ``path``: what ``read`` looks at, and nothing else."""
    source = path.read_bytes()
    key = f"{hashlib.sha256(source).hexdigest()}:{_READER}"
    if key not in _SKELETONS:
        kept = _STORE.entry(key)
        tree = None
        if isinstance(kept, str):
            try:
                tree = ast.parse(kept, str(path))
            except SyntaxError:  # not an entry this module wrote: read the file instead
                tree = None
        if tree is None:
            tree = _strip(ast.parse(source, str(path)))
            try:
                _STORE.keep(key, ast.unparse(tree))
                _STORE.save()
            except (ValueError, RecursionError):  # a tree unparse cannot write: kept in this process only
                pass
        _SKELETONS[key] = tree
    return _SKELETONS[key]


def _strip(tree: ast.Module) -> ast.Module:
    """Keep the top-level statements ``read`` and ``_Names`` look at: imports and assignments as they
    are, classes and undecorated functions by name, decorated functions without their bodies but
    for a docstring."""
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
            body.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if ast.get_docstring(node, clean=False) is not None else None
            if not node.decorator_list:
                node.args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
                node.returns, doc = None, None
            node.body = [doc if doc is not None else ast.Pass()]
            body.append(node)
        elif isinstance(node, ast.ClassDef):
            node.bases, node.keywords, node.decorator_list, node.body = [], [], [], [ast.Pass()]
            body.append(node)
    tree.body = body
    return ast.fix_missing_locations(tree)


_READER = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]  # a new reader reads afresh
_STORE = SourceStore("declarations")
_SKELETONS: dict[str, ast.Module] = {}  # content hash:reader -> skeleton, in this process


def _component_call(deco: ast.expr, name: str, names: _Names) -> dict[str, Any] | None:
    """The keywords of ``@component(name, ...)`` (literals, and the classes ``_NAMED`` ones name),
    None for another decorator."""
    if not (
        isinstance(deco, ast.Call)
        and deco.args
        and isinstance(deco.args[0], ast.Constant)
        and deco.args[0].value == name
    ):
        return None
    func = deco.func
    if not (
        (isinstance(func, ast.Name) and func.id == "component")
        or (isinstance(func, ast.Attribute) and func.attr == "component")
    ):
        return None
    if len(deco.args) > 1:
        raise Unreadable("positional arguments after the name")
    out = {}
    for kw in deco.keywords:
        if kw.arg not in _KEYWORDS:
            raise Unreadable(f"keyword {kw.arg!r}")
        if kw.arg in _NAMED:
            out[kw.arg] = names.eval(kw.value)
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            raise Unreadable(f"{kw.arg}= is not a literal") from None
    return out


def _fields(fn: ast.FunctionDef, names: _Names) -> dict[str, tuple[Any, Any]]:
    """Parameter -> (annotation, default) after ``ctx``, evaluated as the module would."""
    args = fn.args
    if args.vararg or args.kwarg:
        raise Unreadable("*args/**kwargs")  # the import gives the registry's own error
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    if not params or params[0][0].arg != "ctx":
        raise Unreadable("first parameter is not ctx")
    out = {}
    for arg, default in params[1:]:
        if arg.annotation is None:
            raise Unreadable(f"{arg.arg} has no annotation")
        out[arg.arg] = (names.eval(arg.annotation), ... if default is None else names.eval(default))
    return out


def _config_fields(fn: ast.FunctionDef, config: Any) -> dict[str, tuple[Any, Any]]:
    """The fields of a ``config=`` component's class; its function must read ``(ctx, cfg)``."""
    args = fn.args
    positional = args.posonlyargs + args.args
    if args.vararg or args.kwarg or args.kwonlyargs or len(positional) != 2 or positional[0].arg != "ctx":
        raise Unreadable("a config= component that is not fn(ctx, cfg)")  # the import gives the registry's own error
    fields = getattr(config, "model_fields", None)
    if not isinstance(fields, dict):
        raise Unreadable("config= is not a pydantic model")
    return {k: (f.annotation, ... if f.is_required() else f.default) for k, f in fields.items()}


class _Names:
    """The module-level names an annotation or default may use: imports and literal constants."""

    def __init__(self, module: str, path: Path, tree: ast.Module):
        self.file = str(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        self.bound: dict[str, tuple[str, Any]] = {}  # name -> ("import", (module, attr)) | ("const", node)
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.bound[alias.asname] = ("import", (alias.name, None))
                    else:
                        top = alias.name.split(".")[0]
                        self.bound[top] = ("import", (top, None))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                for alias in node.names:
                    self.bound[alias.asname or alias.name] = ("import", (base, alias.name))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.bound[target.id] = ("const", node.value)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound[node.name] = ("defined", None)

    def value(self, ident: str) -> Any:
        kind, what = self.bound.get(ident, ("builtin", None))
        if kind == "import":
            module, attr = what
            mod = importlib.import_module(module)
            if attr is None:
                return mod
            if hasattr(mod, attr):
                return getattr(mod, attr)
            return importlib.import_module(f"{module}.{attr}")  # a submodule not yet imported
        if kind == "const" and what is not None:
            try:
                return ast.literal_eval(what)
            except ValueError:
                raise Unreadable(f"{ident} is computed") from None
        if kind == "builtin" and hasattr(builtins, ident):
            return getattr(builtins, ident)
        raise Unreadable(f"{ident} is defined by running the module")

    def eval(self, expr: ast.expr) -> Any:
        """Evaluate an annotation or default with the names it uses."""
        used = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        scope = {ident: self.value(ident) for ident in used}
        return eval(compile(ast.Expression(expr), self.file, "eval"), {"__builtins__": builtins}, scope)
