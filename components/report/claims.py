"""Judge claims (``expect:`` entries): run their checks, combine the verdicts, apply ``device:``."""

from __future__ import annotations

import shlex
from typing import Any

from components.report.checks import DEVICE, FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, evaluate
from components.report.refs import Resolver, to_number
from components.report.vocabulary import KINDS
from components.stats import ALPHA, MOST_SEEDS, POWER


def _accelerator(device: str) -> str:
    return "gpu" if device.startswith("cuda") or device == "gpu" else device


def combine(verdicts: list[str], p_fails: list[float | None] | None = None, *, level: float = ALPHA / 2) -> str:
    """One verdict for a claim of ``k`` checks: it fails only when its own p for ``fails``, the smallest
    of its checks' corrected for their number (Bonferroni, ``min(p_fails) * k``), is at most ``level``
    (even if another check is not measured); then any unmeasured check leaves it open; it holds when
    every check holds (an intersection-union test); otherwise it is inconclusive.

    ``p_fails``: each check's p for ``fails`` (None: the check has none, e.g. not measured; a failed
    check without one, a structural failure, counts as 0). Without ``p_fails``, every failed check is
    taken as decided outright (the rule for callers holding verdicts only)."""
    k = len(verdicts)
    if p_fails is None:
        p_fails = [0.0 if v == FAILS else None for v in verdicts]
    ps = [0.0 if p is None and v == FAILS else p for v, p in zip(verdicts, p_fails)]
    known = [p for p in ps if p is not None]
    if known and min(1.0, min(known) * k) <= level:
        return FAILS
    if NOT_MEASURED in verdicts:
        return NOT_MEASURED
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return INCONCLUSIVE


def _p_fails(result) -> float | None:
    """A check's p for ``fails`` (a failed check without one: 0, decided structurally)."""
    p = result.evidence.get("p_fails") if result.evidence else None
    if p is None and result.verdict == FAILS:
        return 0.0
    return p


def claim_p(results: list) -> tuple[float | None, float | None, int | None]:
    """A claim's one-sided p-values from its checks' (None when a check has none: not measured).

    Every check must hold (an intersection-union test): the claim's p for ``holds`` is the largest
    of its checks', valid without correction. It fails when any check fails: the smallest of the
    checks' p for ``fails``, times the number of checks (Bonferroni within the claim). Also returns
    the index of the check that decides the claim (the weakest for holds, the strongest against)."""
    ps = [(r.evidence.get("p_holds"), r.evidence.get("p_fails")) for r in results]
    if not ps or any(h is None or f is None for h, f in ps):
        return None, None, None
    holds = max(h for h, _ in ps)
    fails = min(1.0, min(f for _, f in ps) * len(ps))
    if fails <= holds:
        deciding = min(range(len(ps)), key=lambda i: ps[i][1])
    else:
        deciding = max(range(len(ps)), key=lambda i: ps[i][0])
    return holds, fails, deciding


def until_decided_command(seeds_command: str, max_seeds: int) -> str:
    """The command that takes a design's next looks: the pipeline of ``seeds_command`` (its ``--set``
    of the seed list dropped, other options kept) run ``--until-decided``."""
    try:
        words = shlex.split(seeds_command)
    except ValueError:
        words = []
    if len(words) < 3 or words[:2] != ["bottlenecks", "run"]:  # a report called without the engine
        return f"bottlenecks run PIPELINE.yaml --until-decided --max-seeds {max_seeds}"
    kept, i = [], 0
    while i < len(words):
        w = words[i]
        if w == "--set" and i + 1 < len(words) and "{seeds}" in words[i + 1]:
            i += 2
            continue
        if "{seeds}" not in w:
            kept.append(w)
        i += 1
    return " ".join(shlex.quote(w) for w in kept) + f" --until-decided --max-seeds {max_seeds}"


DEFAULT_MAX_SEEDS = 10  # the design's last look the hint proposes, unless the spread asks for more


def seeds_hint(results: list, over: str, command: str = "") -> str:
    """For an inconclusive claim: about how many seeds its spread asks for, and the command that adds
    them (``command`` with ``{seeds}`` filled, e.g. ``bottlenecks run p.yaml --set seeds={seeds}``)."""
    unsure = [r for r in results if r.verdict == INCONCLUSIVE]
    needed = [r.evidence.get("seeds_needed") for r in unsure if r.evidence.get("seeds_needed")]
    if needed:
        n = max(needed)
        have = max(int(r.evidence.get("seeds") or 0) for r in unsure)
        if n > MOST_SEEDS:
            return f"at the observed effect and spread it needs more than {MOST_SEEDS} {over}s: too small for seeds"
        if have <= 1:  # a single measurement: more seeds, or a measurement that records its own interval
            return f"it needs at least {n} {over}s (or a measurement with its own interval)"
        # more seeds judged again are a second look: the command adds them under a planned design
        cmd = until_decided_command(command, max(n, DEFAULT_MAX_SEEDS))
        return (
            f"at the observed effect and spread over {have} {over}s, about {n} {over}s decide it with "
            f"{POWER:.0%} power; more {over}s are a second look, so add them under a planned design: "
            f"`{cmd}` (the {over}s already run come from the cache)"
        )
    own = [r.evidence for r in unsure if r.evidence.get("seeds", 0) > 1 and r.evidence.get("own_se")]
    if own:
        return "more seeds will not settle it: the measurement's own uncertainty covers the effect"
    return ""


def judge(
    claim: dict[str, Any],
    resolver: Resolver,
    *,
    device: str,
    min_seeds: int,
    seeds_command: str = "",
    level: float = ALPHA / 2,
) -> dict[str, Any]:
    """Evaluate a validated claim; return its scorecard entry. ``level``: the one-sided level each
    check and the claim's verdict are tested at."""
    over = claim.get("over") or "seed"
    seeds = claim.get("min_seeds") or min_seeds
    exact = bool(claim.get("exact"))
    results = [evaluate(c, resolver, over=over, min_seeds=seeds, exact=exact, level=level) for c in claim["checks"]]
    p_each = [_p_fails(r) for r in results]
    verdict = combine([r.verdict for r in results], p_each, level=level)
    if len(results) == 1:
        reason = results[0].reason
    else:
        reason = "; ".join(f"[{c['check']}: {r.verdict}] {r.reason}" for c, r in zip(claim["checks"], results))
    command = claim.get("seeds_command") or seeds_command  # a claim whose seeds come from another param
    hint = seeds_hint(results, over, command) if verdict == INCONCLUSIVE else ""
    failing = [p for r, p in zip(results, p_each) if r.verdict == FAILS and p is not None]
    if verdict == INCONCLUSIVE and failing:
        k = len(results)
        hint = (
            f"a check fails on its own (p_fails = {min(failing):.3g}), but not after the correction over the "
            f"claim's {k} checks ({min(failing):.3g} x {k} = {min(1.0, min(failing) * k):.3g} > {level:g})"
            + (f"; {hint}" if hint else "")
        )
    if hint:
        reason = f"{reason}. Inconclusive: {hint}"
    trained = trainings_read(claim, resolver, over)
    still = {w: r for w, r in trained.items() if r.get("converged") is False}
    if still and claim.get("requires") == "converged" and verdict in (HOLDS, FAILS):
        reason = (
            f"{len(still)} of the {len(trained)} trainings it reads were still improving when they stopped "
            f"(requires: converged), so the checks' '{verdict}' is not a verdict: {still_improving(still)}. "
            f"The checks: {reason}"
        )
        verdict = INCONCLUSIVE
    elif still:
        reason = f"{reason}. Still improving when training stopped: {still_improving(still)}"
    measured: dict[str, Any] = {}
    for r in results:
        for k, v in r.measured.items():
            measured.setdefault(k, v)
    wanted = claim.get("device")
    if wanted and _accelerator(wanted) != _accelerator(device):
        reason = f"the claim is about {wanted}; measured on {device}, where the checks say '{verdict}': {reason}"
        verdict = DEVICE
    p_holds, p_fails, deciding = claim_p(results)
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
        "p": None if p_holds is None else min(1.0, 2 * min(p_holds, p_fails)),
        "p_holds": p_holds,
        "p_fails": p_fails,
        "deciding_check": deciding,
        "trainings": {"read": len(trained), "still_improving": sorted(still), "requires": claim.get("requires")},
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


def claim_refs(claim: dict[str, Any]) -> list[str]:
    """The reference texts of a validated claim's checks, in order (numbers left out)."""
    found: list[str] = []
    for c in claim["checks"]:
        refs = [c.get(k) for k in KINDS[c["check"]].refs]
        refs += [r for k in ("values", "minus", "y") if isinstance(c.get(k), list) for r in c[k]]
        for ref in refs:
            if isinstance(ref, str) and ref.strip() and to_number(ref) is None and ref.strip() not in found:
                found.append(ref.strip())
    return found


def trainings_read(claim: dict[str, Any], resolver: Resolver, over: str = "seed") -> dict[str, dict]:
    """Every training behind the values a claim reads, with its convergence record."""
    out: dict[str, dict] = {}
    for ref in claim_refs(claim):
        out |= resolver.resolve(ref, over).trainings
    return out


def still_improving(still: dict[str, dict], shown: int = 4) -> str:
    """``mt[arch=seq2seq-small,seed=0] (bleu +6.5 over the last 20% of steps), ...``."""
    parts = []
    for where, r in sorted(still.items())[:shown]:
        gain = r.get("late_gain")
        metric = r.get("late_metric") or "headline metric"
        parts.append(f"{where} ({metric} {gain:+.3g} over the last 20% of steps)" if gain is not None else where)
    more = len(still) - shown
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


__all__ = [
    "claim_p",
    "claim_refs",
    "combine",
    "judge",
    "seeds_hint",
    "still_improving",
    "trainings_read",
    "until_decided_command",
]
