"""Terminal views of a scorecard (rich tables) for the CLI to print at the end of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from components.report.rows import BOTTLENECKS
from components.report.text import MARKS, cell_text, headline, measured_lines

STYLES = {
    "holds": "green",
    "fails": "red",
    "inconclusive": "magenta",
    "device-dependent": "yellow",
    "not measured": "dim",
}


def _load(scorecard: dict[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(scorecard, (str, Path)):
        return json.loads(Path(scorecard).read_text())
    return scorecard


def render_table(scorecard: dict[str, Any] | str | Path, *, width: int = 60) -> Table:
    """Build the claims table from a scorecard (its dict or the path of scorecard.json).

    Args:
        scorecard: the content of ``scorecard.json`` or its path.
        width: the longest measured/why text shown per cell before it is cut with an ellipsis.
    """
    card = _load(scorecard)
    table = Table(title=card.get("title"), caption=headline(card["summary"]), show_lines=False)
    for name, kw in (
        ("#", {"justify": "right"}),
        ("B", {}),
        ("claim", {"ratio": 3}),
        ("verdict", {"no_wrap": True}),
        ("measured", {"ratio": 2}),
        ("why", {"ratio": 2}),
    ):
        table.add_column(name, **kw)
    for c in card["claims"]:
        v = c["verdict"]
        measured = "\n".join(_cut(line, width) for line in measured_lines(c["measured"])[:4])
        table.add_row(
            escape(str(c["id"])),
            escape(c.get("bottleneck") or ""),
            escape(c["claim"]),
            f"[{STYLES[v]}]{MARKS[v]} {v}[/]",
            escape(measured),
            escape(_cut(c["reason"], 2 * width)),
        )
    return table


def render_architectures(scorecard: dict[str, Any] | str | Path) -> Table:
    """Build the per-architecture B1-B4 table from a scorecard."""
    card = _load(scorecard)
    table = Table(title="Which bottleneck does each architecture remove?")
    table.add_column("architecture")
    for b in BOTTLENECKS:
        table.add_column(b)
    for arch, row in card.get("architectures", {}).items():
        cells = []
        for b in BOTTLENECKS:
            cell = row.get(b)
            style = STYLES.get(cell.get("verdict") or "", "") if cell else ""
            text = escape(cell_text(cell))
            cells.append(f"[{style}]{text}[/]" if style else text)
        table.add_row(escape(arch), *cells)
    return table


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
