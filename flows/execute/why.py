"""Why each step run of a plan would be computed rather than served from the cache, in a person's
words: its key's parts against those the step's latest run recorded (``flows/plan/_keys.py``),
the inputs that are computed again, ``cache: false``, ``--fresh``, ``--no-cache``. An empty list:
served from the cache."""

from __future__ import annotations

from flows.execute.cache import StepCache
from flows.plan._fingerprint import Fingerprints
from flows.plan._keys import changes
from flows.plan._model import Instance, Plan


def reasons(plan: Plan, cache: StepCache, use_cache: bool = True) -> dict[str, list[str]]:
    """Step run id -> why it would be computed (empty: served from the cache), in plan order."""
    prints = Fingerprints(cache.root)
    found: dict[str, list[str]] = {}
    rerunning: set[str] = set()
    try:
        for iid, inst in plan.instances.items():
            found[iid] = ["--no-cache"] if not use_cache else _why(plan, inst, cache, rerunning, prints)
            if found[iid]:
                rerunning.add(iid)
    finally:
        prints.close()
    return found


def _why(plan: Plan, inst: Instance, cache: StepCache, rerunning: set[str], prints: Fingerprints) -> list[str]:
    if not inst.step.cache:
        return ["cache: false"]
    if inst.fresh:
        return [inst.fresh]
    if cache.get(inst.key) is not None:  # served as the runner serves it, whatever reruns before it
        return []
    if cache.peek(inst.key) is not None:
        return ["its cached result's work folder was removed"]
    last = cache.last(plan.name, inst.id)
    if last is None:
        return ["not run before"]
    if "parts" not in last:
        return ["key changed (the earlier result did not record what its key held)"]
    return changes(last["parts"], inst, plan.instances, rerunning, prints) or ["key changed"]
