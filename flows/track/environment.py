"""The environment a run's numbers came from: machine, devices, library versions, threads, commit.

``describe()`` is what the parent run (``environment.json`` and ``env.*`` tags, ``as_tags``/``from_tags``)
and a report's verdicts file record, so that ``bottlenecks history`` can tell a verdict that changed with the
machine or a library from one that changed with the code (``differences``). It names no host:
``machine_id`` is a salted hash of the OS's machine id, enough to tell two machines of one kind apart
and useless for finding either. Components do not import it: they ask ``ctx.environment()``, which
the engine's context answers with ``describe()``.

``describe(import_torch=False)`` reads torch's version, CUDA build and GPUs without importing torch
(package metadata, ``torch/version.py``, ``nvidia-smi``): the parent process of a run stays light.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from flows.plan.resources import nvidia_smi

LIBRARIES = ("numpy", "sacrebleu", "tokenizers", "prefect", "mlflow", "scikit-learn", "datasets")
# Fields that can move a figure: a change in any of them makes a changed verdict "another environment".
# (Thread counts are left out on purpose: every step sets its own, which the cache key records.)
NUMERIC_KEYS = (
    "machine_id",
    "cpu_model",
    "cpu_capability",
    "cores",
    "gpu_model",
    "gpu_count",
    "torch",
    "cuda",
    "cudnn",
    "python",
    "libraries",
)
_SALT = b"bottlenecks-machine:"
TAG_PREFIX = "env."  # the parent run's tags: env.cpu_model, env.libraries.numpy


def git_commit(path: str | Path = ".") -> str | None:
    """The commit checked out in the repository holding ``path``, or None outside one (or without git)."""
    out = _git(path, "rev-parse", "HEAD")
    return out or None


def git_dirty(path: str | Path = ".") -> bool | None:
    """Whether tracked files differ from the commit (untracked files do not count); None outside a repository."""
    if git_commit(path) is None:
        return None
    out = _git(path, "status", "--porcelain", "--untracked-files=no")
    return out is not None and out != ""


def _git(path: str | Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=str(path), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def cpu_info(text: str | None = None) -> dict[str, Any]:
    """CPU model, family/model/stepping and the vector extensions that pick torch's kernels, from
    ``/proc/cpuinfo`` (``text`` for tests) or ``platform`` where there is none."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:  # the first processor's block is enough
                break
            continue
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {
        "cpu_model": fields.get("model name") or platform.processor() or platform.machine() or None,
        "cpu_family_model_stepping": "/".join(fields.get(k, "?") for k in ("cpu family", "model", "stepping"))
        if fields
        else None,
        "cpu_vector_flags": sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4"))),
    }


def machine_id(path: str = "/etc/machine-id") -> str | None:
    """A salted, shortened hash of the OS machine id: stable on one machine, different on the next."""
    try:
        raw = Path(path).read_bytes().strip()
    except OSError:
        return None
    return hashlib.sha256(_SALT + raw).hexdigest()[:12] if raw else None


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str | None]:
    """Installed versions, read from package metadata (nothing is imported)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _torch_info(import_torch: bool) -> dict[str, Any]:
    if not import_torch and "torch" not in sys.modules:
        return _torch_info_light()
    try:
        import torch
    except ImportError:
        return {"torch": None}
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": None,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "gpu_model": None,
        "gpu_count": 0,
    }
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        names = sorted({torch.cuda.get_device_name(i) for i in range(count)})
        info.update(gpu_count=count, gpu_model=", ".join(names), cudnn=torch.backends.cudnn.version())
    return info


def _torch_info_light() -> dict[str, Any]:
    """What can be read without importing torch (about 2 s): versions from files, GPUs from nvidia-smi."""
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return {"torch": None}
    cuda = None
    spec = importlib.util.find_spec("torch")
    if spec and spec.origin:
        text = (Path(spec.origin).parent / "version.py").read_text() if spec.origin else ""
        found = re.search(r"^cuda\b[^=]*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        cuda = found.group(1) if found else None
    names = gpu_names() if cuda else []
    return {
        "torch": version,
        "cuda": cuda,
        "cudnn": None,  # needs torch imported: a report's record (made in a worker) has it
        "cpu_capability": None,
        "torch_threads": None,
        "gpu_model": ", ".join(sorted(set(names))) or None,
        "gpu_count": len(names),
    }


def gpu_names() -> list[str]:
    """GPU models ``nvidia-smi`` lists (those ``CUDA_VISIBLE_DEVICES`` leaves visible), empty without one."""
    lines = nvidia_smi("index,name")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    keep = None if visible is None else {v.strip() for v in visible.split(",")}
    rows = [line.split(",", 1) for line in lines if "," in line]
    return [name.strip() for index, name in rows if keep is None or index.strip() in keep]


def describe(path: str | Path = ".", import_torch: bool = True) -> dict[str, Any]:
    """The environment as a JSON-able dict (see the module docstring); ``path``: where to read the commit;
    ``import_torch=False``: read torch's facts from files unless torch is already imported."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    env: dict[str, Any] = {
        "machine_id": machine_id(),
        "platform": f"{platform.system()} {platform.machine()}",
        **cpu_info(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "python": platform.python_version(),
        **_torch_info(import_torch),
        "thread_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ},
        "libraries": library_versions(),
        "git_commit": git_commit(path),
        "git_dirty": git_dirty(path),
    }
    env["machine"] = machine_summary(env)
    return env


def machine_summary(env: dict[str, Any]) -> str:
    """One line for a human: ``AMD EPYC (AVX512), 2 cores, no GPU, torch 2.13.0+cpu``."""
    cpu = env.get("cpu_model") or "unknown CPU"
    if env.get("cpu_capability"):
        cpu += f" ({env['cpu_capability']})"
    gpu = f"{env['gpu_count']}x {env['gpu_model']}" if env.get("gpu_count") else "no GPU"
    return f"{cpu}, {env.get('cores')} cores, {gpu}, torch {env.get('torch')}, Python {env.get('python')}"


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, tuple[Any, Any]]:
    """The number-moving fields (``NUMERIC_KEYS``) that differ between two recorded environments, as
    ``{key: (a, b)}``; library versions are compared one by one (``libraries.numpy``). Values compare
    as text (tags are text); a field one side did not record (None) is unknown, not a difference.
    A run that recorded no environment at all differs in ``environment`` itself."""
    if not a or not b:
        return {} if not a and not b else {"environment": ("recorded" if a else None, "recorded" if b else None)}

    def same(x, y) -> bool:
        return x is None or y is None or str(x) == str(y)

    out: dict[str, tuple[Any, Any]] = {}
    for key in NUMERIC_KEYS:
        va, vb = a.get(key), b.get(key)
        if key == "libraries" and isinstance(va, dict) and isinstance(vb, dict):
            for lib in sorted(set(va) | set(vb)):
                if not same(va.get(lib), vb.get(lib)):
                    out[f"libraries.{lib}"] = (va.get(lib), vb.get(lib))
        elif not same(va, vb):
            out[key] = (va, vb)
    return out


def as_tags(env: dict[str, Any]) -> dict[str, str]:
    """``env.<key>`` tags (``env.libraries.numpy``); lists as JSON; None left out."""
    tags: dict[str, str] = {}
    for key, value in env.items():
        if isinstance(value, dict):
            tags.update({f"{TAG_PREFIX}{key}.{k}": str(v) for k, v in value.items() if v is not None})
        elif isinstance(value, list):
            tags[f"{TAG_PREFIX}{key}"] = json.dumps(value)
        elif value is not None:
            tags[f"{TAG_PREFIX}{key}"] = str(value)
    return tags


def from_tags(tags: dict[str, str]) -> dict[str, Any]:
    """The environment a run's ``env.*`` tags record (values as text; empty when it has none)."""
    env: dict[str, Any] = {}
    for tag, value in tags.items():
        if not tag.startswith(TAG_PREFIX):
            continue
        key, _, sub = tag[len(TAG_PREFIX) :].partition(".")
        if sub:
            env.setdefault(key, {})[sub] = value
        else:
            env[key] = value
    return env


if __name__ == "__main__":  # python -m flows.track.environment: what a run here would record
    json.dump(describe(), sys.stdout, indent=2)
    print()
