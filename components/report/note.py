"""The scorecard as a run's description (MLflow's note): its title, headline and main sections."""

from __future__ import annotations

KEEP = ("Verdicts", "Claims", "Which bottleneck", "Settings", "Notes")  # scorecard.md sections worth the space


def summary(markdown: str, most: int = 7_000) -> str:
    """The title, headline and main sections of a scorecard.md, within ``most`` characters."""
    head, *sections = markdown.split("\n## ")
    out = head.rstrip() + "\n"
    for section in sections:
        if not section.startswith(KEEP):
            continue
        block = "\n## " + section.rstrip() + "\n"
        if len(out) + len(block) > most and not section.startswith(("Verdicts", "Claims")):
            break
        out += block
    return out + "\nThe full scorecard (HTML with plots, JSON) is among this run's artifacts.\n"
