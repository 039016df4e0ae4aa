"""Which seed axis feeds each measurement a verdict report reads, found from the plan.

A report that takes a sequential ``design`` and shows ``verdicts`` (``report.scorecard``, or a user's
component declaring the same) reads measurements by name, each ``${STEP.OUTPUT}`` of one step. The
seeds of a measurement are that step's matrix axis named as the claims' ``over`` (``seed`` unless a
claim says otherwise), whatever param lists them (``seeds``, ``vit_seeds``, ``three``) or a literal
list. Adding seeds to a measurement means adding them to that step and to every step above it whose
same axis comes from the same param (the producers it reads element by element), and to no other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flows.language import refs
from flows.plan._model import Plan

DESIGN_PARAM = "design"  # the parameter a verdict report takes its sequential design in


@dataclass
class SeedAxis:
    """One measurement's seeds: where they come from and which steps would run more of them."""

    source: str  # the report's name for the measurement ("bleu")
    step: str  # the step it reads ("bleu")
    axis: str  # the matrix axis ("seed")
    param: str | None  # the param listing the seeds ("seeds"); None when the step writes a literal list
    values: list  # the seeds the pipeline plans
    steps: list[str] = field(default_factory=list)  # the step and its producers on the same axis and param
    skip: frozenset = frozenset()  # the pipeline's calibration seeds: never added

    def more(self, n: int) -> list | None:
        """The first ``n`` seeds: the planned ones, then whole numbers past the largest that are not
        calibration seeds; None when the planned seeds are not whole numbers (nothing to count on from)."""
        if len(self.values) >= n:
            return list(self.values[:n])
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in self.values):
            return None
        out, seed = list(self.values), max(self.values, default=-1) + 1
        while len(out) < n:
            if seed not in self.skip:
                out.append(seed)
            seed += 1
        return out


@dataclass
class Seeds:
    """The verdict report of a plan and the seeds of each measurement it reads."""

    report: str  # the report's step id
    verdicts_output: str  # the output naming its verdicts file
    axes: dict[str, SeedAxis]  # by measurement name; measurements without a seed axis are absent

    def first_look(self) -> dict[str, int]:
        """Each measurement's planned seed count: the sequential design's first look."""
        return {name: len(a.values) for name, a in self.axes.items()}


def find(plan: Plan) -> Seeds | None:
    """The plan's verdict report and its measurements' seed axes; None when the plan has no report
    that takes a design (a pipeline without claims has nothing to decide)."""
    report = _report(plan)
    if report is None:
        return None
    step = plan.pipeline.steps[report]
    inst = next(i for i in plan.instances.values() if i.step.id == report)
    overs = _overs(step.with_.get("expect"))
    parents = _parents(plan)
    axes: dict[str, SeedAxis] = {}
    for name, value in _measurements(step.with_.get("measurements")).items():
        source_step = plan.pipeline.steps.get(value)
        axis = next((a for a in overs if source_step is not None and a in source_step.matrix), None)
        if axis is None:
            continue
        param = _param_of(source_step.matrix[axis])
        values = list(plan.params[param]) if param else list(source_step.matrix[axis])
        skip = frozenset(plan.settings.calibration_seeds)
        axes[name] = SeedAxis(name, value, axis, param, values, _feeding(plan, value, axis, parents), skip)
    return Seeds(report, inst.component.shows["verdicts"], axes)


def _report(plan: Plan) -> str | None:
    """The step whose component shows verdicts and takes a design (the first, if several)."""
    for inst in plan.instances.values():
        comp = inst.component
        if "verdicts" in comp.shows and DESIGN_PARAM in comp.params_model.model_fields:
            return inst.step.id
    return None


def _overs(expect: Any) -> list[str]:
    """The axes the claims judge over: ``seed`` and any claim's ``over``."""
    found = ["seed"]
    for claim in expect if isinstance(expect, list) else []:
        over = claim.get("over") if isinstance(claim, dict) else None
        if isinstance(over, str) and over not in found:
            found.append(over)
    return found


def _measurements(written: Any) -> dict[str, str]:
    """Measurement name -> the step its ``${STEP.OUTPUT}`` reads (literal values and params left out)."""
    out = {}
    for name, value in (written or {}).items() if isinstance(written, dict) else ():
        if isinstance(value, str):
            tokens, _ = refs.find(value)
            if tokens and refs.whole(value, tokens) and tokens[0].ns not in ("params", "matrix"):
                out[str(name)] = tokens[0].ns
    return out


def _origin(axis_value: Any) -> tuple:
    """Where an axis's values come from: a param, or a literal list (steps sharing one share seeds)."""
    param = _param_of(axis_value)
    return ("param", param) if param else ("literal", repr(list(axis_value)))


def _param_of(axis_value: Any) -> str | None:
    if isinstance(axis_value, str):
        tokens, _ = refs.find(axis_value)
        if tokens and refs.whole(axis_value, tokens) and tokens[0].ns == "params":
            return tokens[0].name
    return None


def _parents(plan: Plan) -> dict[str, set[str]]:
    """Step id -> the step ids it reads from (through any of its instances)."""
    step_of = {iid: inst.step.id for iid, inst in plan.instances.items()}
    out: dict[str, set[str]] = {}
    for inst in plan.instances.values():
        out.setdefault(inst.step.id, set()).update(step_of[d] for d in inst.deps if d in step_of)
    return out


def _feeding(plan: Plan, start: str, axis: str, parents: dict[str, set[str]]) -> list[str]:
    """``start`` and the steps above it whose ``axis`` comes from the same param or literal list (in
    plan order): the producers it reads seed by seed."""
    origin = _origin(plan.pipeline.steps[start].matrix[axis])
    seen, todo = {start}, [start]
    while todo:
        for up in parents.get(todo.pop(), ()):
            matrix = plan.pipeline.steps[up].matrix
            if up not in seen and axis in matrix and _origin(matrix[axis]) == origin:
                seen.add(up)
                todo.append(up)
    order = list(dict.fromkeys(i.step.id for i in plan.instances.values()))
    return [s for s in order if s in seen]


__all__ = ["DESIGN_PARAM", "SeedAxis", "Seeds", "find"]
