"""Judge claims (``expect:`` entries) and fill the per-architecture scorecard from measurements."""
from __future__ import annotations

import math
from typing import Any

from components.registry import suggest
from components.report.checks import DEVICE, FAILS, HOLDS, NOT_MEASURED, evaluate
from components.report.refs import Resolver, json_number
from components.report.vocabulary import ScorecardError, validate_check

BOTTLENECKS = ("B1", "B2", "B3", "B4")
CELL_KEYS = {"value", "label", "check"}


def _accelerator(device: str) -> str:
    return "gpu" if device.startswith("cuda") or device == "gpu" else device


def combine(verdicts: list[str]) -> str:
    """One verdict for a claim: any failed check fails it, then any unmeasured one leaves it open."""
    for v in (FAILS, NOT_MEASURED):
        if v in verdicts:
            return v
    return HOLDS


def judge(claim: dict[str, Any], resolver: Resolver, *, device: str, min_seeds: int,
          spread_factor: float) -> dict[str, Any]:
    """Evaluate a validated claim; return its scorecard entry."""
    over = claim.get("over") or "seed"
    seeds = claim.get("min_seeds") or min_seeds
    results = [evaluate(c, resolver, over=over, min_seeds=seeds, spread_factor=spread_factor)
               for c in claim["checks"]]
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
        reason = (f"the claim is about {wanted}; measured on {device}, where the checks say "
                  f"'{verdict}': {reason}")
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
        "checks": [{"check": c["check"], "expected": r.expected, "verdict": r.verdict, "reason": r.reason}
                   for c, r in zip(claim["checks"], results)],
    }


def validate_architectures(architectures: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Check the ``architectures:`` mapping; return each cell as a dict with 'value' (and a check)."""
    if not isinstance(architectures, dict):
        raise ScorecardError(f"architectures: must map an architecture name to its B1-B4 cells, "
                             f"got {type(architectures).__name__}")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for arch, cells in architectures.items():
        where = f"architectures.{arch}"
        if not isinstance(cells, dict):
            raise ScorecardError(f"{where}: map B1-B4 to a reference or a check, got {cells!r}")
        out[str(arch)] = {}
        for col, cell in cells.items():
            if col not in BOTTLENECKS:
                raise ScorecardError(f"{where}: unknown column {col!r}{suggest(str(col), BOTTLENECKS)}; "
                                     f"columns are {', '.join(BOTTLENECKS)}")
            out[str(arch)][col] = _cell(cell, f"{where}.{col}")
    return out


def _cell(cell: Any, where: str) -> dict[str, Any]:
    if isinstance(cell, str) and cell.strip():
        return {"value": cell.strip(), "label": None, "check": None}
    if not isinstance(cell, dict):
        raise ScorecardError(f"{where}: a cell is a reference ('step.key') or a mapping with 'value', "
                             f"got {cell!r}")
    if "check" in cell:
        label = cell.get("label")
        spec = validate_check({k: v for k, v in cell.items() if k != "label"}, where)
        shown = spec.get("value") if spec.get("value") is not None else spec.get("a")
        if shown is None:
            raise ScorecardError(f"{where}: a cell's check needs 'value' or 'a' (the number shown)")
        return {"value": shown, "label": label, "check": spec}
    unknown = [k for k in cell if k not in CELL_KEYS]
    if unknown:
        raise ScorecardError(f"{where}: unknown key {unknown[0]!r}{suggest(str(unknown[0]), CELL_KEYS)}")
    if not isinstance(cell.get("value"), str):
        raise ScorecardError(f"{where}: a cell needs 'value: <reference>'")
    return {"value": cell["value"], "label": cell.get("label"), "check": None}


def fill(cells: dict[str, dict[str, Any]], resolver: Resolver, *, min_seeds: int,
         spread_factor: float) -> dict[str, Any]:
    """Measure one architecture's row: per bottleneck the value, its seeds and, if checked, a verdict."""
    row: dict[str, Any] = {}
    for col in BOTTLENECKS:
        if col not in cells:
            continue
        cell = cells[col]
        sample = resolver.resolve(cell["value"])
        finite = [v for v in sample.values.values() if math.isfinite(v)]
        entry = {
            "ref": cell["value"],
            "label": cell["label"],
            "measured": sample.shown(),
            "mean": json_number(sum(finite) / len(finite)) if finite and sample.ok else None,
            "verdict": None if sample.ok else NOT_MEASURED,
            "reason": sample.missing or "",
            "run_id": sample.run_ids,
        }
        if sample.ok and finite and len(finite) < len(sample.values):
            entry["reason"] = f"{len(sample.values) - len(finite)} of {len(sample.values)} seeds diverged"
        if sample.ok and not finite:
            entry["mean"] = json_number(math.nan)
            entry["reason"] = "every seed diverged"
        if cell["check"] is not None:
            r = evaluate(cell["check"], resolver, min_seeds=min_seeds, spread_factor=spread_factor)
            entry.update(verdict=r.verdict, reason=r.reason, expected=r.expected,
                         run_id=sorted(set(entry["run_id"]) | set(r.run_ids)))
        row[col] = entry
    return row


__all__ = ["BOTTLENECKS", "combine", "fill", "judge", "validate_architectures"]
