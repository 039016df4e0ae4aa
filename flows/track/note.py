"""The parent run's description (``mlflow.note.content``): what the run's reports show, or what the run did.

MLflow shows the note as Markdown at the top of the run page, so the result reads there first:
the Markdown of every report that declares a ``description`` (``shows=`` on ``@component``), else
the step counts, the profile and any failures.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from flows.track import reports


def run_note(plan, result, interrupted: str | None = None) -> str:
    """Markdown for the parent run of ``result``."""
    described = [reports.markdown(s.value) for s in reports.shown(plan, result, "description")]
    described = [text for text in described if text]
    if described:
        return "\n\n---\n\n".join(text.rstrip() + "\n" for text in described)
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
