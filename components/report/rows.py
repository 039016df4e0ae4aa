"""The architecture scorecard: rows of B1-B4 cells, declared per architecture or by a template.

A row named ``"{arch}"`` is a template: it gets one row for every value the ``arch`` axis takes in
the matrixed sources its cells reference, so adding a model to the pipeline's matrix adds its row.
"""

from __future__ import annotations

import math
import re
from typing import Any

from components.bounds import written
from components.imports import suggest
from components.report.checks import NOT_MEASURED, evaluate
from components.report.refs import Resolver, is_matrixed, json_number, parse_label
from components.report.vocabulary import ScorecardError, Where, validate_check

BOTTLENECKS = ("B1", "B2", "B3", "B4")
CELL_KEYS = {"value", "label", "check"}
TEMPLATE = re.compile(r"^\{(\w+)\}$")


def validate_architectures(architectures: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Check the ``architectures:`` mapping; return each cell as a dict with 'value' (and a check)."""
    if not isinstance(architectures, dict):
        raise ScorecardError(
            Where("architectures", ("architectures",)),
            f"must map an architecture name to its B1-B4 cells, got {written(architectures)}",
        )
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for arch, cells in architectures.items():
        where = Where(f"architectures.{arch}", ("architectures", arch))
        if not isinstance(cells, dict):
            raise ScorecardError(where, f"map B1-B4 to a reference or a check, got {written(cells)}")
        out[str(arch)] = {}
        for col, cell in cells.items():
            if col not in BOTTLENECKS:
                raise ScorecardError(
                    where,
                    f"unknown column {written(col)}{suggest(str(col), BOTTLENECKS)}; "
                    f"columns are {', '.join(BOTTLENECKS)}",
                    key=col,
                )
            out[str(arch)][col] = _cell(cell, where.child(f".{col}", col))
    return out


def _cell(cell: Any, where: Where) -> dict[str, Any]:
    if isinstance(cell, str) and cell.strip():
        return {"value": cell.strip(), "label": None, "check": None}
    if not isinstance(cell, dict):
        raise ScorecardError(
            where, f"a cell is a reference ('step.key') or a mapping with 'value', got {written(cell)}"
        )
    if "check" in cell:
        label, seeds = cell.get("label"), cell.get("min_seeds")
        if seeds is not None and (not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1):
            raise ScorecardError(where, f"min_seeds must be a positive integer, got {written(seeds)}", key="min_seeds")
        spec = validate_check({k: v for k, v in cell.items() if k not in ("label", "min_seeds")}, where)
        shown = spec.get("value") if spec.get("value") is not None else spec.get("a")
        if shown is None:
            raise ScorecardError(where, "a cell's check needs 'value' or 'a' (the number shown)")
        return {"value": shown, "label": label, "check": spec, "min_seeds": seeds}
    unknown = [k for k in cell if k not in CELL_KEYS]
    if unknown:
        raise ScorecardError(
            where, f"unknown key {written(unknown[0])}{suggest(str(unknown[0]), CELL_KEYS)}", key=unknown[0]
        )
    if not isinstance(cell.get("value"), str):
        raise ScorecardError(where, "a cell needs 'value: <reference>'", key="value" if "value" in cell else None)
    return {"value": cell["value"], "label": cell.get("label"), "check": None}


def _mean(finite: list[float]) -> float | None:
    return json_number(sum(finite) / len(finite)) if finite else None


def fill(cells: dict[str, dict[str, Any]], resolver: Resolver, *, min_seeds: int) -> dict[str, Any]:
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
            "mean": _mean(finite) if sample.ok else None,
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
            seeds = cell.get("min_seeds") or min_seeds  # a single measurement (a count) needs one
            r = evaluate(cell["check"], resolver, min_seeds=seeds)
            entry.update(
                verdict=r.verdict,
                reason=r.reason,
                expected=r.expected,
                run_id=sorted(set(entry["run_id"]) | set(r.run_ids)),
            )
            ratios = r.measured.get("ratio") if cell["check"]["check"] in ("flat", "cliff") else None
            if ratios:  # a flat/cliff cell is about value / base: show that ratio, not the raw value
                entry.update(
                    measured=ratios,
                    mean=_mean([v for v in ratios.values() if isinstance(v, (int, float)) and math.isfinite(v)]),
                )
        row[col] = entry
    return row


def expand(rows: dict[str, dict[str, dict[str, Any]]], measurements: dict[str, Any]) -> dict[str, dict]:
    """Replace each template row ``{axis}`` by one row per value of that axis in its sources."""
    out: dict[str, dict] = {}
    for name, cells in rows.items():
        m = TEMPLATE.match(name)
        if not m:
            out[name] = cells
            continue
        placeholder = m.group(0)
        for value in _axis_values(cells, m.group(1), measurements):
            if value in rows or value in out:
                continue  # a row written out by hand wins over the template
            row = {
                col: _substitute(cell, placeholder, value)
                for col, cell in cells.items()
                if _has_instance(cell, placeholder, value, measurements)
            }
            out[value] = row
    return out


def _source(cell: dict[str, Any]) -> str:
    return re.split(r"[.\[]", cell["value"], maxsplit=1)[0]


def _labels(source: Any) -> list[dict[str, str]]:
    if isinstance(source, dict) and isinstance(source.get("summary"), dict):
        source = source["summary"]
    return [parse_label(lab) for lab in source] if is_matrixed(source) else []


def _axis_values(cells: dict, axis: str, measurements: dict) -> list[str]:
    """Values of ``axis`` in the instances of the sources the template's cells reference, in order."""
    seen: list[str] = []
    for cell in cells.values():
        bare = f"[{{{axis}}}]" in cell["value"]  # a single-axis matrix: labels are bare values
        for pairs in _labels(measurements.get(_source(cell))):
            v = pairs.get(axis, pairs.get("") if bare else None)
            if v is not None and v not in seen:
                seen.append(v)
    return seen


def _has_instance(cell: dict, placeholder: str, value: str, measurements: dict) -> bool:
    """A template cell appears in a generated row only where it has a measurement for that row."""
    return Resolver(measurements).resolve(_substitute(cell["value"], placeholder, value)).ok


def _substitute(tree: Any, placeholder: str, value: str) -> Any:
    if isinstance(tree, str):
        return tree.replace(placeholder, value)
    if isinstance(tree, dict):
        return {k: _substitute(v, placeholder, value) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_substitute(v, placeholder, value) for v in tree]
    return tree


__all__ = ["BOTTLENECKS", "expand", "fill", "validate_architectures"]
