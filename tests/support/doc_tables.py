"""Read a Markdown table of the docs as rows, so a test can hold the doc and the code equal."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = REPO / "docs" / "contracts.md"


def _cells(line: str) -> list[str]:
    """A row's cells, split at the pipes that are not escaped (``int \\| None``), without backticks."""
    cells = re.split(r"(?<!\\)\|", line.strip().removeprefix("|").removesuffix("|"))
    return [c.replace("\\|", "|").strip().strip("`").strip() for c in cells]


def table(heading: str, path: Path = CONTRACTS) -> list[dict[str, str]]:
    """The rows of the first table after the line ``heading`` (a whole Markdown heading line), each as
    column header -> cell text without its backticks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if heading not in lines:
        raise AssertionError(f"{path.name} has no heading {heading!r}")
    rows = lines[lines.index(heading) + 1 :]
    start = next(i for i, line in enumerate(rows) if line.startswith("|"))
    body = []
    for line in rows[start:]:
        if not line.startswith("|"):
            break
        body.append(line)
    header, _, *data = body
    names = _cells(header)
    return [dict(zip(names, _cells(line), strict=True)) for line in data]
