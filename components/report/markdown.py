"""Write the scorecard as Markdown: the verdicts (narrow: claim, verdict, margin, interval), then the
evidence (the claims table, the architecture matrix, settings, runs)."""

from __future__ import annotations

from typing import Any

from components.report.rows import BOTTLENECKS
from components.report.text import MARKS, cell_text, headline, margin_texts, measured_lines

_MARGIN = (
    "Margin: the deciding check's quantity, mean over seeds (past a threshold: how far; `beats`: A - B),"
    " with its 95% interval. The evidence follows."
)


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(card: dict[str, Any]) -> str:
    """Render a scorecard dict (the JSON's content) as a Markdown document."""
    s = card["summary"]
    out = [
        f"# {card['title']}",
        "",
        f"**{headline(s)}** (measured on {card['device']}; {s['device_independent_holds']} of "
        f"{s['device_independent']} device-independent claims hold).",
        "",
    ]
    out += _verdicts(card["claims"])
    out += _claims(card["claims"])
    if card["architectures"]:
        out += _architectures(card["architectures"])
    ex = card.get("examples") or {}
    if ex:
        out += _examples(ex)
    out += _per_claim(card["claims"], card.get("links") or {})
    if card.get("plots"):
        out += ["", "## Plots", "", "Embedded in scorecard.html: " + ", ".join(card["plots"]) + "."]
    return "\n".join(out) + "\n"


def _verdicts(claims: list[dict[str, Any]]) -> list[str]:
    """The first table, narrow enough for a side pane: each claim, its verdict, margin and interval."""
    out = ["## Verdicts", "", "| claim | verdict | margin | 95% interval |", "|---|---|---|---|"]
    for c in claims:
        margin, interval = margin_texts(c)
        verdict = f"{MARKS[c['verdict']]} {c['verdict']}"
        out.append(f"| **{_esc(c['id'])}** {_esc(c['claim'])} | {verdict} | {margin} | {interval} |")
    return out + ["", _MARGIN, ""]


def _claims(claims: list[dict[str, Any]]) -> list[str]:
    """The claims table, a row per claim: the full evidence."""
    out = ["## Claims", "", "| # | B | claim | expected | measured | verdict | why |", "|---|---|---|---|---|---|---|"]
    for c in claims:
        measured = "<br>".join(_esc(line) for line in measured_lines(c["measured"])) or "—"
        out.append(
            f"| {_esc(c['id'])} | {_esc(c.get('bottleneck') or '')} | {_esc(c['claim'])} | "
            f"{_esc(c['expected'])} | {measured} | {MARKS[c['verdict']]} {c['verdict']} | "
            f"{_esc(c['reason'])} |"
        )
    return out


def _architectures(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The architecture x bottleneck matrix, then each row's references."""
    out = [
        "",
        "## Which bottleneck does each architecture remove?",
        "",
        "| architecture | " + " | ".join(BOTTLENECKS) + " |",
        "|---|" + "---|" * len(BOTTLENECKS),
    ]
    for arch, row in rows.items():
        out.append(f"| {_esc(arch)} | " + " | ".join(_esc(cell_text(row.get(b))) for b in BOTTLENECKS) + " |")
    out += [
        "",
        "Cells show the mean over seeds (each seed in brackets); ✓/✗ where the cell is checked. References:",
        "",
    ]
    for arch, row in rows.items():
        refs = "; ".join(
            f"{b}: `{cell['ref']}`" + (f" ({cell['reason']})" if cell["reason"] else "") for b, cell in row.items()
        )
        out.append(f"- **{arch}**: {refs}")
    return out


def _examples(ex: dict[str, Any]) -> list[str]:
    """One source sentence, its reference and each model's output, side by side."""
    out = [
        "",
        f"## One long sentence, every model ({ex.get('words', '?')} source words, {ex.get('split', '')})",
        "",
        "| | text |",
        "|---|---|",
        f"| source | {_esc(ex['source'])} |",
        f"| reference | {_esc(ex['reference'])} |",
    ]
    return out + [f"| {_esc(label)} | {_esc(hyp)} |" for label, hyp in ex["hyps"].items()]


def _per_claim(claims: list[dict[str, Any]], links: dict[str, str]) -> list[str]:
    """The settings and notes claims carry, and each claim's runs (linked to their pages when known)."""
    out = []
    settings = [c for c in claims if c["settings"]]
    if settings:
        out += ["", "## Settings the verdicts depend on", ""]
        out += [f"- **{c['id']}**: {c['settings']}" for c in settings]
    notes = [c for c in claims if c.get("note")]
    if notes:
        out += ["", "## Notes", ""]
        out += [f"- **{c['id']}**: {c['note']}" for c in notes]
    out += ["", "## Runs", ""]
    return out + [f"- **{c['id']}**: {', '.join(_run(r, links) for r in c['run_id']) or '—'}" for c in claims]


def _run(run_id: str, links: dict[str, str]) -> str:
    """A run id as a link to its MLflow page (its first 8 characters shown), or as it is."""
    url = links.get(run_id)
    return f"[{run_id[:8]}]({url})" if url else run_id
