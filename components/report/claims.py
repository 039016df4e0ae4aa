"""Judge claims (``expect:`` entries): run their checks, combine the verdicts, apply ``device:``."""

from __future__ import annotations

from typing import Any

from components.report.checks import DEVICE, FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, evaluate
from components.report.refs import Resolver
from components.report.rules import MOST_SEEDS


def _accelerator(device: str) -> str:
    return "gpu" if device.startswith("cuda") or device == "gpu" else device


def combine(verdicts: list[str]) -> str:
    """One verdict for a claim: any failed check fails it, then any unmeasured one leaves it open,
    then any inconclusive one makes it inconclusive."""
    for v in (FAILS, NOT_MEASURED, INCONCLUSIVE):
        if v in verdicts:
            return v
    return HOLDS


def seeds_hint(results: list, over: str, command: str = "") -> str:
    """For an inconclusive claim: about how many seeds its spread asks for, and the command that adds
    them (``command`` with ``{seeds}`` filled, e.g. ``bottlenecks run p.yaml --set seeds={seeds}``)."""
    unsure = [r for r in results if r.verdict == INCONCLUSIVE]
    needed = [r.evidence.get("seeds_needed") for r in unsure if r.evidence.get("seeds_needed")]
    if needed:
        n = max(needed)
        have = max(int(r.evidence.get("seeds") or 0) for r in unsure)
        if n > MOST_SEEDS:
            return f"the spread over {have} {over}s asks for more than {MOST_SEEDS}: the effect is too small for seeds"
        listed = "[" + ",".join(str(i) for i in range(n)) + "]"
        cmd = command.replace("{seeds}", listed) if command else f"rerun with --set {over}s={listed}"
        return (
            f"the spread over {have} {over}s asks for about {n} {over}s: `{cmd}` "
            f"(the {over}s already run come from the cache)"
        )
    own = [r.evidence for r in unsure if r.evidence.get("seeds", 0) > 1 and r.evidence.get("own_uncertainty")]
    if own:
        return "more seeds will not settle it: the measurement's own uncertainty covers the effect"
    return ""


def judge(
    claim: dict[str, Any],
    resolver: Resolver,
    *,
    device: str,
    min_seeds: int,
    spread_factor: float,
    seeds_command: str = "",
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
    hint = seeds_hint(results, over, seeds_command) if verdict == INCONCLUSIVE else ""
    if hint:
        reason = f"{reason}. Inconclusive: {hint}"
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
            {
                "check": c["check"],
                "expected": r.expected,
                "verdict": r.verdict,
                "reason": r.reason,
                "evidence": r.evidence,
            }
            for c, r in zip(claim["checks"], results)
        ],
    }


__all__ = ["combine", "judge", "seeds_hint"]
