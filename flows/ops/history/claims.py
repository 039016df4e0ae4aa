"""A claim's verdict over time: the verdict a ``claim/<id>`` metric codes, how it moved in the verdict
order, and the reasons the report gave on both sides (its verdicts file).

Codes: holds 1, inconclusive 0.5, fails 0, device-dependent -1, not measured -2. ``holds -> fails`` is
worse beyond the claim's noise (a regression), ``fails -> holds`` better; a move through
``inconclusive`` (or to or from device-dependent and not measured) is a change: an inconclusive verdict
is one whose interval crosses its bound, so it is within the noise.
"""

from __future__ import annotations

import re
from pathlib import Path

from flows.ops.history.read import download
from flows.track import reports

CLAIM_STATS = re.compile(r"(^|/)claim/[^/]+/")  # a claim's margin, interval and p-values: shown, not judged
VERDICTS = {1.0: "holds", 0.5: "inconclusive", 0.0: "fails", -1.0: "device-dependent", -2.0: "not measured"}
ORDER = {"fails": 0, "inconclusive": 1, "holds": 2}


def verdict_name(code: float) -> str:
    """The verdict a ``claim/<id>`` metric codes (runs before ``inconclusive`` existed logged 0 for
    every verdict but holds)."""
    return VERDICTS.get(code, f"{code:g}")


def moved(previous: float, now: float) -> tuple[str, str | None]:
    """(kind, direction) of a verdict's move: ``regression`` / ``improvement`` for holds <-> fails,
    ``change`` otherwise, with ``better`` / ``worse`` where both verdicts are in the order."""
    before, after = verdict_name(previous), verdict_name(now)
    if before in ORDER and after in ORDER:
        direction = "better" if ORDER[after] > ORDER[before] else "worse"
        if {before, after} == {"holds", "fails"}:
            return ("improvement" if direction == "better" else "regression"), direction
        return "change", direction
    return "change", None


def evidence(metric: str, previous_run: str, newest_run: str) -> str:
    """`` (before: <reason>; now: <reason>)`` from the runs' verdicts files, when either has one."""
    claim_id = metric.rsplit("claim/", 1)[-1]
    reasons = [_reason(run, claim_id) for run in (previous_run, newest_run)]
    if not any(reasons):
        return ""
    return f" (before: {reasons[0] or 'no reason recorded'}; now: {reasons[1] or 'no reason recorded'})"


def _reason(run_id: str, claim_id: str, most: int = 400) -> str | None:
    card = _verdicts(run_id)
    for claim in (card or {}).get("claims", []):
        if str(claim.get("id")) == claim_id:
            reason = str(claim.get("reason") or "")
            return reason if len(reason) <= most else reason[: most - 3] + "..."
    return None


def _verdicts(run_id: str) -> dict | None:
    """The verdicts file a parent run names (its report's copy, ``shows={"verdicts": ...}``), or None."""
    import json
    import tempfile

    import mlflow

    try:
        client = mlflow.MlflowClient()
        name = client.get_run(run_id).data.tags.get(reports.VERDICTS_TAG)
        # a run recorded before the tag named its file: any JSON artifact at its root that holds claims
        names = [name] if name else [a.path for a in client.list_artifacts(run_id) if a.path.endswith(".json")]
        with tempfile.TemporaryDirectory() as tmp:
            for candidate in names:
                card = json.loads(Path(download(client, run_id, candidate, tmp)).read_text())
                if isinstance(card, dict) and isinstance(card.get("claims"), list):
                    return card
    except Exception:  # noqa: BLE001  (no artifact, or an unreadable one: no evidence to show)
        return None
    return None
