"""``run --until-decided``: seeds added look by look to the claims still open, under a planned design.

The verdict report (``flows/plan/seeds.py`` finds it) is given a sequential design: the largest seed
count (``max_seeds``) and each measurement's planned seed count, its first look. It judges every
claim at the looks the design fixes in advance, spending the error across them, and says of each
claim whether it is decided, futile, at its last look, or open with the seeds of its next look. This
driver runs the pipeline, reads the report's verdicts, and runs again with more seeds on only the
steps that feed an open claim (the cache serves every seed already run; none is dropped), until no
claim is open, no seed can be added, or the budget would be passed. The seeds each step reached
are kept in the folder's state, so the next run (a scheduled night) continues where this one
stopped: the looks it already took count in the error spent, because the report re-reads them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components import stats
from flows import home
from flows.plan import seeds as seed_axes


class NothingToDecide(Exception):
    """The pipeline has no verdict report that takes a design."""


@dataclass
class Look:
    """One run of the pipeline at one set of seeds."""

    number: int
    seeds: dict[str, int]  # step id -> seeds it ran (the steps given more than planned)
    open: list[str]  # the claims still open after it
    seconds: float


@dataclass
class Decided:
    """What the looks did, and why they stopped: ``decided``, ``max_seeds``, ``budget``, ``no_seeds``
    (an open claim's seeds cannot be counted on), or ``failed`` (a step failed or a signal stopped it)."""

    looks: list[Look] = field(default_factory=list)
    why: str = ""
    left: list[str] = field(default_factory=list)  # undecided claims at the end (open, futile, at max_seeds)
    result: Any = None  # the last run's RunResult
    plan: Any = None  # the last run's plan
    card: dict = field(default_factory=dict)  # the last verdicts file read


def design_set(found: seed_axes.Seeds, max_seeds: int, spending: str = "pocock") -> str:
    """The ``--set`` that hands the report its design."""
    design = {"max_seeds": max_seeds, "first_look": found.first_look(), "spending": spending}
    return f"{found.report}.{seed_axes.DESIGN_PARAM}={json.dumps(design, sort_keys=True)}"


def undecided(card: dict) -> list[str]:
    """Claims the design left undecided: open, futile, or at their last look without a decision."""
    return [
        str(c["id"])
        for c in card.get("claims", [])
        if (c.get("sequential") or {}).get("stopped") in (stats.OPEN, stats.FUTILE, stats.MAX_SEEDS)
    ]


def open_claims(card: dict) -> list[dict]:
    """The claims whose design plans another look."""
    return [c for c in card.get("claims", []) if (c.get("sequential") or {}).get("stopped") == stats.OPEN]


def next_axes(found: seed_axes.Seeds, card: dict, axes_of: dict) -> tuple[dict, list[str]]:
    """The steps' seeds for the next look: each open claim's measurements at its next look's count,
    never fewer than a step already ran. Also the open claims whose seeds cannot be added."""
    grown = {s: dict(a) for s, a in axes_of.items()}
    stuck = []
    for claim in open_claims(card):
        seq = claim["sequential"]
        n = int(seq.get("next_seeds") or 0)
        axes = [found.axes[s] for s in seq.get("sources", []) if s in found.axes]
        values = [(a, a.more(n)) for a in axes]
        if not n or not axes or any(v is None for _, v in values):
            stuck.append(str(claim["id"]))
            continue
        for axis, more in values:
            for step in axis.steps:
                have = grown.setdefault(step, {}).get(axis.axis, [])
                if len(more) > len(have):
                    grown[step][axis.axis] = more
    return grown, stuck


class State:
    """The seeds each step reached, kept per pipeline file, profile, overrides and design."""

    def __init__(self, file: str, profile: str | None, sets: list[str], design: str):
        key = json.dumps([str(Path(file).resolve()), profile, sets, design])
        name = f"{Path(file).stem}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
        self.path = home.home() / "until_decided" / name

    def load(self) -> dict:
        try:
            return json.loads(self.path.read_text()).get("axes", {})
        except (OSError, ValueError):
            return {}

    def save(self, axes_of: dict, why: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"axes": axes_of, "why": why, "at": time.time()}, indent=1))
        tmp.replace(self.path)


def until_decided(
    build: Callable[[list[str], dict], Any],
    run: Callable[[Any], Any],
    *,
    file: str,
    profile: str | None,
    sets: list[str],
    max_seeds: int,
    budget: float | None,
    spending: str = "pocock",
    say: Callable[[str], None] = lambda _: None,
) -> Decided:
    """Run looks until every claim is decided (or the seeds, the budget or a step runs out).

    ``build(sets, axes_of)`` makes a plan; ``run(plan)`` runs it and returns its RunResult."""
    first = build(sets, {})
    found = seed_axes.find(first)
    if found is None:
        raise NothingToDecide(
            f"{file}: no step judges claims with a sequential design (a component that shows verdicts and takes "
            f"a `{seed_axes.DESIGN_PARAM}` parameter, such as report.scorecard): --until-decided has nothing to decide"
        )
    design = design_set(found, max_seeds, spending)
    state = State(file, profile, sets, design)
    axes_of = state.load()
    out, started, plan = Decided(), time.monotonic(), None
    costs: dict[str, list[float]] = {}  # step id -> seconds of its computed runs, every look
    while True:
        plan = build([*sets, design], axes_of)
        t0 = time.monotonic()
        result = run(plan)
        look = Look(len(out.looks) + 1, _seeds(axes_of), [], time.monotonic() - t0)
        out.looks.append(look)
        out.result, out.plan = result, plan
        for iid, where in result.workers.items():
            if result.status.get(iid) == "done" and where.get("seconds") is not None:
                costs.setdefault(plan.instances[iid].step.id, []).append(float(where["seconds"]))
        if not result.ok:
            out.why = "failed"
            return out
        out.card = _card(result, plan, found)
        look.open = [str(c["id"]) for c in open_claims(out.card)]
        say(_progress(look, out.card))
        out.left = undecided(out.card)
        if not look.open:
            out.why = "decided" if not out.left else "max_seeds"
            state.save(axes_of, out.why)
            return out
        grown, stuck = next_axes(found, out.card, axes_of)
        if grown == axes_of:
            out.why = "no_seeds" if stuck else "max_seeds"
            state.save(axes_of, out.why)
            return out
        if budget is not None:
            spent = time.monotonic() - started
            cost = _estimate(costs, build([*sets, design], grown), plan)
            if spent + cost > budget:
                out.why = "budget"
                say(
                    f"budget: {_dur(spent)} spent of {_dur(budget)}; the next look would take about {_dur(cost)} "
                    f"(estimated from this look), so it was not started"
                )
                state.save(axes_of, out.why)
                return out
        axes_of = grown
        state.save(axes_of, "running")


def _card(result, plan, found: seed_axes.Seeds) -> dict:
    """The verdicts file the report wrote in this run."""
    iid = next(i for i, inst in plan.instances.items() if inst.step.id == found.report)
    path = (result.outputs.get(iid) or {}).get(found.verdicts_output)
    try:
        return json.loads(Path(path).read_text())
    except (TypeError, OSError, ValueError) as e:
        raise RuntimeError(f"step {iid} left no readable verdicts file ({path!r}): {e}") from e


def _seeds(axes_of: dict) -> dict[str, int]:
    return {step: max(len(v) for v in axes.values()) for step, axes in axes_of.items() if axes}


def _estimate(costs: dict[str, list[float]], next_plan, plan) -> float:
    """Seconds the next look would take: each step run it adds at the mean of its step's computed runs
    so far (a step never computed: the mean of all), shared among the plan's workers."""
    every = [s for runs in costs.values() for s in runs]
    overall = sum(every) / len(every) if every else 0.0
    new = [next_plan.instances[i] for i in set(next_plan.instances) - set(plan.instances)]
    total = sum(sum(costs[i.step.id]) / len(costs[i.step.id]) if costs.get(i.step.id) else overall for i in new)
    return total / max(1, next_plan.settings.workers)


def _progress(look: Look, card: dict) -> str:
    """``look 2 (mt, bleu: 6 seeds; 4m10s): 18 of 20 claims decided; still open: 7, 8``."""
    grown = {}
    for step, n in look.seeds.items():
        grown.setdefault(n, []).append(step)
    where = "; ".join(f"{', '.join(steps)}: {n} seeds" for n, steps in sorted(grown.items()))
    claims = card.get("claims", [])
    stopped = [(str(c["id"]), (c.get("sequential") or {}).get("stopped")) for c in claims]
    decided = sum(1 for c in claims if c.get("verdict") in ("holds", "fails"))  # device-dependent: not here
    ended = [i for i, why in stopped if why in (stats.FUTILE, stats.MAX_SEEDS)]
    seeds = f"({where or 'the planned seeds'}; {_dur(look.seconds)})"
    text = f"look {look.number} {seeds}: {decided} of {len(claims)} claims decided"
    text += f"; still open: {', '.join(look.open)}" if look.open else ""
    return text + (f"; undecided at their last look: {', '.join(ended)}" if ended else "")


def _dur(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def continue_command(file: str, profile: str | None, sets: list[str], max_seeds: int) -> str:
    """The command that takes the next looks (the state file makes it start where this one stopped)."""
    parts = ["bottlenecks run", file]
    parts += [f"--profile {profile}"] if profile else []
    parts += [f"--set '{s}'" for s in sets]
    parts += ["--until-decided", f"--max-seeds {max_seeds}"]
    return " ".join(parts)


__all__ = ["Decided", "Look", "NothingToDecide", "continue_command", "design_set", "next_axes", "until_decided"]
