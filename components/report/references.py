"""Before anything runs: every reference the scorecard's claims and rows make, resolved against the keys
each measurement's step declares it will write.

``report.scorecard`` declares ``references={"sources": "measurements", "in": ["expect",
"architectures"], "check": "components.report.references:unresolved"}``; `bottlenecks check` expands
the summary keys of the steps behind each measurement (``components.summary_keys``) and calls
:func:`unresolved`, which resolves each reference with the scorecard's own ``Resolver``: a source no
measurement names, a selector no instance matches, a key the step does not write is each an error where
the file writes the reference, with a did-you-mean. A reference to a source whose contents are not
known before it runs (not a step's ``summary``) is left to the run.
"""

from __future__ import annotations

import re
from typing import Any

from components.report.refs import Resolver, to_number
from components.report.rows import validate_architectures
from components.report.vocabulary import KINDS, validate_expectations
from components.summary_keys import Keys

Path = tuple  # a place in the step's parameters: ("expect", 0, "checks", 1, "a")


def unresolved(params: dict[str, Any], measurements: dict[str, Any]) -> list[tuple[Path, str]]:
    """``(path, why)`` for each reference in ``params["expect"]`` and ``params["architectures"]`` that
    would not resolve. ``measurements``: source -> ``Keys`` (a step's declared summary) or label ->
    ``Keys`` (a matrixed step's instances), or None where the source's contents are not known."""
    unknown = {name for name, keys in measurements.items() if keys is None}
    resolver = Resolver({name: Keys(["*"]) if keys is None else keys for name, keys in measurements.items()})
    found = []
    for path, where, ref, over in references(params):
        source = re.split(r"[.\[]", ref, maxsplit=1)[0]
        if source in unknown:
            continue
        template = "{" in ref  # a row template's "{arch}", filled per axis value when the step runs
        if template and ("{" in source or source in measurements):
            continue
        sample = resolver.resolve(f"{source}.x" if template else ref, over)  # a template: its source only
        if not sample.ok:
            found.append((path, f"{where}: reference {ref!r}: {sample.missing}"))
    return found


def references(params: dict[str, Any]) -> list[tuple[Path, str, str, str]]:
    """Every reference of the claims and rows: its path in the parameters, the words that name its
    place (``expect[0] (claim 4) checks[1]``), the reference and the seed axis it is read over."""
    out: list[tuple[Path, str, str, str]] = []
    expect = params.get("expect") or []
    for i, (raw, claim) in enumerate(zip(expect, validate_expectations(expect))):
        inline = "checks" not in raw
        for j, check in enumerate(claim["checks"]):
            path = ("expect", i) if inline else ("expect", i, "checks", j)
            where = f"expect[{i}] (claim {claim['id']})" + ("" if inline else f" checks[{j}]")
            over = check.get("over") or claim.get("over") or "seed"
            out += _of_check(check, path, where, over)
    architectures = params.get("architectures") or {}
    rows = validate_architectures(architectures)
    for (arch, raw_cells), cells in zip(architectures.items(), rows.values()):
        for (col, raw), cell in zip(raw_cells.items(), cells.values()):
            path, where = ("architectures", arch, col), f"architectures.{arch}.{col}"
            if cell["check"] is not None:
                out += _of_check(cell["check"], path, where, cell["check"].get("over") or "seed")
            elif isinstance(raw, dict):
                out.append(((*path, "value"), where, cell["value"], "seed"))
            else:
                out.append((path, where, cell["value"], "seed"))
    return out


def _of_check(check: dict[str, Any], path: Path, where: str, over: str) -> list[tuple[Path, str, str, str]]:
    """The references of one validated check, each with its path (a list's entries by index)."""
    kind = KINDS[check["check"]]
    out = []
    for key in kind.refs:
        if _is_reference(check.get(key)):
            out.append(((*path, key), where, check[key].strip(), over))
    for key in kind.ref_lists:
        for n, ref in enumerate(check.get(key) or []):
            if _is_reference(ref):
                out.append(((*path, key, n), where, ref.strip(), over))
    return out


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and to_number(value) is None


__all__ = ["references", "unresolved"]
