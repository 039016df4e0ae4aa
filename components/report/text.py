"""Format scorecard entries as short text shared by the Markdown, HTML and terminal views."""

from __future__ import annotations

import re
from typing import Any

from components.report.refs import to_number
from components.report.rules import fmt

MARKS = {"holds": "✓", "fails": "✗", "inconclusive": "≈", "not measured": "?", "device-dependent": "~"}
COUNT_KEYS = {
    "holds": "holds",
    "fails": "fails",
    "inconclusive": "inconclusive",
    "device-dependent": "device_dependent",
    "not measured": "not_measured",
}


def number(v: Any) -> str:
    """Format a JSON number (or 'nan'/'inf' strings) compactly."""
    n = to_number(v)
    return fmt(n) if n is not None else str(v)


def seeds(values: Any) -> str:
    """``{"0": 0.13, "1": 0.26}`` -> ``0.13, 0.26``; a list series -> ``[a, b, c]``."""
    if isinstance(values, dict):
        return ", ".join(seeds(v) for v in values.values())
    if isinstance(values, list):
        return "[" + ", ".join(number(v) for v in values) + "]"
    return number(values)


def measured_lines(measured: dict[str, Any]) -> list[str]:
    """One line per measured reference: ``ref: v_seed0, v_seed1, ...``."""
    return [f"{ref}: {seeds(vals)}" for ref, vals in measured.items()]


def cell_text(cell: dict[str, Any] | None) -> str:
    """A scorecard cell: mean value, a verdict mark if the cell is checked, and its label."""
    if not cell:
        return "—"
    if cell.get("mean") is None:
        return "? not measured"
    text = number(cell["mean"])
    if len(cell.get("measured") or {}) > 1:
        text += f" ({seeds(cell['measured'])})"
    if cell.get("verdict"):
        text = f"{MARKS.get(cell['verdict'], '')} {text}"
    if cell.get("label"):
        text += f" {cell['label']}"
    return text


def headline(summary: dict[str, Any]) -> str:
    """``13 of 18 claims hold · 2 fail · 1 inconclusive · 1 device-dependent · 1 not measured`` (a
    scorecard written before ``inconclusive`` existed has no such count, and its line none)."""
    unsure = f"{summary['inconclusive']} inconclusive · " if "inconclusive" in summary else ""
    family = ""
    if "holds_familywise" in summary:
        family = f" ({summary['holds_familywise']} at family-wise 5%, Holm)"
    return (
        f"{summary['holds']} of {summary['claims']} claims hold{family} · {summary['fails']} fail · {unsure}"
        f"{summary['device_dependent']} device-dependent · {summary['not_measured']} not measured"
    )


def by_verdict(claims: list[dict[str, Any]]) -> str:
    """``✓ holds 1, 3, 4 · ≈ inconclusive 2 (open), 7 · ~ device-dependent 12``: every claim's id under
    its verdict, in one line that a collapsed description still shows; an inconclusive claim that
    another look may decide says ``(open)``."""
    parts = []
    for verdict, mark in MARKS.items():
        ids = [
            f"{c['id']} (open)" if (c.get("sequential") or {}).get("stopped") == "open" else str(c["id"])
            for c in claims
            if c["verdict"] == verdict
        ]
        if ids:
            parts.append(f"{mark} {verdict} {', '.join(ids)}")
    return " · ".join(parts)


def evidence(claim: dict[str, Any]) -> dict[str, Any]:
    """The deciding check's evidence (``margin``, ``lo``, ``hi``, ...), or {} when no check decided."""
    i = claim.get("deciding_check")
    return claim["checks"][i]["evidence"] if i is not None else {}


EXACT_METHODS = ("exact", "identical")  # evidence compared as it is: no interval to show


def margin_texts(claim: dict[str, Any]) -> tuple[str, str]:
    """``("0.167", "[0.12, 0.21]")``: the deciding check's margin and its 95% interval, "—" where none;
    the interval reads ``exact`` where the check compared its values as they are (an exact claim, or
    values identical in every seed), whose interval is the margin itself."""
    ev = evidence(claim)
    margin, lo, hi = (to_number(ev.get(k)) for k in ("margin", "lo", "hi"))
    if ev.get("method") in EXACT_METHODS or ev.get("interval") == "exact":
        interval = "exact"
    else:
        interval = f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else "—"
    return (fmt(margin) if margin is not None else "—"), interval


def seeds_used(claim: dict[str, Any]) -> str:
    """The number of seeds the deciding check read, "—" where no check decided."""
    n = evidence(claim).get("seeds")
    return str(n) if isinstance(n, int) and not isinstance(n, bool) else "—"


def sources(claim: dict[str, Any]) -> list[str]:
    """The measurement sources a claim's references read (``lag_rnn`` of ``lag_rnn[*].acc``), in order."""
    found: list[str] = []
    for ref in claim.get("measured") or {}:
        if "." in ref or "[" in ref:  # ``ratio``, ``series``, ``exponent`` are derived, not references
            name = re.split(r"[.\[]", ref, maxsplit=1)[0]
            if name and name not in found:
                found.append(name)
    return found


# -- Markdown text: what each renderer shows as written --------------------------------------------------

_SPECIAL = re.compile(r"([\\`*_\[\]|])")
_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # ``<br>``, ``</b>``: read as HTML; ``<= 0.3`` is not
_ENTITY = re.compile(r"&(?=#?\w+;)")  # ``&lt;`` written in the text stays those four characters
_CODE = re.compile(r"`([^`]+)`")


def md(text: Any) -> str:
    """``text`` as Markdown that every renderer shows as written (MLflow's showdown, Prefect's marked,
    GitHub): ``* _ ` [ ] | \\`` backslash-escaped, a ``<`` that would open an HTML tag as ``&lt;``
    (showdown keeps a backslash before ``<``), line breaks as spaces."""
    text = _ENTITY.sub("&amp;", " ".join(str(text).split("\n")))
    return _TAG.sub("&lt;", _SPECIAL.sub(r"\\\1", text))


def code(text: Any) -> str:
    """``text`` as a code span, fenced by more backticks than it holds."""
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_inline(text: Any) -> str:
    """Like ``md``, but a span the text itself puts in backticks (a command in a reason) stays code."""
    text = str(text)
    if text.count("`") % 2:
        return md(text)
    out, last = [], 0
    for m in _CODE.finditer(text):
        out += [md(text[last : m.start()]), code(m.group(1))]
        last = m.end()
    return "".join(out + [md(text[last:])])
