"""Judge claims (``expect:`` entries): run their checks, combine the verdicts, apply ``device:``."""

from __future__ import annotations

from typing import Any

from components.report.checks import DEVICE, FAILS, HOLDS, NOT_MEASURED, evaluate
from components.report.refs import Resolver


def _accelerator(device: str) -> str:
    return "gpu" if device.startswith("cuda") or device == "gpu" else device


def combine(verdicts: list[str]) -> str:
    """One verdict for a claim: any failed check fails it, then any unmeasured one leaves it open."""
    for v in (FAILS, NOT_MEASURED):
        if v in verdicts:
            return v
    return HOLDS


def judge(
    claim: dict[str, Any], resolver: Resolver, *, device: str, min_seeds: int, spread_factor: float
) -> dict[str, Any]:
    """Evaluate a validated claim; return its scorecard entry."""
    over = claim.get("over") or "seed"
    seeds = claim.get("min_seeds") or min_seeds
    results = [evaluate(c, resolver, over=over, min_seeds=seeds, spread_factor=spread_factor) for c in claim["checks"]]
    verdict = combine([r.verdict for r in results])
    if len(results) == 1:
        reason = results[0].reason
    else:
        reason = "; ".join(f"[{c['check']}: {r.verdict}] {r.reason}" for c, r in zip(claim["checks"], results))
    measured: dict[str, Any] = {}
    for r in results:
        for k, v in r.measured.items():
            measured.setdefault(k, v)
    wanted = claim.get("device")
    if wanted and _accelerator(wanted) != _accelerator(device):
        reason = f"the claim is about {wanted}; measured on {device}, where the checks say '{verdict}': {reason}"
        verdict = DEVICE
    return {
        "id": claim["id"],
        "claim": claim["claim"].strip(),
        "bottleneck": claim.get("bottleneck"),
        "expected": claim.get("expected") or "; ".join(r.expected for r in results),
        "measured": measured,
        "verdict": verdict,
        "run_id": sorted({rid for r in results for rid in r.run_ids}),
        "reason": reason,
        "settings": str(claim.get("settings") or "").strip(),
        "device": wanted,
        "note": str(claim.get("note") or "").strip(),
        "plots": list(claim.get("plots") or []),
        "checks": [
            {"check": c["check"], "expected": r.expected, "verdict": r.verdict, "reason": r.reason}
            for c, r in zip(claim["checks"], results)
        ],
    }


__all__ = ["combine", "judge"]
