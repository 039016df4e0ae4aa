"""Checks on a written scorecard.json: why a claim is not measured, and that every reference resolved."""

from __future__ import annotations

import re

# evaluate() writes "<ref> has 1 seed[; <ref> has 1 seed]: the claim needs <n>" when a check resolved
# every reference but has fewer seeds than it asks for; any other reason is data that was missing
SEED_RULE = re.compile(r"(?:[^;]+ has \d+ seeds?; )*[^;]+ has \d+ seeds?: the claim needs (\d+)")
NOT_MEASURED = "not measured"


def seed_rule(reason: str, needs: int) -> bool:
    """True when ``reason`` is only the seed rule asking for ``needs`` seeds."""
    m = SEED_RULE.fullmatch(reason)
    return bool(m) and int(m.group(1)) == needs


# a cliff/flat check whose easy end scored below ``base_at_least`` resolved every reference and read
# the values; it declines to judge the curve's shape (checks.py), which is a result of the run
# "base below the floor 10 (seed 2: base 9.3): ..." (recordings before 2026-12-03) or "base below the
# floor (seed 2: base 9.3 (below the floor 10)): ..." (since)
FLOOR_RULE = re.compile(r"base below the floor( [^ ]+)? \(.*\): the model did not learn the easy case.*")


def unresolved(card: dict, needs: int, floors: bool = False) -> list[str]:
    """Every check or architecture cell that is not measured for another reason than the seed rule
    (and, with ``floors``, than a curve whose easy end is below its floor: a measured run's result)."""
    problems = []
    for claim in card["claims"]:
        for check in claim["checks"]:
            if floors and FLOOR_RULE.fullmatch(check["reason"]):
                continue
            if check["verdict"] == NOT_MEASURED and not seed_rule(check["reason"], needs):
                problems.append(f"claim {claim['id']} [{check['check']}]: {check['reason']}")
    for arch, row in card["architectures"].items():
        for b, cell in row.items():
            if floors and FLOOR_RULE.fullmatch(cell.get("reason", "")):
                continue
            if cell.get("verdict") == NOT_MEASURED and not seed_rule(cell.get("reason", ""), needs):
                problems.append(f"architecture {arch} {b}: {cell.get('reason')}")
    return problems


def references(check: dict) -> list[str]:
    """The measurement references a claim's check compares (constants and ${...} left out)."""
    refs = []
    for key in ("value", "a", "b", "base", "than", "to", "low", "high", "values", "minus", "y"):
        for v in check.get(key) if isinstance(check.get(key), list) else [check.get(key)]:
            if isinstance(v, str) and "${" not in v and not _number(v):
                refs.append(v.strip())
    return refs


def unmeasured_references(card: dict, expect: list[dict]) -> list[str]:
    """References of the pipeline's ``expect:`` claims that the scorecard shows no measured value for."""
    claims = {str(c["id"]): c for c in card["claims"]}
    missing = []
    for spec in expect:
        measured = claims[str(spec["id"])]["measured"]
        for check in spec.get("checks") or [spec]:
            missing += [f"claim {spec['id']}: {ref}" for ref in references(check) if ref not in measured]
    return missing


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
