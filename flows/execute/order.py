"""Order step instances for a pool of workers that runs submissions first come, first served.

A submitted step whose inputs are still being computed holds its worker while it waits (Prefect's
thread pool resolves upstream futures inside the worker), so the submission order decides both
which branches start first and how often a worker sits idle. ``submission_order`` simulates list
scheduling with estimated costs: whenever a worker is free it starts, among the instances whose
inputs are finished, the one with the longest estimated path to the end of the pipeline.
"""

from __future__ import annotations

import heapq
from typing import Callable

from flows.plan.build import Instance, Plan

STEP_SECONDS = 0.05  # a rough cost per training step (quick-profile models, 1 thread)
BASE_SECONDS = 5.0  # start-up, evaluation, a probe without a step count

Cost = Callable[[Instance], float]


def estimate(inst: Instance) -> float:
    """Estimated seconds of an instance: proportional to its ``steps`` parameter when it has one."""
    steps = inst.params.get("steps")
    return BASE_SECONDS + (STEP_SECONDS * steps if isinstance(steps, int) and steps > 0 else 0.0)


def _successors(plan: Plan) -> dict[str, list[str]]:
    succ: dict[str, list[str]] = {iid: [] for iid in plan.instances}
    for iid, inst in plan.instances.items():
        for d in inst.deps:
            succ[d].append(iid)
    return succ


def critical_path(plan: Plan, cost: Cost = estimate) -> dict[str, float]:
    """Estimated seconds from each instance's start to the end of the longest path through it."""
    succ = _successors(plan)
    out: dict[str, float] = {}
    for iid in reversed(list(plan.instances)):  # instances are in topological order
        out[iid] = cost(plan.instances[iid]) + max((out[s] for s in succ[iid]), default=0.0)
    return out


def submission_order(plan: Plan, workers: int, cost: Cost = estimate) -> list[str]:
    """Instance ids in the order a simulated pool of ``workers`` starts them (a topological order)."""
    rank = critical_path(plan, cost)
    position = {iid: i for i, iid in enumerate(plan.instances)}  # ties keep the file's order
    waiting = {iid: len(set(inst.deps)) for iid, inst in plan.instances.items()}
    succ = _successors(plan)
    ready = [(-rank[i], position[i], i) for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int, str]] = []
    now, order = 0.0, []
    while ready or running:
        while ready and len(running) < max(1, workers):
            _, _, iid = heapq.heappop(ready)
            order.append(iid)
            heapq.heappush(running, (now + cost(plan.instances[iid]), position[iid], iid))
        now, _, done = heapq.heappop(running)
        for s in set(succ[done]):
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (-rank[s], position[s], s))
    return order


def fifo_makespan(plan: Plan, order: list[str], workers: int, cost: Cost = estimate) -> float:
    """Estimated wall time of submitting ``order`` to a FIFO pool whose workers wait for inputs."""
    free = [0.0] * max(1, workers)
    finish: dict[str, float] = {}
    for iid in order:
        start = heapq.heappop(free)  # the next submission goes to the first worker to free up
        inst = plan.instances[iid]
        begin = max([start] + [finish[d] for d in inst.deps])  # it holds that worker while it waits
        finish[iid] = begin + cost(inst)
        heapq.heappush(free, finish[iid])
    return max(finish.values(), default=0.0)


__all__ = ["critical_path", "estimate", "fifo_makespan", "submission_order"]
