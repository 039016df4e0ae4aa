"""Load YAML with ``safe_load`` semantics, keeping the line and column of every key and value.

Mappings become ``YMap`` (a dict remembering positions), sequences ``YList``. Duplicate keys,
tab indentation and any non-standard tag (``!!python/...``, ``!custom``) are errors, and so is
anything past the bounds that keep a hostile file from exhausting time or memory: file size, line
length, control characters, 64-bit integers here; values, nesting and alias expansion in
``flows/language/yamlcompose.py``.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from components import bounds
from flows.language.errors import Collector
from flows.language.yamlcompose import MAX_DEPTH, Loader, Refused, compose

MAX_BYTES = 1 << 20  # 1 MiB; the largest shipped pipeline is 26 KB
MAX_LINE = 10_000  # characters; shipped pipelines stay under 300
MAX_INT_DIGITS = 19  # integers are 64-bit: torch, JSON consumers and MLflow all expect that

Pos = tuple[int, int]

_SAFE_TAGS = {
    "tag:yaml.org,2002:" + t
    for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "binary", "merge")
}


class YMap(dict):
    """A dict with ``pos`` (of the mapping), ``key_pos`` and ``val_pos`` per key."""

    def __init__(self, *args, pos: Pos = (1, 1), **kwargs):
        super().__init__(*args, **kwargs)
        self.pos = pos
        self.key_pos: dict = {}
        self.val_pos: dict = {}

    def kpos(self, key) -> Pos:
        return self.key_pos.get(key, self.pos)

    def vpos(self, key) -> Pos:
        return self.val_pos.get(key, self.kpos(key))


class YList(list):
    """A list with ``pos`` and ``item_pos``."""

    def __init__(self, *args, pos: Pos = (1, 1)):
        super().__init__(*args)
        self.pos = pos
        self.item_pos: list[Pos] = []

    def ipos(self, i: int) -> Pos:
        return self.item_pos[i] if i < len(self.item_pos) else self.pos


def _pos(node) -> Pos:
    # a quoted scalar starts at its quote; point at the first character of the value instead
    quoted = isinstance(node, ScalarNode) and node.style in ('"', "'")
    return node.start_mark.line + 1, node.start_mark.column + 1 + quoted


def _mark_pos(mark) -> Pos:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _index_pos(text: str, i: int) -> Pos:
    line_start = text.rfind("\n", 0, i) + 1
    return text.count("\n", 0, i) + 1, i - line_start + 1


_TAB_INDENT = re.compile(r"^( *)\t")
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE  # YAML's own definition of printable text
_CHAR_NAMES = {0: "NUL"}


def read(path: Path, errors: Collector) -> str | None:
    """Read a pipeline file as UTF-8 text of at most ``MAX_BYTES``; None (with an error) if not.

    Only a regular file is read: a pipe, socket or device may block or never end, so its type is
    checked before opening, and the file is opened without blocking and checked again once open."""
    try:
        kind = _not_a_file(os.stat(path).st_mode)
        if kind is None:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
            with open(fd, "rb") as f:
                kind = _not_a_file(os.fstat(fd).st_mode)  # replaced since the first look
                raw = None if kind else f.read(MAX_BYTES + 1)  # bounded: a file may grow while read
    except OSError as e:
        errors.add((1, 1), _unreadable(e))
        return None
    except ValueError:  # a NUL or a lone surrogate: no file system takes such a name
        errors.add((1, 1), f"the file name holds a character no file name can hold; {_GIVE_A_FILE}")
        return None
    if kind is not None:
        errors.add((1, 1), f"this is {kind}, not a pipeline file; {_GIVE_A_FILE}")
        return None
    if len(raw) > MAX_BYTES:
        errors.add(
            (1, 1),
            f"the file is larger than {MAX_BYTES:,} bytes (the largest allowed); "
            "keep big lists in a data file the step reads",
        )
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            errors.add((1, 1), "the file is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8")
            return None
        good = raw[: e.start].decode("utf-8")
        errors.add(
            _index_pos(good, len(good)),
            f"the file is not UTF-8 text (byte 0x{raw[e.start]:02x} "
            "cannot start a character); is it a binary file? Pipelines "
            "are YAML text in UTF-8",
        )
        return None


_GIVE_A_FILE = "give the path of a pipeline's .yaml file"
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_a_file(mode: int) -> str | None:
    """What a path is when it is not a regular file ("a directory", "a named pipe (FIFO)"...)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "a special file")


def _unreadable(e: OSError) -> str:
    """Why a path cannot be read, and what to do about it, in a user's words."""
    fixes = {
        errno.ENOENT: "check the path (it is relative to the current folder)",
        errno.ENAMETOOLONG: "a name in a path may have at most 255 bytes (a whole path 4,096); check the path",
        errno.ELOOP: "symbolic links here lead back to themselves in a loop; point the link at a pipeline file",
        errno.EACCES: "make the file readable (chmod u+r) or run as a user who may read it",
        errno.ENOTDIR: "a part of the path before the file name is a file, not a folder; check the path",
    }
    fix = fixes.get(e.errno, _GIVE_A_FILE)
    return f"cannot read pipeline file: {e.strerror or e}; {fix}"


def _check_text(text: str, errors: Collector) -> bool:
    """Refuse control characters, overlong lines and tab indentation before parsing."""
    bad = _NON_PRINTABLE.search(text)
    if bad:
        code = ord(bad.group())
        name = _CHAR_NAMES.get(code, f"U+{code:04X}")
        errors.add(
            _index_pos(text, bad.start()), f"control character {name} is not allowed in YAML; is this a binary file?"
        )
        return False
    ok = True
    for i, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE:
            errors.add(
                (i, MAX_LINE + 1),
                f"line is {len(line):,} characters long; at most {MAX_LINE:,} are "
                "allowed (break long lists over several lines)",
            )
            return False
        m = _TAB_INDENT.match(line)
        if m:
            ok = False
            errors.add((i, len(m.group(1)) + 1), "tab character in indentation; YAML indents with spaces only")
    return ok


def _unquoted_reference(text: str, mark) -> str:
    """A hint when the line YAML stopped at holds an unquoted ``${...}`` inside ``{ }`` or ``[ ]``, where
    YAML reads ``{`` as a nested mapping (the usual cause of "did not find expected ',' or '}'")."""
    lines = text.splitlines()
    line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
    if re.search(r"(?<![\"'])\$\{", line) and re.search(r"[{\[]", line.split("${")[0]):
        return '; a ${...} reference inside { } or [ ] must be quoted, e.g. data: "${step.output}"'
    return ""


def load(text: str, errors: Collector):
    """Parse ``text``; return the root (``YMap``/``YList``/scalar) or None, adding errors."""
    if not _check_text(text, errors):
        return None
    loader = Loader(text)
    try:
        node = compose(loader)
    except Refused as e:
        errors.add(e.pos, e.message)
        return None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        if "maximum nesting depth" in str(e.problem):  # libyaml's own bound, hit while scanning ahead
            errors.add(
                _mark_pos(mark), f"values nest more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH} are allowed"
            )
            return None
        problem = e.problem or "invalid YAML"
        context = f" ({e.context})" if e.context else ""
        errors.add(_mark_pos(mark), f"YAML syntax error: {problem}{context}{_unquoted_reference(text, mark)}")
        return None
    except yaml.YAMLError as e:
        errors.add((1, 1), f"YAML error: {e}")
        return None
    finally:
        loader.dispose()
    if node is None:
        return None
    return _convert(node, loader, errors)


def _convert(node, loader, errors: Collector):
    if node.tag not in _SAFE_TAGS:
        errors.add(
            _pos(node),
            f"tag {node.tag!r} is not allowed: pipelines use plain YAML values only (no !!python/... or custom tags)",
        )
        return None
    if isinstance(node, MappingNode):
        return _convert_mapping(node, loader, errors)
    if isinstance(node, SequenceNode):
        out = YList(pos=_pos(node))
        for item in node.value:
            out.append(_convert(item, loader, errors))
            out.item_pos.append(_pos(item))
        return out
    assert isinstance(node, ScalarNode)
    if node.tag == _INT and not _int_fits(node.value):
        errors.add(
            _pos(node),
            f"integer {clip(node.value)} does not fit in 64 bits (|n| < 2**63); quote it if it is meant as text",
        )
        return None
    try:
        return loader.construct_object(node, deep=True)
    except yaml.MarkedYAMLError as e:
        errors.add(_pos(node), f"invalid value: {e.problem}")
        return None
    except ValueError as e:  # e.g. a timestamp with a month 13
        errors.add(_pos(node), f"invalid value {clip(node.value)}: {e}")
        return None


def _convert_mapping(node: MappingNode, loader, errors: Collector) -> YMap:
    if not hasattr(node, "merged"):  # an aliased mapping is converted once per use, flattened once
        explicit = sum(1 for k, _ in node.value if k.tag != _MERGE)
        try:
            loader.flatten_mapping(node)  # resolve `<<: *anchor` merge keys; merged pairs come first
        except yaml.MarkedYAMLError as e:
            errors.add(_mark_pos(e.problem_mark), f"YAML error: {e.problem}")
        node.merged = len(node.value) - explicit
    merged = node.merged
    out = YMap(pos=_pos(node))
    written: set = set()  # keys written in this mapping itself (merged ones may be overridden)
    for i, (knode, vnode) in enumerate(node.value):
        key = _convert(knode, loader, errors)
        if isinstance(key, (dict, list)):
            errors.add(_pos(knode), "mapping keys must be plain values")
            continue
        if i >= merged:
            if key in written:
                first = out.key_pos[key]
                errors.add(_pos(knode), f"duplicate key {bounds.written(key)} (first defined at line {first[0]})")
                continue
            written.add(key)
        out[key] = _convert(vnode, loader, errors)
        out.key_pos[key] = _pos(knode)
        out.val_pos[key] = _pos(vnode)
    return out


_INT = "tag:yaml.org,2002:int"
_MERGE = "tag:yaml.org,2002:merge"
_INTS = yaml.constructor.SafeConstructor()


def _int_fits(text: str) -> bool:
    digits = text.replace("_", "").lstrip("+-")
    if len(digits) > 2 * MAX_INT_DIGITS + 2:  # refuse before converting: huge ints are slow to parse
        return False
    try:
        value = _INTS.construct_yaml_int(ScalarNode(_INT, text))
    except ValueError:
        return False
    return -(2**63) <= value < 2**63


def clip(text: str, most: int = 40) -> str:
    """``text``, or its start and its length when longer than ``most`` characters."""
    return text if len(text) <= most else f"{text[: most - 12]}... ({len(text):,} characters)"
