"""Render the verdict tables in docs/results.md from recorded scorecard.json files: each is what a run measured.

    python benchmarks/verdict_table.py                       # rewrite docs/results.md from docs/scorecard-quick.json
    python benchmarks/verdict_table.py --record PATH         # first copy a run's scorecard.json there
    python benchmarks/verdict_table.py --profile standard    # the same for docs/scorecard-standard.json
    python benchmarks/verdict_table.py --check               # exit 1 if docs/results.md differs (every profile)

After `bottlenecks run pipelines/four_bottlenecks.yaml` the run's scorecard.json is in
.bottlenecks/work/scorecard-*/ (and on the MLflow parent run).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.report.text import headline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results.md"


class Table:
    """One profile's recorded scorecard and the docs/results.md block rendered from it."""

    def __init__(self, profile: str, marker: str):
        self.profile, self.recorded = profile, REPO / "docs" / f"scorecard-{profile}.json"
        self.begin = f"<!-- {marker}: generated from docs/scorecard-{profile}.json"
        self.end = f"<!-- {marker}: end -->"
        self.block = re.compile(re.escape(self.begin) + r".*?" + re.escape(self.end), re.S)


TABLES = {"quick": Table("quick", "verdicts"), "standard": Table("standard", "verdicts-standard")}


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def render(card: dict[str, Any], table: Table = TABLES["quick"]) -> str:
    """The generated block: the headline and one row per claim with its verdict and reason."""
    s = card["summary"]
    lines = [
        f"{table.begin} by benchmarks/verdict_table.py; do not edit -->",
        f"**{headline(s)}** ({s['device_independent_holds']} of {s['device_independent']} "
        f"device-independent claims hold; measured on {card['device']}, at least "
        f"{card['min_seeds']} seeds per training claim).",
        "",
        "| # | B | claim | verdict | p (Holm) | why |",
        "|---|---|---|---|---|---|",
    ]
    for c in card["claims"]:
        verdict = f"**{c['verdict']}**" if c["verdict"] == "fails" else c["verdict"]
        lines.append(
            f"| {_cell(c['id'])} | {_cell(c.get('bottleneck') or '')} | {_cell(c['claim'])} | "
            f"{verdict} | {_p(c)} | {_cell(c['reason'])} |"
        )
    return "\n".join(lines + [table.end])


def _p(claim: dict[str, Any]) -> str:
    """``0.012 (0.087)``: the claim's p-value and its Holm-adjusted one (a scorecard before the
    t-test rule has neither: ``—``)."""
    p, holm = claim.get("p"), claim.get("p_holm")
    if p is None:
        return "—"
    return f"{p:.2g}" + (f" ({holm:.2g})" if holm is not None else "")


def rewrite(text: str, card: dict[str, Any], table: Table = TABLES["quick"]) -> str:
    """Replace the profile's generated block in ``text`` (docs/results.md) with one rendered from ``card``."""
    if not table.block.search(text):
        raise SystemExit(f"no block starting {table.begin!r} and ending {table.end!r} to replace")
    return table.block.sub(lambda _: render(card, table), text, count=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--profile",
        choices=sorted(TABLES),
        default=None,
        help="the table to record or rewrite (default: quick; --check alone checks every table)",
    )
    ap.add_argument("--record", type=Path, help="a run's scorecard.json to copy to docs/scorecard-<profile>.json first")
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if docs/results.md is stale")
    args = ap.parse_args(argv)
    tables = [TABLES[args.profile or "quick"]] if args.profile or not args.check else list(TABLES.values())
    if args.record:
        shutil.copyfile(args.record, tables[0].recorded)
    text = RESULTS.read_text()
    new = text
    for table in tables:
        new = rewrite(new, json.loads(table.recorded.read_text()), table)
    if args.check:
        if new != text:
            print(
                f"docs/{RESULTS.name} differs from the tables rendered from "
                f"{', '.join(t.recorded.name for t in tables)}: run python benchmarks/verdict_table.py "
                "[--profile standard]",
                file=sys.stderr,
            )
            return 1
        return 0
    RESULTS.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
