"""One colour per architecture, the same in every figure of a run: a fixed palette keyed by the
architecture's name, its size suffix dropped (``lstm-small`` and ``lstm`` are one colour), unless one
figure draws two sizes of it (then each size has its own).

The architectures the shipped pipelines compare have fixed, distinct places in the palette; any other
name takes a place from a hash of the name (stable from figure to figure), moved to the next free
place where two names in one figure would share it. Matplotlib only ever receives the colour."""

from __future__ import annotations

import re
import zlib
from typing import Iterable

# Tableau's 10, then their darker and lighter pairs: distinct on screen and in grey print
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip
# the architectures of the shipped pipelines, each its own place (B1-B4 in docs/models.md)
KNOWN = (
    "rnn", "lstm", "gru", "transformer", "seq2seq", "seq2seq-reverse", "luong-dot", "bahdanau", "luong-general",
    "transformer-encoder", "mlp", "vit", "cnn", "sutskever",
)  # fmt: skip
_SIZE = re.compile(r"-(?:tiny|small|base|medium|large|big|\d+x\d+)$")
_AFTER = re.compile(r"\s*[(\[].*$")  # ``lstm (3 seeds)``, ``lstm[seed=0]``, ``rnn (rho=0.91)``


def _model(label: str) -> str:
    """``seq2seq-reverse-small (3 seeds)`` -> ``seq2seq-reverse-small``: the model a line is of."""
    name = _AFTER.sub("", str(label)).strip().lower()
    return name.split("=", 1)[-1]  # ``arch=lstm``


def architecture(label: str) -> str:
    """``seq2seq-reverse-small (3 seeds)`` -> ``seq2seq-reverse``: the name a colour is keyed by."""
    return _SIZE.sub("", _model(label))


def _place(name: str) -> int:
    if name in KNOWN:
        return KNOWN.index(name)
    return len(KNOWN) + zlib.crc32(name.encode()) % (len(PALETTE) - len(KNOWN))


def colours(labels: Iterable[str]) -> dict[str, str]:
    """Label -> colour for the lines of one figure: one colour per architecture, fixed for the shipped
    architectures and stable for others, two architectures of one figure never sharing one. Where one
    figure draws several sizes of an architecture (a size sweep), each size is a line of its own colour:
    the first size (by name) keeps the architecture's, the others take the next free places."""
    labels = list(labels)
    sizes: dict[str, set[str]] = {}
    for label in labels:
        sizes.setdefault(architecture(label), set()).add(_model(label))

    def key(label: str) -> str:  # what one colour stands for in this figure
        arch = architecture(label)
        return arch if len(sizes[arch]) == 1 else _model(label)

    taken: dict[str, int] = {}
    order = sorted({key(label) for label in labels}, key=lambda k: (_SIZE.sub("", k) not in KNOWN, _SIZE.sub("", k), k))
    for name in order:
        place = _place(_SIZE.sub("", name))
        while place in taken.values() and len(taken) < len(PALETTE):
            place = (place + 1) % len(PALETTE)
        taken[name] = place
    return {label: PALETTE[taken[key(label)]] for label in labels}


def colour(label: str) -> str:
    """The colour of one architecture's line, alone in its figure."""
    return colours([label])[label]
