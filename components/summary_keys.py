"""What a step's ``summary`` will hold, as its component declares it: ``@component(..., summary=[...])``.

A declaration is a list of key patterns, literal data that `bottlenecks check` reads from source
(``components/declared.py``) without importing the component's module:

- ``"rho"``: a key as it is written;
- ``"acc/{checkpoints}"``: one key per value of the parameter ``checkpoints`` as the step instance
  gets it: a list gives each element, a mapping each key, a reference to a matrixed step's output each
  producer instance's label as the step receives it (``lstm``, or ``arch=lstm,seed=0``), a number or
  text itself, null nothing. Each value is written as a metric key part, as ``components.outputs.key``
  writes it (a character outside ``[A-Za-z0-9_.-]`` becomes ``_``). Two placeholders give every pair;
- ``"acc/lag_{checkpoints.data.lag,seq_len}"``: a dotted path follows references: the parameter
  ``data`` of the steps whose outputs ``checkpoints`` reads, then the parameter ``lag`` of the steps
  ``data`` reads (a segment written ``a,b`` takes the first of those parameters the step has);
- ``"count/len_{buckets|bucket_names}"``: a named transform of the parameter's value (``TRANSFORMS``);
- ``"grad/d_*"``: ``*`` stands for any text, where a key depends on something no parameter states.

A placeholder whose value is not known before the step runs (a path another step writes, a parameter
a user's step does not have) counts as ``*``. ``Keys`` holds an instance's expanded keys; the scorecard
resolves claims against them (``components/report/references.py``) before anything runs.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


def bucket_names(edges: list[int]) -> list[str]:
    """Names of the length buckets [e_i, e_{i+1} - 1] and a last open one ``e_k-inf`` (``[1, 10, 20]``:
    ``1-9``, ``10-19``, ``20-inf``), as ``eval.bleu`` and ``probe.capacity`` key them."""
    if not edges or sorted(set(edges)) != list(edges) or edges[0] < 0:
        raise ValueError(f"buckets must be increasing non-negative lengths like [1, 10, 20, 30], got {edges}")
    names = [f"{lo}-{hi - 1}" for lo, hi in zip(edges, edges[1:])]
    return names + [f"{edges[-1]}-inf"]


# the named transforms a placeholder may apply to its parameter's value (``{buckets|bucket_names}``):
# name -> (function of the value giving the key parts, what it gives); kept few, each one documented
TRANSFORMS: dict[str, tuple[Callable[[Any], list[str]], str]] = {
    "bucket_names": (bucket_names, "length-bucket names of a list of edges: [1, 10, 20] gives 1-9, 10-19, 20-inf"),
}

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SEGMENT = rf"{_NAME}(?:,{_NAME})*"
_PLACEHOLDER = re.compile(rf"^(?P<path>{_SEGMENT}(?:\.{_SEGMENT})*)(?:\|(?P<transform>{_NAME}))?$")
_LITERAL = re.compile(r"^[A-Za-z0-9_./*-]*$")  # a metric key's characters (MLflow's rule) and *
_PART = re.compile(r"[^A-Za-z0-9_.\-]")
MAX_KEYS = 20_000  # keys one pattern may expand to; past it the pattern's placeholders count as *


@dataclass(frozen=True)
class Placeholder:
    """One ``{...}`` of a pattern: the path of parameters it reads, each segment the names tried in
    order, and the transform applied to the value, if any."""

    path: tuple[tuple[str, ...], ...]
    transform: str | None
    text: str

    @property
    def parameter(self) -> str:
        """The first name of the first segment: the declaring component's own parameter."""
        return self.path[0][0]


def parse(pattern: str) -> list[str | Placeholder]:
    """Split a pattern into literal text and placeholders; raise ValueError saying what is wrong."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"a summary key pattern is non-empty text, got {pattern!r}")
    parts: list[str | Placeholder] = []
    at = 0
    for m in re.finditer(r"\{([^{}]*)\}", pattern):
        parts.append(pattern[at : m.start()])
        inner = _PLACEHOLDER.match(m.group(1).strip())
        if inner is None:
            raise ValueError(
                f"{pattern!r}: {m.group(0)} is no placeholder; write {{param}}, {{param.param}} "
                "(through references) or {param|transform}"
            )
        transform = inner["transform"]
        if transform is not None and transform not in TRANSFORMS:
            from components.imports import suggest

            raise ValueError(
                f"{pattern!r}: unknown transform {transform!r}{suggest(transform, TRANSFORMS)}; "
                f"transforms: {', '.join(TRANSFORMS)}"
            )
        path = tuple(tuple(seg.split(",")) for seg in inner["path"].split("."))
        parts.append(Placeholder(path, transform, m.group(0)))
        at = m.end()
    parts.append(pattern[at:])
    for text in parts:
        if isinstance(text, str) and not _LITERAL.match(text):
            bad = next(c for c in text if not _LITERAL.match(c))
            raise ValueError(
                f"{pattern!r}: {bad!r} cannot be part of a metric key; keys use letters, digits and _ . / - "
                "(and * for any text)"
            )
    return [p for p in parts if p != ""]


@functools.lru_cache(maxsize=1024)  # a pattern is expanded once a step run that declares it
def _parsed(pattern: str) -> tuple[str | Placeholder, ...]:
    return tuple(parse(pattern))


def key_part(value: Any) -> str:
    """``value`` as one part of a metric key, as ``components.outputs.key`` writes it."""
    return _PART.sub("_", str(value))


def expand(pattern: str, values: Callable[[Placeholder], list[str] | None]) -> list[str]:
    """The keys (and ``*`` patterns) ``pattern`` stands for, given each placeholder's values (None: not
    known before the step runs, counted as ``*``)."""
    choices: list[list[str]] = []
    for part in _parsed(pattern):
        if isinstance(part, str):
            choices.append([part])
            continue
        got = values(part)
        choices.append(["*"] if got is None else list(dict.fromkeys(key_part(v) for v in got)))
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_KEYS:
        choices = [c if len(c) == 1 and "{" not in c[0] else ["*"] for c in choices]
    return ["".join(combo) for combo in itertools.product(*choices)]


def _glob(pattern: str) -> re.Pattern:
    return re.compile("^" + re.escape(pattern).replace(r"\*", "(.*)") + "$")


def _may_overlap(a: str, b: str) -> bool:
    """Whether two ``*`` patterns may match a common key (their fixed ends agree)."""
    a_head, *_, a_tail = a.split("*")
    b_head, *_, b_tail = b.split("*")
    heads = a_head.startswith(b_head) or b_head.startswith(a_head)
    tails = a_tail.endswith(b_tail) or b_tail.endswith(a_tail)
    return heads and tails


class Keys(dict):
    """The keys a step's summary will hold, as declared: each key written out maps to 1.0 (a number, so
    a scorecard's resolver reads it as a measurement), and ``patterns`` holds those with ``*``.
    ``Keys(["*"])`` is a summary of which nothing is known: every key may be in it."""

    def __init__(self, keys: Iterable[str] = ()):
        keys = list(keys)
        super().__init__((k, 1.0) for k in keys if "*" not in k)
        self.patterns: tuple[str, ...] = tuple(dict.fromkeys(k for k in keys if "*" in k))
        self._globs = [_glob(p) for p in self.patterns]

    def has(self, key: str) -> bool:
        """Whether ``key`` (written out) is declared, as itself or by a pattern."""
        return key in self or any(g.match(key) for g in self._globs)

    def matching(self, wildcard: str) -> dict[str, float]:
        """What a key with ``*`` reads here: each declared key it matches, labelled by what ``*``
        matched; ``{"*": 1.0}`` when only a pattern may match it; empty when nothing can."""
        rx = _glob(wildcard)
        found = {",".join(m.groups()): 1.0 for k in sorted(self) if (m := rx.match(k))}
        if not found and any(_may_overlap(wildcard, p) for p in self.patterns):
            found = {"*": 1.0}
        return found

    def names(self) -> list[str]:
        """Every declared key and pattern, for a did-you-mean."""
        return [*self, *self.patterns]

    def __repr__(self) -> str:
        return f"Keys({self.names()!r})"


__all__ = ["MAX_KEYS", "TRANSFORMS", "Keys", "Placeholder", "bucket_names", "expand", "key_part", "parse"]
