"""A step's entry in the cache: an earlier run's outputs reused, or a computed step's recorded with
its key's parts; either way the key is remembered as the step's latest, for ``plan`` to compare."""

from __future__ import annotations

from prefect.states import Completed

from flows.execute._result import RunResult
from flows.execute._step_events import StepEvents
from flows.execute._step_runs import StepRuns
from flows.execute.cache import StepCache
from flows.execute.worker import StepResult
from flows.plan.build import Instance


def reuse(
    inst: Instance, record: dict, runs: StepRuns, events: StepEvents, result: RunResult, cache: StepCache
) -> Completed:
    """Give the step the outputs ``record`` holds, with a run of its own that copies their results;
    a Prefect ``Completed`` state named ``Cached`` says so in the Prefect UI."""
    origin = record.get("run_id", "")
    runs.reused(inst, origin)
    cache.remember(result.pipeline, inst.id, inst.key)
    result.status[inst.id] = "cached"
    result.outputs[inst.id] = record["outputs"]
    events.cached(inst.id, origin)
    return Completed(data=record["outputs"], name="Cached", message=f"reused outputs of run {origin}")


def record(cache: StepCache, inst: Instance, outputs: dict, work: str, result: StepResult, pipeline: str) -> None:
    """Put a computed step's outputs in the cache, with where they were computed and its key's parts."""
    cache.put(
        inst.key,
        {
            "outputs": outputs,
            "run_id": outputs["run_id"],
            "pipeline": pipeline,
            "step": inst.id,
            "component": inst.component.name,
            "work_dir": work,
            "host": result.host,
            "device": result.device,
            "parts": inst.parts,
        },
    )
    cache.remember(pipeline, inst.id, inst.key)
