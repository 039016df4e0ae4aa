"""Whether the pipeline changed between two runs, and what changed.

A parent run carries the pipeline's ``spec_hash`` (its file text, profile and ``--set`` values), the
file's text as the artifact ``pipeline/<file>``, its resolved params and the ``profile`` and
``overrides`` tags. Two runs with different hashes ran different pipelines: the difference is a unified
diff of the two texts (difflib), or of their params for runs recorded before the text was kept, with the
profile and overrides when those differ.
"""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path

from flows.ops.history.read import download

TEXT_FOLDER = "pipeline"  # the parent run's artifact folder holding the pipeline file's text


def changed(specs: dict, previous: str, newest: str) -> bool:
    """Whether both runs recorded a spec hash and the two differ."""
    a, b = specs.get(previous), specs.get(newest)
    return bool(a and b and a != b)


def difference(previous: str, newest: str, most: int = 40) -> str:
    """What changed from run ``previous`` to run ``newest``, as lines (at most ``most`` of the diff)."""
    import mlflow

    client = mlflow.MlflowClient()
    runs = [client.get_run(r) for r in (previous, newest)]
    lines = [
        f"{key}: {a or '-'} -> {b or '-'}"
        for key in ("profile", "overrides")
        if (a := runs[0].data.tags.get(key)) != (b := runs[1].data.tags.get(key))
    ]
    texts = [_text(client, r) for r in (previous, newest)]
    if all(t is not None for t in texts):
        diff = list(
            difflib.unified_diff(
                texts[0].splitlines(), texts[1].splitlines(), f"run {previous[:8]}", f"run {newest[:8]}", lineterm=""
            )
        )
    else:
        diff = _params(runs[0].data.params, runs[1].data.params)
    if len(diff) > most:
        diff = diff[:most] + [f"... ({len(diff) - most} more lines)"]
    return "\n".join(lines + diff) or "the spec hash differs (no text or params recorded to compare)"


def _params(a: dict, b: dict) -> list[str]:
    return [f"param {k}: {a.get(k, '-')} -> {b.get(k, '-')}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _text(client, run_id: str) -> str | None:
    """The pipeline file's text kept with the run, or None for a run recorded before it was."""
    try:
        files = [a.path for a in client.list_artifacts(run_id, TEXT_FOLDER) if not a.is_dir]
        if not files:
            return None
        with tempfile.TemporaryDirectory() as tmp:
            return Path(download(client, run_id, files[0], tmp)).read_text()
    except Exception:  # noqa: BLE001  (an unreadable artifact store: fall back to the params)
        return None
