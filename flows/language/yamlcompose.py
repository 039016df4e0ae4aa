"""Compose YAML events into nodes within fixed bounds, so a hostile file is refused quickly.

PyYAML's composer recurses once per nesting level and shares aliased nodes, and our converter
copies every alias: a few lines of anchors ("billion laughs") expand to billions of values and a
few thousand ``[`` end in a RecursionError. This composer keeps its own stack and counts, while
composing, the nodes the file will expand to (an alias counts as a copy of its anchor) and the
nesting depth it will reach (through aliases and merge keys too), and stops at the first bound.
"""

from __future__ import annotations

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

MAX_NODES = 20_000  # values after alias expansion; the largest shipped pipeline has 1,773
MAX_DEPTH = 64  # nesting levels (values count as one); shipped pipelines reach 10
MAX_SCALAR = 65_536  # characters in one value

# libyaml scans ~15x faster than pure-Python PyYAML; same events, same positions.
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Refused(Exception):
    """The file exceeds a bound; ``pos`` is 1-based (line, column)."""

    def __init__(self, mark, message: str):
        super().__init__(message)
        self.pos = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.message = message


class _Frame:
    __slots__ = ("node", "key", "height", "produced_at")

    def __init__(self, node, produced_at: int):
        self.node, self.key, self.height, self.produced_at = node, None, 0, produced_at


def compose(loader) -> object | None:
    """Return the single document's root node (None for an empty stream); raise ``Refused`` or
    ``yaml.YAMLError`` (syntax)."""
    loader.get_event()  # StreamStart
    if loader.check_event(StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    root = _Composer(loader).root()
    loader.get_event()  # DocumentEnd
    if not loader.check_event(StreamEndEvent):
        extra = loader.get_event()
        raise Refused(
            extra.start_mark,
            "a second YAML document starts here; a pipeline file holds one (remove the '---' or split the file)",
        )
    return root


class _Composer:
    def __init__(self, loader):
        self.loader = loader
        self.anchors: dict[str, object] = {}
        self.measure: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (expanded size, height)
        self.anchored: set[int] = set()
        self.open: set[int] = set()  # anchored nodes still being composed
        self.produced = 0

    def root(self):
        stack: list[_Frame] = []
        while True:
            event = self.loader.get_event()
            if isinstance(event, (SequenceEndEvent, MappingEndEvent)):
                frame = stack.pop()
                frame.node.end_mark = event.end_mark
                done, height = frame.node, frame.height + 1
                self._finish_anchor(done, self.produced - frame.produced_at, height)
            elif isinstance(event, AliasEvent):
                done, height = self._alias(event, len(stack))
            else:
                self._count(event.start_mark, 1, len(stack) + 1)
                node = self._node(event)
                if isinstance(event, ScalarEvent):
                    done, height = node, 1
                    self._finish_anchor(node, 1, 1)
                else:
                    stack.append(_Frame(node, self.produced - 1))
                    continue
            if not stack:
                return done
            parent = stack[-1]
            parent.height = max(parent.height, height)
            if isinstance(parent.node, SequenceNode):
                parent.node.value.append(done)
            elif parent.key is None:
                parent.key = done
            else:
                parent.node.value.append((parent.key, done))
                parent.key = None

    def _node(self, event):
        anchor = event.anchor
        if anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark.line + 1
            raise Refused(
                event.start_mark,
                f"anchor &{anchor} is defined twice (first at line {first}); give each anchor its own name",
            )
        tag = event.tag
        if isinstance(event, ScalarEvent):
            if len(event.value) > MAX_SCALAR:
                raise Refused(
                    event.start_mark,
                    f"a value of {len(event.value):,} characters is longer than "
                    f"the {MAX_SCALAR:,} allowed; keep long text in a file the "
                    "step reads",
                )
            if tag is None or tag == "!":
                tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        else:
            kind = SequenceNode if isinstance(event, SequenceStartEvent) else MappingNode
            assert isinstance(event, (SequenceStartEvent, MappingStartEvent))
            if tag is None or tag == "!":
                tag = self.loader.resolve(kind, None, event.implicit)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if anchor is not None:
                self.open.add(id(node))
        if anchor is not None:
            self.anchors[anchor] = node
            self.anchored.add(id(node))
        return node

    def _alias(self, event, depth: int):
        node = self.anchors.get(event.anchor)
        if node is None:
            raise Refused(
                event.start_mark,
                f"alias *{event.anchor} names no anchor defined before it (define it first with &{event.anchor})",
            )
        if id(node) in self.open:
            raise Refused(
                event.start_mark,
                f"alias *{event.anchor} is used inside its own anchor; recursive structures are not allowed",
            )
        size, height = self.measure[id(node)]
        self._count(event.start_mark, size, depth + height, alias=event.anchor)
        return node, height

    def _finish_anchor(self, node, size: int, height: int) -> None:
        if id(node) in self.anchored:  # only a node an alias may name needs its measure kept
            self.measure[id(node)] = (size, height)
            self.open.discard(id(node))

    def _count(self, mark, size: int, depth: int, alias: str | None = None) -> None:
        self.produced += size
        via = f" (alias *{alias} adds a copy of {size:,} values)" if alias else ""
        if self.produced > MAX_NODES:
            raise Refused(
                mark,
                f"the file expands to more than {MAX_NODES:,} YAML values{via}; "
                "anchors and aliases count once per use. Keep big lists in a data file "
                "the step reads",
            )
        if depth > MAX_DEPTH:
            raise Refused(mark, f"values nest {depth} levels deep here{via}; at most {MAX_DEPTH} are allowed")
