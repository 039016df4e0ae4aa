"""The parent run's description (``mlflow.note.content``): what the run's reports show, or what the run did.

MLflow shows the note as Markdown at the top of the run page, so the result reads there first:
the Markdown of every report that declares a ``description`` (``shows=`` on ``@component``), else
the step counts, the profile and any failures. A report's link to ``artifacts/<path>`` (a file it
promotes onto the parent run) becomes that file's page in the MLflow UI.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from flows.track import links, reports

_ARTIFACT_LINK = re.compile(r"\[([^\]]*)\]\(artifacts/([^)\s]+)\)")


def run_note(plan, result, interrupted: str | None = None, experiment_id: str | None = None) -> str:
    """Markdown for the parent run of ``result`` (in experiment ``experiment_id``, which its links need)."""
    described = [reports.markdown(s.value) for s in reports.shown(plan, result, "description")]
    described = [text for text in described if text]
    if described:
        text = "\n\n---\n\n".join(text.rstrip() + "\n" for text in described)
        return artifact_links(text, experiment_id, result.parent_run_id)
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


def artifact_links(markdown: str, experiment_id: str | None, run_id: str | None) -> str:
    """Point each ``[text](artifacts/<path>)`` at the run's artifact page for ``<path>`` in the MLflow
    UI (a relative link would resolve against the UI's root, not the run); without the run's
    experiment the link is left as its text."""
    if not experiment_id or not run_id:
        return _ARTIFACT_LINK.sub(r"\1", markdown)
    page, _, query = links.mlflow_run(experiment_id, run_id).partition("?")
    query = "?" + query if query else ""
    return _ARTIFACT_LINK.sub(lambda m: f"[{m.group(1)}]({page}/artifacts/{m.group(2)}{query})", markdown)
