"""A component's code version: a hash of the source its module runs, for the step cache key.

That source is the module and every module it imports, directly or through others (imports inside
functions included), with their packages' ``__init__`` files, that is the user's code: of the same
top-level package, or of another top-level module or package found outside the interpreter's
standard library and site-packages (a model file's ``import myutils`` beside it; an editable
install). Installed libraries are not walked: their versions are a key part of their own
(``flows.plan._libraries``). Each file counts as its syntax tree, so comments, blank lines and
reformatting keep the version.

A file is parsed once for its bytes: the parse (the tree's digest and the imports) is kept by the
hash of those bytes, in this process and in a store in the user's cache folder that the next
process reads (`plan` in a new process parses nothing that has not changed; `check` computes no
code version). A module's closure and digest are kept with the (path, mtime, size) of every file in
it and the import path: a long-lived process (the warm process, ``serve``) sees an edited file, and
an unchanged closure costs one ``stat`` a file. A walk looks at each name, and judges each top-level
package, once.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from components.source_store import SourceStore

Stats = tuple[tuple[str, int, int], ...]  # (path, mtime_ns, size) of each file of a closure

_FOUND: dict[tuple[str, tuple[str, ...]], Path | None] = {}  # (module, sys.path) -> its source file


@dataclass(frozen=True)
class _Known:
    stats: Stats  # of every file in the closure, to see an edit
    files: dict[str, Path]  # the closure: module name -> source file
    digest: str
    packages: frozenset[str]  # top-level packages outside its own that the closure imports


_KNOWN: dict[tuple[str, tuple[str, ...]], _Known] = {}  # (module, sys.path) -> its closure when last read


def digest(module_name: str) -> str:
    """Hash the code of ``module_name`` and of its import closure inside its top-level package."""
    return _known(module_name).digest


def closure(module_name: str) -> dict[str, Path]:
    """``module_name`` and the modules of its top-level package it imports, directly or through
    others, with their parent packages: module name -> source file."""
    return dict(_known(module_name).files)


def imported_packages(module_name: str) -> frozenset[str]:
    """Top-level packages outside its own that ``module_name``'s closure imports (``import torch``
    anywhere in it gives ``torch``; relative imports are its own)."""
    return _known(module_name).packages


def file_digests(module_name: str) -> dict[str, str]:
    """Module name -> a short hash of its file's syntax tree, for every file of ``module_name``'s
    closure: what a cache key keeps to say which file of a user's code changed."""
    known = _known(module_name)
    return {name: _parsed(path).tree.hex()[:12] for name, path in sorted(known.files.items())}


def is_library(path: Path) -> bool:
    """Whether ``path`` lies in the interpreter's standard library or a site-packages folder."""
    resolved = str(Path(path).resolve())
    return any(resolved == root or resolved.startswith(root + os.sep) for root in _library_roots())


def _library_roots() -> tuple[str, ...]:
    if not _ROOTS:
        paths = sysconfig.get_paths()
        found = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        try:
            found |= set(site.getsitepackages()) | {site.getusersitepackages()}
        except AttributeError:  # a virtualenv's old site module
            pass
        _ROOTS.extend(sorted({str(Path(p).resolve()) for p in found if p}))
    return tuple(_ROOTS)


_ROOTS: list[str] = []


def forget() -> None:
    """Drop every remembered closure and parse (tests; a process that rewrites files in place
    within one mtime tick)."""
    _KNOWN.clear()
    _FOUND.clear()
    _PARSES.clear()
    _READ.clear()


def _known(module_name: str) -> _Known:
    key = (module_name, tuple(sys.path))  # another path can find other files under the same names
    known = _KNOWN.get(key)
    if known is not None:
        if _stats(path for path, _, _ in known.stats) == known.stats:
            return known
        _FOUND.clear()  # an edited file may import a module that was not there before
    parses = _walk(module_name)
    files = {name: path for name, (path, _) in parses.items()}
    names = sorted(files)
    walked = {name.split(".")[0] for name in names}
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())  # a moved module changes the key too
        h.update(parses[name][1].tree)
    tops = {m.split(".")[0] for name in names for level, m, _ in parses[name][1].imports if not level}
    tops -= walked
    tops.discard("")
    _KNOWN[key] = _Known(_stats(str(files[n]) for n in names), files, h.hexdigest()[:12], frozenset(tops))
    _STORE.save()
    return _KNOWN[key]


def module_file(name: str) -> Path | None:
    """The source file of module ``name``, or None (not a module, not Python source).

    Found without importing it or its parent packages (``find_spec`` of ``a.b`` imports ``a``),
    and remembered: closures overlap (every component imports the registry).
    """
    key = (name, tuple(sys.path))
    if key not in _FOUND or (_FOUND[key] is not None and not _FOUND[key].is_file()):
        _FOUND[key] = _find(name)
    return _FOUND[key]


def _find(name: str) -> Path | None:
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
        for part in parts[1:]:
            if spec is None or not spec.submodule_search_locations:
                return None
            spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    except (ImportError, ValueError, AttributeError):
        return None
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and origin.endswith(".py") and Path(origin).is_file() else None


def _stats(paths) -> Stats:
    """(path, mtime_ns, size) of each path; a file that is gone reads (path, -1, -1)."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((str(path), -1, -1))
    return tuple(out)


def _walk(module_name: str) -> dict[str, tuple[Path, _Parsed]]:
    """Walk the imports from ``module_name`` (``closure`` remembers what this finds): its own
    top-level package, and any other top-level module or package that is the user's code.
    Module name -> (source file, its parse); each name and each file is looked at once a walk."""
    root = module_name.split(".")[0]
    found: dict[str, tuple[Path, _Parsed]] = {}
    seen: set[str] = set()  # names looked at: modules, and the names a ``from`` imports that are not
    users = {root: True}  # top-level name -> whether it is the user's code
    todo = [module_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        top = name.split(".")[0]
        if top not in users:
            users[top] = _is_users(top)
        if not users[top]:
            continue
        path = module_file(name)
        if path is None:
            continue
        parsed = _parsed(path)
        found[name] = (path, parsed)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run first
        todo.extend(_imports(name, path, parsed))
    return found


def _is_users(top: str) -> bool:
    """Whether top-level module ``top`` is found as Python source outside the installed libraries
    (a module beside the user's pipeline, a package of theirs on the path or installed editable)."""
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        return False
    path = module_file(top)
    return path is not None and not is_library(path)


def _imports(name: str, path: Path, parsed: _Parsed) -> set[str]:
    """Module names ``name`` (source ``path``, parsed) imports anywhere in its source (``from a
    import b`` gives a and a.b)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for level, module, names in parsed.imports:
        if level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - level + 1])  # level 1: this package
            base = f"{base}.{module}" if module else base
        else:
            base = module
        out.add(base)
        out.update(f"{base}.{alias}" for alias in names if alias != "*")
    return out


@dataclass(frozen=True)
class _Parsed:
    tree: bytes  # digest of the syntax tree (of the bytes, for a file that does not parse)
    imports: tuple[tuple[int, str, tuple[str, ...]], ...]  # (level, module, names); ``import a.b`` is (0, "a.b", ())


def _parsed(path: Path) -> _Parsed:
    """The parse of ``path``'s bytes: remembered by their hash, in this process and in the store."""
    st = path.stat()
    seen = (str(path), st.st_mtime_ns, st.st_size)
    if seen not in _READ:
        source = path.read_bytes()
        content = hashlib.sha256(source).hexdigest()
        if content not in _PARSES:
            _PARSES[content] = _STORE.get(content) or _parse(source, str(path))
            _STORE.put(content, _PARSES[content])
        _READ[seen] = content
    return _PARSES[_READ[seen]]


_PARSES: dict[str, _Parsed] = {}  # content hash -> parse
_READ: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) -> content hash: a file is read once a version


def _parse(source: bytes, filename: str) -> _Parsed:
    """One parse of a file: its tree's digest and its imports."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:  # the import will report it; any edit still changes the key
        return _Parsed(hashlib.sha256(source).digest(), ())
    imports: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
    return _Parsed(hashlib.sha256(ast.dump(tree).encode()).digest(), tuple(imports))


class _Store(SourceStore):
    """Parses kept across processes (``components/source_store.py``), by a file's content hash:
    `plan` in a new process reads them instead of parsing every file again."""

    LIMIT = 4096  # one file's entry is about 0.5 KB

    def __init__(self) -> None:
        super().__init__("code-trees")

    def get(self, content: str) -> _Parsed | None:
        try:
            tree, imports = self.entry(content)
            parsed = _Parsed(bytes.fromhex(tree), tuple((lv, m, tuple(ns)) for lv, m, ns in imports))
        except (TypeError, ValueError):  # not an entry this module wrote: parse the file instead
            return None
        ok = all(
            isinstance(lv, int) and isinstance(m, str) and all(isinstance(n, str) for n in ns)
            for lv, m, ns in parsed.imports
        )
        return parsed if ok and len(parsed.tree) == 32 else None

    def put(self, content: str, parsed: _Parsed) -> None:
        self.keep(content, [parsed.tree.hex(), [list(i) for i in parsed.imports]])


_STORE = _Store()
