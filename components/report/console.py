"""The scorecard as ``bottlenecks run`` prints it: Rich tables on a terminal, its Markdown (one
claim a line) when the output is piped or redirected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.report.markdown import to_markdown
from components.report.table import render_architectures, render_table


def render(scorecard: str, terminal: bool) -> list[Any]:
    """What to print for the scorecard.json at ``scorecard``: Rich tables, or one Markdown text."""
    card = json.loads(Path(scorecard).read_text())
    if not terminal:
        return [to_markdown(card)]
    return [render_table(card), render_architectures(card)]
