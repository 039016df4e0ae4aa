"""Calibration seeds never give a verdict: a step run with a seed the pipeline declares in
``settings.calibration_seeds`` (the seeds its design was chosen on) is refused where the seed is
written, before anything runs."""

from __future__ import annotations

from flows.language.errors import Collector
from flows.language.spec import Pipeline
from flows.plan._model import Instance
from flows.settings import Settings


def refuse_overlap(pipe: Pipeline, instances: dict[str, Instance], settings: Settings, errors: Collector) -> None:
    """One error per step whose runs use a calibration seed (its ``seed`` matrix axis or parameter)."""
    calibration = {s for s in settings.calibration_seeds if isinstance(s, int) and not isinstance(s, bool)}
    if not calibration:
        return
    hit: dict[str, list[int]] = {}
    for inst in instances.values():
        seed = inst.bindings.get("seed", inst.params.get("seed"))
        if isinstance(seed, int) and not isinstance(seed, bool) and seed in calibration:
            hit.setdefault(inst.step.id, []).append(seed)
    for sid, seeds in hit.items():
        step = pipe.steps[sid]
        pos = (
            step.matrix.vpos("seed")
            if "seed" in step.matrix
            else step.with_.vpos("seed")
            if "seed" in step.with_
            else None
        )
        shown = ", ".join(str(s) for s in sorted(set(seeds)))
        errors.add(
            pos,
            f"step {sid!r} runs seed {shown}, declared in settings.calibration_seeds "
            f"({', '.join(str(s) for s in sorted(calibration))}): the seeds this pipeline's design was chosen on "
            "never give a verdict; run fresh seeds (a calibration run clears settings.calibration_seeds "
            "in its own profile)",
        )
