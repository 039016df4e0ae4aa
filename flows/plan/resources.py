"""Devices as resources: which GPUs a run's workers get, and what each step asks for.

``settings.devices``: ``auto`` (every visible GPU), a list of GPU ids (``[0, 1]``) or ``none``.
A step asks with ``resources: {gpu: 1}``, ``{gpu: 4}`` (it holds four GPUs at once) or
``{gpu: all}`` (every GPU the run is offered; none where none is); a component declares its
default (``@component(..., resources={"gpu": 1})``: the trainer and the timing probe do), which
applies only where the cluster offers GPUs. The engine reads the declaration and names no component.
An explicit request that no worker can satisfy is a validation error, before anything runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from components.bounds import written


def visible_gpus() -> list[str]:
    """GPU ids this process may use, without importing torch (``CUDA_VISIBLE_DEVICES``, then
    ``nvidia-smi``)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    return [line.strip() for line in nvidia_smi("index") if line.strip().isdigit()]


def nvidia_smi(fields: str) -> list[str]:
    """The lines ``nvidia-smi --query-gpu=FIELDS`` prints (CSV, no header); none without a working one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return out.stdout.splitlines() if out.returncode == 0 else []


def gpus(devices: Any) -> list[str]:
    """The GPU ids ``settings.devices`` selects."""
    if devices in (None, "none", "cpu", False, []):
        return []
    if devices == "auto":
        return visible_gpus()
    if isinstance(devices, int) and not isinstance(devices, bool):
        devices = [devices]
    if isinstance(devices, list):
        return [str(d) for d in devices]
    raise ValueError(f"settings.devices must be auto, none or a list of GPU ids, got {written(devices)}")


ALL = "all"  # ``resources: {gpu: all}``: every GPU the run is offered


def wants_gpu(component, explicit: dict | None, offered: int) -> tuple[int, bool]:
    """(GPUs the step gets, whether the request was explicit) for a ``Component``; ``offered``: the
    most GPUs one step can hold on this cluster (what ``gpu: all`` resolves to)."""
    if explicit is not None and "gpu" in explicit:
        return (offered if explicit["gpu"] == ALL else int(explicit["gpu"])), True
    declared = (getattr(component, "resources", None) or {}).get("gpu", 0)
    default = offered if declared == ALL else int(declared)
    return (min(default, offered) if offered else 0), False


def device_class(gpu: int) -> str:
    """What the cache key records: the kind of device, never which one."""
    return "cuda" if gpu else "cpu"


def device_parts(gpu: int) -> dict[str, object]:
    """The cache key's device parts: none on a CPU, ``device: cuda`` on one GPU, and the count
    beside it on several (a reduction across GPUs sums in another order), never which GPUs."""
    if not gpu:
        return {}
    return {"device": device_class(gpu), **({"gpus": gpu} if gpu > 1 else {})}


def offers(offered: int) -> str:
    """What a cluster offering ``offered`` GPUs to a step offers, in words: ``none``, ``only 2``."""
    return "none" if not offered else f"only {offered}"
