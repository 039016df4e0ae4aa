"""The ``report.scorecard`` component: judge the pipeline's claims and write the scorecard."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from components.bounds import Positive, Size
from components.context import Context
from components.registry import component
from components.report import sequential
from components.report.checks import DEVICE, FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, VERDICTS
from components.report.claims import _accelerator, claim_refs, judge, until_decided_command
from components.report.html import to_html
from components.report.markdown import to_markdown
from components.report.note import summary as note_of
from components.report.refs import Resolver, seed_values
from components.report.rows import expand, fill, validate_architectures
from components.report.rules import SPREAD_FACTOR
from components.report.text import COUNT_KEYS, headline
from components.report.vocabulary import validate_expectations
from components.stats import ALPHA, holm

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# claim/<id> metrics: a verdict as a number history can compare (higher is better among the judged)
VERDICT_CODES = {HOLDS: 1.0, INCONCLUSIVE: 0.5, FAILS: 0.0, DEVICE: -1.0, NOT_MEASURED: -2.0}


def _checked(validate):
    """Run ``validate`` when parameters are validated, so `bottlenecks check` reports bad claims."""

    def run(value):
        if value is not None:
            validate(value)
        return value

    return AfterValidator(run)


Expectations = Annotated[list[dict[str, Any]], _checked(validate_expectations)]
Architectures = Annotated[dict[str, dict[str, Any]] | None, _checked(validate_architectures)]
SequentialDesign = Annotated[dict[str, Any] | None, _checked(sequential.validate_design)]


@component(
    "report.scorecard",
    outputs=["scorecard", "summary", "markdown", "html", "headline", "note", "anchored", "figures"],
    promote=True,
    shows={
        "headline": "headline",
        "description": "note",
        "artifact": "anchored",  # Prefect's renderer keeps the claims' explicit ids (docs/scorecard.md)
        "console": ["scorecard", "components.report.console:render"],
        "figures": "figures",
        "verdicts": "scorecard",
    },
    # `check` resolves every claim's and row's reference against the keys the measured steps declare
    references={
        "sources": "measurements",
        "in": ["expect", "architectures"],
        "check": "components.report.references:unresolved",
    },
)
def scorecard(
    ctx: Context,
    *,
    measurements: dict[str, Any],
    expect: Expectations,
    run_ids: dict[str, Any] | None = None,
    architectures: Architectures = None,
    plots: dict[str, Any] | None = None,
    examples: str | None = None,
    title: str = "Scorecard",
    device: str = "",
    min_seeds: Size = 1,
    spread_factor: Positive = SPREAD_FACTOR,
    seeds_command: str = "",
    design: SequentialDesign = None,
) -> dict:
    """Judge each expected claim on the measurements and write scorecard.json, .md and .html.

    Args:
        measurements: source name -> a step's ``summary`` (flat numbers), or, for a matrixed step,
            its instance label -> summary. Claims reference them as ``source[selector].key``.
        expect: the claims, each ``{id, claim, check: <kind>, ...}`` or ``{id, claim, checks: [...]}``
            (the vocabulary is in docs/scorecard.md).
        run_ids: source name -> the step's ``run_id`` (or instance label -> run id), so each verdict
            names the MLflow runs that measured it.
        architectures: architecture -> {B1..B4: reference or checked cell}: the scorecard's rows;
            a row named ``"{arch}"`` is a template repeated for every value of the ``arch`` axis.
        plots: plot name -> PNG path (or instance label -> path) embedded in the HTML.
        examples: a JSON file of one source sentence, its reference and each model's output
            (``report.bleu_by_length``'s ``examples``), shown side by side in both documents.
        title: the report's heading (a pipeline names its own; the default names none).
        device: the device the measurements ran on; empty means this step's device. Claims with
            ``device: gpu`` are ``device-dependent`` elsewhere.
        min_seeds: a check with fewer seeds than this is ``not measured`` (a claim may override).
        spread_factor: accepted from pipelines written for the earlier rule; verdicts no longer use it.
        seeds_command: the command an inconclusive verdict suggests for more seeds, ``{seeds}``
            standing for the list (``bottlenecks run pipelines/p.yaml --set seeds={seeds}``).
        design: a planned group-sequential design, ``{max_seeds: 10, first_look: {source: 3, ...},
            spending: obrien-fleming | pocock, futility: 0.05}`` (``run --until-decided`` fills
            ``first_look`` with each measurement's planned seeds): each claim over those sources is judged
            at the looks the design fixes, its error spent across them, and records a ``sequential``
            block (docs/scorecard.md, "Sequential decisions"). None: one look at the seeds given.
    """
    device = device or ctx.device
    seeds_command = seeds_command or getattr(ctx, "run_command", None) or ""  # the user's own command, else none
    plan = sequential.validate_design(design) if design is not None else None
    claims, rows = _judge(measurements, expect, run_ids, architectures, device, min_seeds, seeds_command, plan)
    pngs, skipped = _plots(plots or {})
    for name, why in skipped.items():
        ctx.log.warning("scorecard: plot %s left out: %s", name, why)
    settings = {"title": title, "device": device, "min_seeds": min_seeds, "spread_factor": spread_factor}
    if plan is not None:
        settings["design"] = plan
    card = _card(ctx, settings, claims, rows, pngs, skipped, examples)
    paths, markdown = _write(ctx, card, pngs)
    _log(ctx, card)
    return _outputs(card, paths, markdown, pngs)


def _judge(measurements, expect, run_ids, architectures, device, min_seeds, seeds_command, design=None):
    """Validate the claims and rows, then judge each claim and fill each row from the measurements."""
    claims_spec = validate_expectations(expect)
    arch_spec = validate_architectures(architectures or {})
    if min_seeds < 1:
        raise ValueError(f"report.scorecard: min_seeds must be >= 1, got {min_seeds}")
    resolver = Resolver(measurements, run_ids)
    if design is None:
        claims = [
            judge(c, resolver, device=device, min_seeds=min_seeds, seeds_command=seeds_command) for c in claims_spec
        ]
    else:
        claims = [judge_sequential(c, resolver, design, device, min_seeds, seeds_command) for c in claims_spec]
    rows = {arch: fill(cells, resolver, min_seeds=min_seeds) for arch, cells in expand(arch_spec, measurements).items()}
    return claims, rows


def claim_sources(claim: dict[str, Any]) -> list[str]:
    """The measurement names a validated claim's references use, in order (``bleu[*].bleu/A`` -> ``bleu``)."""
    found: list[str] = []
    for ref in claim_refs(claim):
        name = re.split(r"[.\[]", ref, maxsplit=1)[0]
        if name not in found:
            found.append(name)
    return found


def judge_sequential(
    claim: dict[str, Any], resolver: Resolver, design: dict[str, Any], device: str, min_seeds: int, seeds_command: str
) -> dict[str, Any]:
    """Judge a claim under a sequential design: at each planned look on the first ``n_k`` seeds of its
    measurements, at the look's level, up to the seeds measured, stopping at the first look that
    decides. A claim none of whose measurements has a planned first look (or that is about another
    device) keeps the single look at the seeds given, with ``sequential: None``."""
    over = claim.get("over") or "seed"
    sources = claim_sources(claim)
    seeded = {
        s: len(seed_values(resolver.measurements[s], over))
        for s in sources
        if s in design["first_look"] and s in resolver.measurements
    }
    seeded = {s: n for s, n in seeded.items() if n}
    wanted = claim.get("device")
    elsewhere = bool(wanted) and _accelerator(wanted) != _accelerator(device)
    seeds = claim.get("min_seeds") or min_seeds
    if not seeded or elsewhere:
        entry = judge(claim, resolver, device=device, min_seeds=min_seeds, seeds_command=seeds_command)
        return entry | {"sequential": None}
    first = max([design["first_look"][s] for s in seeded] + [seeds, 2])  # a t test needs 2 seeds
    plan = sequential.Design.planned(
        first, design["max_seeds"], spending=design["spending"], futility=design["futility"]
    )

    def judge_at(n: int, level: float) -> dict[str, Any]:
        restricted = resolver.first(n, list(seeded), over)
        return judge(claim, restricted, device=device, min_seeds=min_seeds, seeds_command=seeds_command, level=level)

    walked = sequential.walk(judge_at, plan, min(seeded.values()))
    entry = dict(walked.result)
    entry["p_holds"], entry["p_fails"], entry["p"] = walked.p_holds, walked.p_fails, walked.p
    entry["sequential"] = walked.block() | {"sources": sources}
    command = claim.get("seeds_command") or seeds_command
    entry["reason"] = _sequential_reason(entry["reason"], walked, over, command)
    return entry


def _sequential_reason(reason: str, walked: sequential.Walk, over: str, command: str) -> str:
    """The reason with the design's word in place of the fixed design's seed hint."""
    if walked.verdict != INCONCLUSIVE:
        return reason
    base = reason.rpartition(". Inconclusive: ")[0] or reason
    d, k = walked.design, len(walked.taken)
    seen = f"look {k} of {len(d.looks)} ({walked.seeds} {over}s, one-sided level {walked.level:.3g})" if k else ""
    if walked.stopped == sequential.OPEN:
        cmd = until_decided_command(command, d.looks[-1])
        at = f"{seen} did not decide it" if k else f"the design's first look is at {d.looks[0]} {over}s"
        return f"{base}. Open: {at}; the next look is at {walked.next_seeds} {over}s: `{cmd}`"
    if walked.stopped == sequential.FUTILE:
        best = max(p for p in walked.power if p is not None)
        return (
            f"{base}. Futile: after {seen}, at the observed trend {d.looks[-1]} {over}s would decide it with "
            f"probability {best:.0%} (below {d.futility:.0%}); no more {over}s are planned"
        )
    if walked.stopped == sequential.MAX_SEEDS:
        return (
            f"{base}. Undecided at the design's last look, {seen}, with all {walked.spent:.3g} of its error "
            f"spent: the effect is too small for {d.looks[-1]} {over}s"
        )
    return reason


def _card(ctx, settings, claims, rows, pngs, skipped, examples) -> dict[str, Any]:
    """Adjust the claims as one family, count the verdicts and gather what the three documents show."""
    family(claims)
    return {
        **settings,  # title, device, min_seeds, spread_factor (and design, when given)
        "summary": summarise(claims),
        "claims": claims,
        "architectures": rows,
        "plots": sorted(pngs),
        "plots_left_out": skipped,
        "examples": _examples(examples),
        "environment": ctx.environment(),  # where this judgement ran (None without the engine)
        "links": _links(ctx, claims),
    }


def _links(ctx, claims) -> dict[str, str]:
    """Each run id the claims name -> its MLflow page, where the engine knows the UI's address."""
    ids = sorted({r for c in claims for r in c["run_id"]})
    return {r: url for r in ids if (url := ctx.run_link(r))}


def _write(ctx, card, pngs) -> tuple[tuple[Path, Path, Path], str]:
    """Write scorecard.json, .md and .html as artifacts; return their paths and the markdown."""
    json_path, md_path, html_path = ctx.path("scorecard.json"), ctx.path("scorecard.md"), ctx.path("scorecard.html")
    json_path.write_text(json.dumps(card, indent=2, allow_nan=False) + "\n")
    markdown = to_markdown(card)
    md_path.write_text(markdown)
    html_path.write_text(to_html(card, pngs))
    for p in (json_path, md_path, html_path):
        ctx.log_artifact(p)
    return (json_path, md_path, html_path), markdown


def _log(ctx, card) -> None:
    """Log the verdicts as metrics and the judging settings as parameters."""
    ctx.log_metrics(metrics(card["summary"], card["claims"]))
    params = {f"scorecard.{k}": card[k] for k in ("device", "min_seeds", "spread_factor")}
    if card.get("design"):
        params["scorecard.design"] = json.dumps(card["design"], sort_keys=True)
    ctx.log_params(params)


def _outputs(card, paths, markdown, pngs) -> dict[str, Any]:
    """The component's outputs, in its declared order."""
    json_path, md_path, html_path = paths
    summary = card["summary"]
    return {
        "scorecard": str(json_path),
        "summary": summary,
        "markdown": str(md_path),
        "html": str(html_path),
        "headline": headline(summary) + (f" · {summary['open']} open" if "open" in summary else ""),
        "note": note_of(markdown),  # the parent run's description
        "anchored": to_markdown(card, anchored=True),  # the Prefect artifact: text, so not a file on the run
        "figures": pngs,  # the plots its HTML embeds, by name
    }


def family(claims: list[dict[str, Any]]) -> None:
    """Holm's adjustment over the claims judged with a p-value (device-dependent and unmeasured claims
    are not in the family): each claim gets ``p_holm`` and ``familywise`` (its verdict survives the
    family-wise 5% level), so the headline's count carries a stated error rate."""
    judged = {
        i: c["p"]
        for i, c in enumerate(claims)
        if c.get("p") is not None and c["verdict"] in (HOLDS, FAILS, INCONCLUSIVE)
    }
    adjusted = holm({str(i): p for i, p in judged.items()})
    for i, c in enumerate(claims):
        p = adjusted.get(str(i))
        c["p_holm"] = p
        c["familywise"] = p is not None and c["verdict"] in (HOLDS, FAILS) and p <= ALPHA


def summarise(claims: list[dict[str, Any]]) -> dict[str, int]:
    """Count verdicts; device-independent counts leave out claims tied to a device; ``*_familywise``
    count the verdicts that survive Holm's adjustment at family-wise 5%."""
    summary = {"claims": len(claims)} | {COUNT_KEYS[v]: 0 for v in VERDICTS}
    summary |= {"holds_familywise": 0, "fails_familywise": 0}
    for c in claims:
        summary[COUNT_KEYS[c["verdict"]]] += 1
        if c.get("familywise"):
            summary[f"{COUNT_KEYS[c['verdict']]}_familywise"] += 1
    free = [c for c in claims if not c["device"]]
    summary["device_independent"] = len(free)
    summary["device_independent_holds"] = sum(c["verdict"] == HOLDS for c in free)
    if any("sequential" in c for c in claims):  # a sequential design: the claims it plans another look for
        summary["open"] = sum((c.get("sequential") or {}).get("stopped") == sequential.OPEN for c in claims)
    return summary


def metric_name(text: str) -> str:
    """Make ``text`` a valid MLflow metric name part (``[A-Za-z0-9_./-]``)."""
    return re.sub(r"[^A-Za-z0-9_./-]", "_", str(text))


def metrics(summary: dict[str, int], claims: list[dict[str, Any]]) -> dict[str, float]:
    """Stable metric names so nightly runs compare: claims/<count>, claim/<id> and its evidence
    claim/<id>/{margin,lo,hi,p,p_holm}. The architecture matrix's means are not metrics (one bar per
    chart on the parent run): scorecard.json keeps them, and the step runs log what they measured."""
    out: dict[str, float] = {f"claims/{k}": float(v) for k, v in summary.items() if k != "claims"}
    out["claims/total"] = float(summary["claims"])
    for c in claims:
        name = f"claim/{metric_name(c['id'])}"
        out[name] = VERDICT_CODES[c["verdict"]]
        deciding = c["checks"][c["deciding_check"]]["evidence"] if c.get("deciding_check") is not None else {}
        for key, value in (
            ("margin", deciding.get("margin")),
            ("lo", deciding.get("lo")),
            ("hi", deciding.get("hi")),
            ("p", c.get("p")),
            ("p_holm", c.get("p_holm")),
        ):
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[f"{name}/{key}"] = float(value)
    return out


def _examples(path: str | None) -> dict[str, Any]:
    """Read the side-by-side translations (empty when none were given)."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"report.scorecard: examples {path!r} is not a readable JSON file: {e}") from None
    if data and not {"source", "reference", "hyps"} <= set(data):
        raise ValueError(f"report.scorecard: examples {path!r} needs source, reference and hyps; got {sorted(data)}")
    return data


def _plots(plots: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Flatten plot paths (matrixed ones become ``name[label]``); keep readable PNGs only."""
    flat: dict[str, Any] = {}
    for name, value in plots.items():
        if isinstance(value, dict):
            flat.update({f"{name}[{label}]": p for label, p in value.items()})
        else:
            flat[name] = value
    keep, skipped = {}, {}
    for name, path in sorted(flat.items()):
        if not isinstance(path, str) or not Path(path).is_file():
            skipped[name] = f"no file at {path!r}"
        elif Path(path).read_bytes()[:8] != _PNG_MAGIC:
            skipped[name] = f"{path} is not a PNG"
        else:
            keep[name] = path
    return keep, skipped


__all__ = [
    "VERDICT_CODES",
    "claim_sources",
    "judge_sequential",
    "metrics",
    "scorecard",
    "summarise",
    "until_decided_command",
]
