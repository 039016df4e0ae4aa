"""The scorecard as a run's description (MLflow's note): its headline and verdicts, title and lead table, short
enough that the run page's side column stays on screen; the rest is a link to the full scorecard."""

from __future__ import annotations

import re

from components.report.markdown import LEAD

# the engine points ``artifacts/<path>`` at the parent run's artifact page (flows.track.note)
FULL = (
    "Each claim's sentence, evidence, settings and runs: [scorecard.html](artifacts/scorecard.html) "
    "(with the plots) or [scorecard.md](artifacts/scorecard.md), among this run's artifacts."
)
_ANCHOR = re.compile(r"\[([^\]]*)\]\(#[^)]*\)")  # a link to a heading the note does not carry


def summary(markdown: str, most: int = 7_000) -> str:
    """The headline with each claim's verdict, the title (bold, not a heading) and the lead table of a
    scorecard.md (its links to claims further down made plain text), then a link to the full scorecard;
    within ``most`` characters."""
    head, *sections = markdown.split("\n## ")
    paragraphs = head.strip().split("\n\n")
    if paragraphs[0].startswith("# ") and len(paragraphs) > 1:
        # MLflow shows a long note collapsed to its first three lines: the headline and every claim's
        # verdict go first; the title follows as a bold line (the run page's own title names the run)
        title = paragraphs.pop(0)[2:]
        paragraphs.insert(1, f"**{title}**")
    out = "\n\n".join(paragraphs) + "\n"
    lead = next((s for s in sections if ("## " + s).startswith(LEAD)), None)
    if lead is not None:
        table = [line for line in lead.splitlines() if line.startswith("|")]
        block = "\n" + LEAD + "\n\n" + "\n".join(_ANCHOR.sub(r"\1", line) for line in table) + "\n"
        if len(out) + len(block) + len(FULL) < most:
            out += block
    return out + "\n" + FULL + "\n"
