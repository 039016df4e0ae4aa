"""Load YAML with ``safe_load`` semantics, keeping the line and column of every key and value.

Mappings become ``YMap`` (a dict remembering positions), sequences ``YList``. Duplicate keys,
tab indentation and any non-standard tag (``!!python/...``, ``!custom``) are errors.
"""
from __future__ import annotations

import re

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from flows.errors import Collector

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


_TAB_INDENT = re.compile(r"^( *)\t")


def load(text: str, errors: Collector):
    """Parse ``text``; return the root (``YMap``/``YList``/scalar) or None, adding errors."""
    tabs = False
    for i, line in enumerate(text.splitlines(), start=1):
        m = _TAB_INDENT.match(line)
        if m:
            tabs = True
            errors.add((i, len(m.group(1)) + 1), "tab character in indentation; YAML indents with spaces only")
    if tabs:
        return None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or "invalid YAML"
        context = f" ({e.context})" if e.context else ""
        errors.add(_mark_pos(mark), f"YAML syntax error: {problem}{context}")
        return None
    except yaml.YAMLError as e:
        errors.add((1, 1), f"YAML error: {e}")
        return None
    finally:
        loader.dispose()
    if node is None:
        return None
    return _convert(node, loader, errors)


def _convert(node, loader: yaml.SafeLoader, errors: Collector):
    if node.tag not in _SAFE_TAGS:
        errors.add(_pos(node), f"tag {node.tag!r} is not allowed: pipelines use plain YAML values only "
                               "(no !!python/... or custom tags)")
        return None
    if isinstance(node, MappingNode):
        try:
            loader.flatten_mapping(node)  # resolve `<<: *anchor` merge keys
        except yaml.MarkedYAMLError as e:
            errors.add(_mark_pos(e.problem_mark), f"YAML error: {e.problem}")
        out = YMap(pos=_pos(node))
        for knode, vnode in node.value:
            key = _convert(knode, loader, errors)
            if isinstance(key, (dict, list)):
                errors.add(_pos(knode), "mapping keys must be plain values")
                continue
            if key in out:
                first = out.key_pos[key]
                errors.add(_pos(knode), f"duplicate key {key!r} (first defined at line {first[0]})")
                continue
            out[key] = _convert(vnode, loader, errors)
            out.key_pos[key] = _pos(knode)
            out.val_pos[key] = _pos(vnode)
        return out
    if isinstance(node, SequenceNode):
        out = YList(pos=_pos(node))
        for item in node.value:
            out.append(_convert(item, loader, errors))
            out.item_pos.append(_pos(item))
        return out
    assert isinstance(node, ScalarNode)
    try:
        return loader.construct_object(node, deep=True)
    except yaml.MarkedYAMLError as e:
        errors.add(_pos(node), f"invalid value: {e.problem}")
        return None
