"""From a pipeline file to a validated plan: ``build()`` runs the planning phases in order, each in
a private module of this package (which piece lives where: ``flows/plan/__init__.py``)."""

from __future__ import annotations

from pathlib import Path

from flows.language.spec import Pipeline, parse
from flows.language.yamlload import load, read
from flows.plan import size
from flows.plan._calibration import refuse_overlap
from flows.plan._expand import axes, expand
from flows.plan._fresh import mark_fresh, no_match
from flows.plan._keys import assign_keys, spec_hash
from flows.plan._model import Instance, Plan, instance_id, label, suggest
from flows.plan._params import components, type_name
from flows.plan._place import place, place_on
from flows.plan._profiles import SetErrors, apply_overrides, apply_profile, check_params
from flows.plan._refs import INVALID, RESERVED_OUTPUTS, order
from flows.plan._summaries import check_references
from flows.settings import Settings

__all__ = ["Instance", "Plan", "build", "mark_fresh", "no_match", "place_on", "type_name"]
# older homes of these names, kept for importers of this module
__all__ += ["INVALID", "RESERVED_OUTPUTS", "instance_id", "label", "suggest"]


def build(
    path: str | Path,
    *,
    profile: str | None = None,
    sets: list[str] | None = None,
    axes_of: dict[str, dict[str, list]] | None = None,
    keys: bool = True,
) -> Plan:
    """Load, validate and expand ``path``; raise ``PipelineInvalid`` listing every problem.

    ``axes_of``: step id -> matrix axis -> the values it takes instead of the written ones (the seeds
    ``run --until-decided`` adds to the steps that feed an undecided claim); recorded in the plan's
    overrides as ``STEP.matrix.AXIS=[...]``. ``keys=False`` stops after the last check, before the
    cache keys (no error comes from them; `check` has no use for them), leaving every key empty."""
    path = Path(path)
    file = str(path)
    errors = SetErrors(file)
    text = read(path, errors)
    if text is None:
        errors.raise_if_any()
    root = load(text, errors)
    if errors.errors:
        errors.raise_if_any()
    pipe = parse(root, file, errors)
    if pipe is None:
        errors.raise_if_any()
    pipe.text = text
    profile = profile if profile is not None else pipe.default_profile
    return _plan(pipe, errors, profile, list(sets or []), dict(axes_of or {}), keys)


def _plan(pipe: Pipeline, errors: SetErrors, profile: str | None, sets: list[str], axes_of: dict, keys: bool) -> Plan:
    """The phases: profile and ``--set``s, matrix axes, step order, size, components, instances, the
    references of claims, placement, steps asked fresh, cache keys; every error of a phase is collected
    before the next that needs it."""
    params, written = apply_profile(pipe, profile, errors)
    settings = Settings.resolve(written)
    apply_overrides(pipe, sets, params, errors)
    check_params(pipe, params, errors)
    step_axes = {step.id: axes(step, params, errors) for step in pipe.steps.values()}
    for sid, replaced in axes_of.items():
        step_axes[sid] = {a: list(replaced.get(a, v)) for a, v in step_axes[sid].items()}
        sets = sets + [f"{sid}.matrix.{a}={replaced[a]}" for a in step_axes[sid] if a in replaced]
    steps, ref_links = order(pipe, errors)
    size.refuse(pipe, step_axes, ref_links, settings, errors)  # before importing or expanding anything
    comps = components(pipe, errors)
    instances = expand(pipe, steps or list(pipe.steps), step_axes, comps, params, errors)  # on a cycle: file order
    refuse_overlap(pipe, instances, settings, errors)
    errors.raise_if_any()
    warnings: list = []
    check_references(instances, errors, warnings)  # claims against the keys their steps declare
    errors.raise_if_any()
    place(instances, settings, errors)
    errors.raise_if_any()
    for pattern in mark_fresh(instances, settings.fresh, "settings.fresh"):
        errors.add(pipe.settings.vpos("fresh") if "fresh" in pipe.settings else None, no_match(pattern, instances))
    errors.raise_if_any()
    if keys:
        assign_keys(instances, settings)
    return Plan(pipe, profile, params, settings, instances, spec_hash(pipe, profile, sets), sets, warnings)
