"""Steps asked fresh: computed again even when their result is cached (``run --fresh PATTERN``,
``settings.fresh``), so that a nightly run watches nondeterminism and drift, and with them the
steps that read their results (whose keys do not change); the others are served from the cache."""

from __future__ import annotations

from fnmatch import fnmatchcase

from flows.plan._model import Instance


def mark_fresh(instances: dict[str, Instance], patterns: list[str], origin: str) -> list[str]:
    """Mark each instance whose step run id, step id or component is a pattern or matches it (``*``,
    ``?``, ``[...]`` as in the shell) fresh, naming ``origin``; return the patterns that match nothing.
    A step run id is taken as it is first: ``train[arch=lstm]`` is no character class."""
    unmatched = []
    for pattern in patterns:
        hit = False
        for inst in instances.values():
            names = (inst.id, inst.step.id, inst.component.name if inst.component else "")
            if pattern in names or any(fnmatchcase(name, pattern) for name in names):
                inst.fresh = inst.fresh or f"{origin} {pattern}"
                hit = True
        if not hit:
            unmatched.append(pattern)
    for inst in instances.values():  # topological: what reads a fresh result is computed again too
        fresh = [d for d in inst.deps if instances[d].fresh]
        if fresh and not inst.fresh:
            inst.fresh = f"input {fresh[0]} reruns"
    return unmatched


def no_match(pattern: str, instances: dict[str, Instance]) -> str:
    """What to tell the user about a pattern that names no step: the steps and components there are."""
    steps = sorted({inst.step.id for inst in instances.values()})
    comps = sorted({inst.component.name for inst in instances.values() if inst.component})
    return (
        f"fresh pattern {pattern!r} matches no step, step run or component; "
        f"steps: {', '.join(steps)}; components: {', '.join(comps)}"
    )
