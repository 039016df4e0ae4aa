"""The reference grammar: ``${params.x}``, ``${matrix.x}`` and ``${step.output}``. Nothing else."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REF = re.compile(r"\$\{([^}]*)\}")
_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Token:
    """One reference inside a string."""

    ns: str  # "params", "matrix" or a step id
    name: str  # param, axis or output name
    start: int  # offset in the string (for the column)
    text: str


def find(value: str) -> tuple[list[Token], list[tuple[int, str]]]:
    """Return the references in ``value`` and (offset, message) for malformed ones."""
    tokens, bad = [], []
    for m in REF.finditer(value):
        inner = m.group(1).strip()
        parts = inner.split(".")
        if len(parts) != 2 or not all(_PART.match(p) for p in parts):
            bad.append(
                (
                    m.start(),
                    f"malformed reference {m.group(0)!r}: write ${{params.NAME}}, ${{matrix.AXIS}} or ${{STEP.OUTPUT}}",
                )
            )
            continue
        tokens.append(Token(parts[0], parts[1], m.start(), m.group(0)))
    return tokens, bad


def whole(value: str, tokens: list[Token]) -> bool:
    """True when the string is exactly one reference (its value keeps its type)."""
    return len(tokens) == 1 and value.strip() == tokens[0].text


@dataclass
class Ref:
    """A step-output reference resolved to producer instances.

    ``sources`` maps a label to an instance id; a label of ``None`` means a single value,
    otherwise the consumer receives a dict keyed by the labels (the producer's remaining axes).
    """

    step: str
    output: str
    sources: dict[str | None, str] = field(default_factory=dict)

    def resolve(self, outputs: dict[str, dict]):
        """Pick the values out of the producers' outputs."""
        if None in self.sources:
            return outputs[self.sources[None]][self.output]
        return {label: outputs[iid][self.output] for label, iid in self.sources.items()}
