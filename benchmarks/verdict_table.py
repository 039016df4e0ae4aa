"""Render the README's verdict table from a recorded scorecard.json, so the table is what a run measured.

    python benchmarks/verdict_table.py                       # rewrite README.md from docs/scorecard-quick.json
    python benchmarks/verdict_table.py --record PATH         # first copy a run's scorecard.json there
    python benchmarks/verdict_table.py --check               # exit 1 if README.md differs

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
RECORDED = REPO / "docs" / "scorecard-quick.json"
README = REPO / "README.md"
BEGIN, END = "<!-- verdicts: generated from docs/scorecard-quick.json", "<!-- verdicts: end -->"
BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def render(card: dict[str, Any]) -> str:
    """The generated block: the headline and one row per claim with its verdict and reason."""
    s = card["summary"]
    lines = [f"{BEGIN} by benchmarks/verdict_table.py; do not edit -->",
             f"**{headline(s)}** ({s['device_independent_holds']} of {s['device_independent']} "
             f"device-independent claims hold; measured on {card['device']}, at least "
             f"{card['min_seeds']} seeds per training claim).", "",
             "| # | B | claim | verdict | why |", "|---|---|---|---|---|"]
    for c in card["claims"]:
        verdict = f"**{c['verdict']}**" if c["verdict"] == "fails" else c["verdict"]
        lines.append(f"| {_cell(c['id'])} | {_cell(c.get('bottleneck') or '')} | {_cell(c['claim'])} | "
                     f"{verdict} | {_cell(c['reason'])} |")
    return "\n".join(lines + [END])


def rewrite(text: str, card: dict[str, Any]) -> str:
    """Replace the generated block in ``text`` (a README) with one rendered from ``card``."""
    if not BLOCK.search(text):
        raise SystemExit(f"no block starting {BEGIN!r} and ending {END!r} to replace")
    return BLOCK.sub(lambda _: render(card), text, count=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, help="a run's scorecard.json to copy to docs/scorecard-quick.json first")
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if README.md is stale")
    args = ap.parse_args(argv)
    if args.record:
        shutil.copyfile(args.record, RECORDED)
    card = json.loads(RECORDED.read_text())
    text = README.read_text()
    new = rewrite(text, card)
    if args.check:
        if new != text:
            print(f"{README.name} differs from the table rendered from {RECORDED.name}: run "
                  "python benchmarks/verdict_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
