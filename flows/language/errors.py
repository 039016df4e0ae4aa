"""Errors that point at a place in a pipeline file."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

# what ``str.splitlines`` breaks a line at, and every control character (a terminal acts on ESC,
# BEL, \r... in a file name), written as escapes
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
_ESCAPES = {c: chr(c).encode("unicode_escape").decode() for c in _CONTROLS}


@dataclass(frozen=True)
class Located:
    """One problem at ``file:line:col`` (1-based)."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        """One line, whatever the message quotes (a key or a name written over two lines, a terminal
        escape), its control characters written as escapes."""
        return f"{self.file}:{self.line}:{self.col}: {self.message}".translate(_ESCAPES)


class PipelineInvalid(Exception):
    """A pipeline failed validation; carries every problem found."""

    def __init__(self, errors: list[Located]):
        self.errors = sorted(set(errors), key=lambda e: (e.file, e.line, e.col, e.message))
        super().__init__("\n".join(str(e) for e in self.errors))


MAX_ERRORS = 100  # a file generated wrong can hold thousands; the first hundred show the pattern


class Collector:
    """Gather located errors for one file instead of stopping at the first (up to ``MAX_ERRORS``)."""

    def __init__(self, file: str):
        self.file = file
        self.errors: list[Located] = []

    def add(self, pos: tuple[int, int] | None, message: str) -> None:
        line, col = pos or (1, 1)
        self.errors.append(Located(self.file, line, col, message))
        if len(self.errors) >= MAX_ERRORS:
            self.errors.append(Located(self.file, line, col, f"stopped checking after {MAX_ERRORS} errors"))
            raise PipelineInvalid(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise PipelineInvalid(self.errors)


def kind(value) -> str:
    """A value's kind in the words of YAML, as a message names it: a mapping, a list, a string..."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true or false"
    kinds = ((str, "a string"), (int, "an integer"), (float, "a number"), (date, "a date"), (bytes, "binary data"))
    kinds += ((type(None), "nothing (null)"),)
    return next((name for types, name in kinds if isinstance(value, types)), "a value")
