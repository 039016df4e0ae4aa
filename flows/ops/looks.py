"""The looks of ``run --until-decided`` over a pipeline file, for a caller that runs each one.

Each look's plan is built here, run by the caller (``bottlenecks run`` starts the workers and shows the
steps), judged and grown by ``flows/ops/decide.py``; at the end, the claims left undecided are named
with why, and a stop on the budget gives the command that goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from components import stats
from flows.ops.decide import Decided, continue_command, until_decided
from flows.plan.build import build as build_plan


def run_looks(
    pipeline: Path | str,
    *,
    profile: str | None,
    sets: list[str],
    design: dict,
    run: Callable[[Any, bool], Any],
    say: Callable[[str], None] = lambda _: None,
) -> Decided:
    """Take the looks of ``pipeline`` until its claims are decided, its seeds or budget run out, or a
    step fails; return what they did (the last look's plan and RunResult among it).

    Args:
        pipeline: the pipeline file; its plan with ``sets`` has been built once already.
        profile: the profile each look's plan is built with.
        sets: the ``--set`` overrides of every look (the design's own is added to them).
        design: ``{max_seeds, budget, spending}``, as ``flows.settings.until_decided`` gives it
            (budget in seconds or None; spending defaults to ``pocock``).
        run: ``run(plan, first)`` runs one look and returns its RunResult; ``first`` is true for the
            first look only (``--fresh`` and ``--no-cache`` apply to it; later looks reuse what it ran).
        say: takes each line of progress, and at the end why claims were left undecided.

    Raises:
        NothingToDecide: no step judges claims with a sequential design (raised before anything runs).
        PipelineInvalid: a look's plan was refused (only what the looks add can be: the first build passed).
    """
    looks = 0

    def run_look(plan):
        nonlocal looks
        looks += 1
        return run(plan, looks == 1)

    done = until_decided(
        lambda look_sets, axes_of: build_plan(Path(pipeline), profile=profile, sets=look_sets, axes_of=axes_of),
        run_look,
        file=str(pipeline),
        profile=profile,
        sets=sets,
        max_seeds=design["max_seeds"],
        budget=design["budget"],
        spending=design.get("spending", "pocock"),
        say=say,
    )
    for line in left_undecided(done, str(pipeline), profile, sets, design["max_seeds"]):
        say(line)
    return done


def left_undecided(done: Decided, file: str, profile: str | None, sets: list[str], max_seeds: int) -> list[str]:
    """Each kind of claim left undecided, with why; after a stop on the budget, the command to go on."""
    if not done.left:
        return []
    stopped = {str(c["id"]): (c.get("sequential") or {}).get("stopped") for c in done.card.get("claims", [])}
    reasons = {
        stats.FUTILE: "futile: at the observed effect even the last look would very likely not decide them",
        stats.MAX_SEEDS: f"they reached --max-seeds {max_seeds}",
        stats.OPEN: {
            "budget": "the budget ends here",
            "no_seeds": "their seeds are not whole numbers to count on from",
        }.get(done.why, "no seed could be added"),
    }
    lines = []
    for kind, why in reasons.items():
        ids = [i for i in done.left if stopped.get(i) == kind]
        if ids:
            lines.append(f"{len(ids)} claim(s) still undecided ({', '.join(ids)}): {why}")
    if done.why == "budget":
        lines.append(f"go on where this stopped: {continue_command(file, profile, sets, max_seeds)}")
    return lines


__all__ = ["left_undecided", "run_looks"]
