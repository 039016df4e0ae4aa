"""Write the scorecard as Markdown that reads in a 700-pixel pane (MLflow's description and artifact
view, Prefect's markdown artifact): first a narrow table, a row per claim of short cells (its id and
bottleneck linked to the claim further down, verdict, margin, interval, seeds), then each claim's
sentence and evidence as a list, the architecture matrix with short cells, and the rest as lists.
No table holds a sentence: the panes do not wrap table cells, so one long cell widens the whole table.
Every text from the claims is escaped for the renderer (``md``).

Two copies, for what each renderer does with a link to a heading (docs/scorecard.md, "Links"):
``scorecard.md`` (MLflow's artifact preview, GitHub) holds no such link and no raw HTML: MLflow's
preview shows raw HTML as text, gives headings no id, and reads ``#claim-4`` as a page of its own
router ("Page Not Found"), so its lead table names each claim in plain text, in the order of the
headings below. ``anchored=True`` (Prefect's markdown artifact, which keeps raw HTML and its ids)
links each label to an explicit ``<a id="claim-4"></a>`` in the claim's heading."""

from __future__ import annotations

import re
from typing import Any

from components.report.rows import BOTTLENECKS
from components.report.text import (
    MARKS,
    by_verdict,
    code,
    headline,
    margin_texts,
    md,
    md_inline,
    number,
    seeds,
    seeds_used,
    sources,
)

LEAD = "## Verdicts"  # the lead table's section, which the run's description keeps
_MARGIN = (
    "Margin: the deciding check's quantity, mean over seeds (past a threshold: how far; `beats`: A - B), "
    "with its interval (95%, or under a planned design the level of the look that decided it, e.g. 97.9% "
    "at a Pocock first look; exact: compared as measured, no spread); seeds: how many it read. "
    "Each claim's sentence and evidence follow."
)
_SAFE_LABEL = re.compile(r"^[A-Za-z0-9 .·:-]+$")  # a link's text that every renderer shows as written


def to_markdown(card: dict[str, Any], *, anchored: bool = False) -> str:
    """Render a scorecard dict (the JSON's content) as a Markdown document; ``anchored``: each claim
    label links to an explicit id on its claim's heading (for renderers that keep raw HTML ids)."""
    s = card["summary"]
    out = [
        f"# {md(card['title'])}",
        "",
        f"**{headline(s)}**: {md(by_verdict(card['claims']))}.",
        "",
        f"Measured on {md(card['device'])}; {s['device_independent_holds']} of {s['device_independent']} "
        "device-independent claims hold.",
        "",
    ]
    out += verdicts(card["claims"], linked=anchored)
    out += _claims(card["claims"], card.get("links") or {}, anchored=anchored)
    if card["architectures"]:
        out += _architectures(card["architectures"])
    ex = card.get("examples") or {}
    if ex:
        out += _examples(ex)
    if card.get("plots"):
        out += ["", "## Plots", "", "Embedded in scorecard.html: " + ", ".join(md(p) for p in card["plots"]) + "."]
    return "\n".join(out) + "\n"


def anchor(claim_id: Any) -> str:
    """The id of a claim's heading ``Claim <id>``: the explicit one of the anchored copy, and GitHub's
    slug of the heading."""
    slug = re.sub(r"[^\w\- ]", "", f"claim {claim_id}".lower())
    return slug.replace(" ", "-")


def label(claim: dict[str, Any]) -> str:
    """``4 · B2``: the claim's short label in the lead table."""
    b = claim.get("bottleneck") or ""
    return f"{claim['id']} · {b}" if b else str(claim["id"])


def verdicts(claims: list[dict[str, Any]], *, linked: bool = True) -> list[str]:
    """The lead table, narrow enough for a side pane: per claim its label (linked to the claim below
    when ``linked``), verdict, margin, interval and the seeds read."""
    out = [LEAD, "", "| claim | verdict | margin | interval | seeds |", "|---|---|---|---|---|"]
    for c in claims:
        margin, interval = margin_texts(c)
        text = label(c)
        shown = f"[{text}](#{anchor(c['id'])})" if linked and _SAFE_LABEL.match(text) else md(text)
        out.append(f"| {shown} | {MARKS[c['verdict']]} {c['verdict']} | {margin} | {interval} | {seeds_used(c)} |")
    return out + ["", _MARGIN, ""]


def _claims(claims: list[dict[str, Any]], links: dict[str, str], *, anchored: bool = False) -> list[str]:
    """Each claim under its own heading (the lead table's links land there, on the heading's explicit
    id when ``anchored``): the sentence, then its evidence as a list, which wraps in any pane."""
    out = ["## Claims"]
    for c in claims:
        b = f"{md(c['bottleneck'])} · " if c.get("bottleneck") else ""
        target = f'<a id="{anchor(c["id"])}"></a>' if anchored else ""
        verdict = f"**{b}{MARKS[c['verdict']]} {c['verdict']}** {md(c['claim'])}"
        out += ["", f"### {target}Claim {md(c['id'])}", "", verdict, ""]
        out.append(f"- expected: {md(c['expected'])}")
        lines = [f"  - {code(ref)}: {md(seeds(vals))}" for ref, vals in (c.get("measured") or {}).items()]
        out += ["- measured:", *lines] if lines else ["- measured: —"]
        out.append(f"- why: {md_inline(c['reason'])}")
        if c.get("settings"):
            out.append(f"- settings: {md_inline(c['settings'])}")
        if c.get("note"):
            out.append(f"- note: {md_inline(c['note'])}")
        out.append(f"- runs: {_runs(c, links)}")
    return out


def _runs(claim: dict[str, Any], links: dict[str, str]) -> str:
    """The claim's runs, each linked to its MLflow page; where none was recorded, which sources lack one."""
    if claim["run_id"]:
        return ", ".join(_run(r, links) for r in claim["run_id"])
    named = ", ".join(code(s) for s in sources(claim))
    return f"— (no run id was given for {named}: the step's `run_ids`)" if named else "—"


def _run(run_id: str, links: dict[str, str]) -> str:
    """A run id as a link to its MLflow page (its first 8 characters shown), or as it is."""
    url = links.get(run_id)
    return f"[{md(run_id[:8])}]({url})" if url else md(run_id)


def _cell(cell: dict[str, Any] | None) -> str:
    """An architecture cell in a few characters: its verdict mark and mean (the seeds go below)."""
    if not cell:
        return "—"
    if cell.get("mean") is None:
        return "? not measured"
    mark = MARKS.get(cell.get("verdict") or "", "")
    return f"{mark} {number(cell['mean'])}".strip()


def _architectures(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The architecture x bottleneck matrix in short cells, then each row's cells in full."""
    out = [
        "",
        "## Which bottleneck does each architecture remove?",
        "",
        "| architecture | " + " | ".join(BOTTLENECKS) + " |",
        "|---|" + "---|" * len(BOTTLENECKS),
    ]
    for arch, row in rows.items():
        out.append(f"| {md(arch)} | " + " | ".join(_cell(row.get(b)) for b in BOTTLENECKS) + " |")
    out += ["", "Cells show the mean over seeds; ✓/✗ where the cell is checked. Each cell's seeds and reference:", ""]
    for arch, row in rows.items():
        out.append(f"- **{md(arch)}**")
        for b, cell in row.items():
            what = f" {md(cell['label'])}" if cell.get("label") else ""
            vals = f": {md(seeds(cell['measured']))}" if cell.get("measured") else ""
            why = f" ({md_inline(cell['reason'])})" if cell.get("reason") else ""
            out.append(f"  - {b}{what}{vals}, {code(cell['ref'])}{why}")
    return out


def _examples(ex: dict[str, Any]) -> list[str]:
    """One source sentence, its reference and each model's output, one after another."""
    out = [
        "",
        f"## One long sentence, every model ({md(ex.get('words', '?'))} source words, {md(ex.get('split', ''))})",
        "",
        f"- **source**: {md(ex['source'])}",
        f"- **reference**: {md(ex['reference'])}",
    ]
    return out + [f"- **{md(name)}**: {md(hyp)}" for name, hyp in ex["hyps"].items()]
