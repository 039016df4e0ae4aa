"""Write the scorecard as one self-contained HTML page (inline CSS, plots as base64 PNG): the verdicts
first, in a table narrow enough for a side pane, then the evidence.

Its links work in a browser as written. MLflow's artifact preview shows the page in a frame sandboxed
to ``allow-scripts`` (no ``allow-popups``, no ``allow-top-navigation``), loaded from a ``blob:`` URL:
there a link to ``#claim-4`` moves nothing and a run link opens nothing. A short script (``_FRAMED``)
does what the sandbox allows, and only inside a frame: it scrolls to the claim, and opens a run page
in a new tab where the frame may, else copies the page's address and says so beside the link."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

from components.report.rows import BOTTLENECKS
from components.report.text import MARKS, cell_text, headline, margin_texts, measured_lines, seeds_used, sources

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:90em;color:#222}
table{border-collapse:collapse;margin:1em 0;width:100%}
th,td{border:1px solid #ccc;padding:.35em .5em;vertical-align:top;text-align:left;font-size:.9em}
th{background:#f3f3f3} code{font-size:.85em}
table.verdicts{width:auto;max-width:46em} .verdicts td:nth-child(n+2){white-space:nowrap}
.v{font-weight:600;white-space:nowrap;border-radius:.3em;padding:.1em .4em}
.holds{background:#d8f3dc}.fails{background:#ffd6d6}.inconclusive{background:#e7dcff}
.device-dependent{background:#fff3bf}.not-measured{background:#e9ecef}
figure{display:inline-block;margin:1em;max-width:45%} figure img{max-width:100%}
small{color:#666} .said{color:#a33;font-size:.85em}
"""


# inside a frame only (a browser follows the links itself): claim links scroll, run links open a tab or
# copy their address (docs/scorecard.md, "Links")
_FRAMED = """
(function () {
  if (window.top === window) return;
  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[href]');
    if (!a) return;
    var href = a.getAttribute('href');
    if (href.charAt(0) === '#') {
      var to = document.getElementById(decodeURIComponent(href.slice(1)));
      if (to) { e.preventDefault(); to.scrollIntoView(); }
      return;
    }
    if (a.getAttribute('target') !== '_blank') return;
    e.preventDefault();
    var opened = null;
    try { opened = window.open(a.href, '_blank'); } catch (err) {}
    if (opened) { opened.opener = null; return; }
    var box = document.createElement('textarea');
    box.value = a.href; document.body.appendChild(box); box.select();
    var copied = false;
    try { copied = document.execCommand('copy'); } catch (err) {}
    box.remove();
    var said = a.parentNode.querySelector('.said') || document.createElement('span');
    said.className = 'said';
    said.textContent = (copied ? ' address copied: ' : ' ') + 'this preview cannot open pages; paste ' +
      (copied ? 'it' : a.href) + ' in the address bar';
    a.after(said);
  });
})();
"""


def _verdict(v: str | None) -> str:
    if not v:
        return ""
    return f'<span class="v {v.replace(" ", "-")}">{MARKS[v]} {escape(v)}</span>'


def _png(path: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:image/png;base64,{data}"


def to_html(card: dict[str, Any], plots: dict[str, str]) -> str:
    """Render a scorecard dict as HTML; ``plots`` maps a plot name to a PNG file to embed."""
    s = card["summary"]
    h = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{escape(card['title'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(card['title'])}</h1>",
        f"<p><b>{escape(headline(s))}</b> <small>(measured on {escape(card['device'])}; "
        f"{s['device_independent_holds']} of {s['device_independent']} device-independent claims hold)"
        "</small></p>",
    ]
    h += _verdicts(card["claims"])
    h += _claims(card["claims"], card.get("links") or {})
    if card["architectures"]:
        h += _architectures(card["architectures"])
    ex = card.get("examples") or {}
    if ex:
        h += _examples(ex)
    if plots:
        h += _plots(plots)
    h.append(f"<script>{_FRAMED}</script></body></html>")
    return "\n".join(h) + "\n"


def _verdicts(claims: list[dict[str, Any]]) -> list[str]:
    """The first table, narrow enough for a side pane: each claim (linked to its evidence), its
    verdict, margin and interval."""
    h = [
        "<h2>Verdicts</h2><table class='verdicts'>"
        "<tr><th>claim</th><th>verdict</th><th>margin</th><th>interval</th><th>seeds</th></tr>"
    ]
    for c in claims:
        margin, interval = margin_texts(c)
        h.append(
            f"<tr><td><a href='#claim-{escape(c['id'])}'><b>{escape(c['id'])}</b></a> {escape(c['claim'])}</td>"
            f"<td>{_verdict(c['verdict'])}</td><td>{escape(margin)}</td><td>{escape(interval)}</td>"
            f"<td>{escape(seeds_used(c))}</td></tr>"
        )
    h.append(
        "</table><p><small>Margin: the deciding check's quantity, mean over seeds (past a threshold: how far;"
        " <code>beats</code>: A - B), with its interval (95%, or under a planned design the level of the look"
        " that decided it; exact: compared as measured, no spread); seeds: how many it read. The evidence"
        " follows.</small></p>"
    )
    return h


def _claims(claims: list[dict[str, Any]], links: dict[str, str]) -> list[str]:
    """The claims table, a row per claim: the full evidence, runs linked to their MLflow pages."""
    h = [
        "<h2>Claims</h2><table><tr><th>#</th><th>B</th><th>claim</th><th>expected</th>"
        "<th>measured</th><th>verdict</th><th>why</th><th>settings</th><th>runs</th></tr>"
    ]
    for c in claims:
        measured = "<br>".join(f"<code>{escape(line)}</code>" for line in measured_lines(c["measured"]))
        plots = " ".join(f"<a href='#plot-{escape(p)}'>{escape(p)}</a>" for p in c.get("plots") or [])
        h.append(
            f"<tr id='claim-{escape(c['id'])}'><td>{escape(c['id'])}</td>"
            f"<td>{escape(c.get('bottleneck') or '')}</td><td>{escape(c['claim'])} {plots}</td>"
            f"<td>{escape(c['expected'])}</td><td>{measured or '—'}</td><td>{_verdict(c['verdict'])}</td>"
            f"<td>{escape(c['reason'])}{'<br><i>' + escape(c['note']) + '</i>' if c.get('note') else ''}</td>"
            f"<td>{escape(c['settings'])}</td>"
            f"<td><small>{_runs(c, links)}</small></td></tr>"
        )
    h.append("</table>")
    return h


def _runs(claim: dict[str, Any], links: dict[str, str]) -> str:
    """The claim's runs, one a line; where none was recorded, which sources lack one."""
    if claim["run_id"]:
        return "<br>".join(_run(r, links) for r in claim["run_id"])
    named = ", ".join(f"<code>{escape(s)}</code>" for s in sources(claim))
    return f"— (no run id was given for {named}: the step's <code>run_ids</code>)" if named else "—"


def _run(run_id: str, links: dict[str, str]) -> str:
    """A run id as a link to its MLflow page (opened outside the artifact pane), or as it is."""
    url = links.get(run_id)
    if not url:
        return escape(run_id)
    return f"<a href='{escape(url)}' target='_blank' rel='noopener' title='{escape(run_id)}'>{escape(run_id[:8])}</a>"


def _architectures(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The architecture x bottleneck matrix; a cell's title shows its reference and reason."""
    h = [
        "<h2>Which bottleneck does each architecture remove?</h2><table><tr><th>architecture</th>"
        + "".join(f"<th>{b}</th>" for b in BOTTLENECKS)
        + "</tr>"
    ]
    for arch, row in rows.items():
        cells = []
        for b in BOTTLENECKS:
            cell = row.get(b)
            cls = f" class='v {cell['verdict'].replace(' ', '-')}'" if cell and cell.get("verdict") else ""
            tip = f" title='{escape(cell['ref'] + (': ' + cell['reason'] if cell['reason'] else ''))}'" if cell else ""
            cells.append(f"<td><span{cls}{tip}>{escape(cell_text(cell))}</span></td>")
        h.append(f"<tr><th>{escape(arch)}</th>{''.join(cells)}</tr>")
    h.append("</table><p><small>Mean over seeds (each seed in brackets); hover a cell for its measurement.</small></p>")
    return h


def _examples(ex: dict[str, Any]) -> list[str]:
    """One source sentence, its reference and each model's output, side by side."""
    h = [
        f"<h2>One long sentence, every model</h2><p><small>{escape(str(ex.get('words', '?')))} source "
        f"words, {escape(str(ex.get('split', '')))} split</small></p><table>"
        f"<tr><th>source</th><td>{escape(ex['source'])}</td></tr>"
        f"<tr><th>reference</th><td>{escape(ex['reference'])}</td></tr>"
    ]
    h += [f"<tr><th>{escape(label)}</th><td>{escape(hyp)}</td></tr>" for label, hyp in ex["hyps"].items()]
    h.append("</table>")
    return h


def _plots(plots: dict[str, str]) -> list[str]:
    """The plots, embedded, each with an anchor the claims link to."""
    h = ["<h2>Plots</h2>"]
    for name, path in plots.items():
        h.append(
            f"<figure id='plot-{escape(name)}'><img alt='{escape(name)}' src='{_png(path)}'>"
            f"<figcaption>{escape(name)}</figcaption></figure>"
        )
    return h
