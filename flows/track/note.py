"""The parent run's description (``mlflow.note.content``): the scorecard, or what the run did.

MLflow shows the note as Markdown at the top of the run page, so the result reads there first:
the scorecard's headline, claims table with verdicts and architecture matrix when a report step
wrote one, else the step counts, the profile and any failures.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

KEEP = ("Claims", "Which bottleneck", "Settings", "Notes")  # scorecard.md sections worth the space


def scorecard_summary(markdown: str, most: int = 7_000) -> str:
    """The title, headline and main sections of a scorecard.md, within ``most`` characters."""
    head, *sections = markdown.split("\n## ")
    out = head.rstrip() + "\n"
    for section in sections:
        if not section.startswith(KEEP):
            continue
        block = "\n## " + section.rstrip() + "\n"
        if len(out) + len(block) > most and not section.startswith("Claims"):
            break
        out += block
    return out + "\nThe full scorecard (HTML with plots, JSON) is among this run's artifacts.\n"


def run_note(plan, result, interrupted: str | None = None) -> str:
    """Markdown for the parent run of ``result``."""
    for outputs in result.outputs.values():
        path = outputs.get("markdown") if isinstance(outputs, dict) else None
        if isinstance(path, str) and path.endswith(".md") and Path(path).is_file():
            return scorecard_summary(Path(path).read_text())
    counts = Counter(result.status.values())
    done = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no step finished"
    state = f"**{interrupted}**" if interrupted else ("all steps finished" if result.ok else "**some steps failed**")
    lines = [
        f"# {plan.name}",
        "",
        f"{state}: {done} of {len(plan.instances)} step runs in {result.seconds:.1f} s.",
        "",
        f"- profile: `{plan.profile or '-'}`",
        f"- pipeline file: `{Path(plan.pipeline.file).name}`",
        f"- spec hash: `{plan.spec_hash}`",
    ]
    if plan.overrides:
        lines.append(f"- overrides: `{' '.join(plan.overrides)}`")
    if plan.pipeline.description:
        lines += ["", plan.pipeline.description]
    if result.errors:
        lines += ["", "## Failed", ""]
        lines += [f"- **{step}**: {message.splitlines()[0][:300]}" for step, message in result.errors.items()]
    return "\n".join(lines) + "\n"
