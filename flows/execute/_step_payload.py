"""What a worker is given for one step: its parameters with the upstream outputs filled in, the
producer files it reads, and the device it runs on, as a picklable ``StepPayload``."""

from __future__ import annotations

import os
import shlex
from typing import Any

from flows.execute.worker import StepPayload
from flows.language.refs import Ref
from flows.plan.build import Instance, Plan


def materialize(value: Any, outputs: dict[str, dict]) -> Any:
    """``value`` with every reference replaced by the upstream output it names."""
    if isinstance(value, Ref):
        return value.resolve(outputs)
    if isinstance(value, dict):
        return {k: materialize(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v, outputs) for v in value]
    return value


def files_under(value: Any, root: str) -> list[str]:
    """Paths inside ``root`` that a step's parameters name (its producers' files)."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in files_under(v, root)]
    if isinstance(value, list):
        return [p for v in value for p in files_under(v, root)]
    return [value] if isinstance(value, str) and value.startswith(root + os.sep) else []


def step_device(plan: Plan, executor: str, inst: Instance) -> str:
    """``settings.device: cpu`` keeps every step on the CPU; otherwise a worker's pinning
    decides (in threads, where nothing is pinned: a fixed device, or the step's GPU count)."""
    fixed = str(plan.settings.device)
    if fixed == "cpu":
        return "cpu"
    if executor == "threads":
        return fixed if fixed != "auto" else ("cuda" if inst.gpu else "cpu")
    return ""


def payload(plan: Plan, root: str, executor: str, inst: Instance, params: dict, run_id: str, work: str) -> StepPayload:
    """What a worker needs to run the step, as plain data (``root``: the state folder)."""
    return StepPayload(
        instance=inst.id,
        component=inst.component.name,
        params=params,
        key=inst.key,
        work_dir=work,
        run_id=run_id,
        seed=int(inst.bindings.get("seed", plan.settings.seed)),
        tracking_uri=os.environ.get("MLFLOW_TRACKING_URI", ""),
        home=root,
        threads=int(plan.settings.torch_threads or 0),
        device=step_device(plan, executor, inst),
        module=inst.component.fn.__module__,
        inputs=sorted(set(files_under(params, root))),
        run_command=rerun_command(plan),
    )


def rerun_command(plan: Plan) -> str:
    """``bottlenecks run FILE [--profile P] [--set ...]``: this run as its user started it (the seeds
    ``--until-decided`` added left out), for a report that suggests a command."""
    words = ["bottlenecks", "run", plan.pipeline.file]
    if plan.profile and plan.profile != plan.pipeline.default_profile:
        words += ["--profile", plan.profile]
    for item in plan.overrides:
        if ".matrix." not in item.partition("=")[0]:
            words += ["--set", item]
    return " ".join(shlex.quote(w) for w in words)
