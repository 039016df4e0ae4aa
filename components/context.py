"""The context a component receives: where to write, which device and seed, where to log.

``Context`` is the plain version used by tests and direct calls: it keeps what is logged in
memory (and nothing else). ``flows/`` subclasses it to log to MLflow and drive the progress view.
Components never import prefect or mlflow; they only talk to this object.
"""

from __future__ import annotations

import logging
import math
import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator


class Progress:
    """A progress handle: ``advance(n)``, ``update(completed=, total=, description=)``."""

    def __init__(self, total: float | None, description: str = ""):
        self.total = total
        self.completed = 0.0
        self.description = description

    def advance(self, n: float = 1) -> None:
        self.completed += n

    def update(
        self, *, completed: float | None = None, total: float | None = None, description: str | None = None
    ) -> None:
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        if description is not None:
            self.description = description


@dataclass
class Context:
    """What a component may use: work dir, device, seed, a logger for results, progress, the environment."""

    work_dir: Path
    device: str = "cpu"
    seed: int = 0
    step_name: str = "step"
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, list[tuple[int | None, float]]] = field(default_factory=dict)
    artifacts: list[Path] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    model_examples: dict[str, tuple] = field(default_factory=dict)
    # Set by the engine (flows.track.environment.describe); a Context made without it has none.
    environment_source: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log = logging.getLogger(f"bottlenecks.{self.step_name}")

    # -- results ---------------------------------------------------------------------------------
    def log_params(self, params: dict[str, Any]) -> None:
        """Record parameters (strings in MLflow)."""
        self.params.update(params)

    def log_metric(self, key: str, value: float, step: int | None = None) -> None:
        """Record one metric value; NaN and Inf are kept (a diverged run is a result)."""
        self.metrics.setdefault(key, []).append((step, float(value)))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        for k, v in metrics.items():
            self.log_metric(k, v, step)

    def log_artifact(self, path: str | Path) -> None:
        """Record a file (plot, table, report) produced in the work dir."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"artifact {path} does not exist")
        self.artifacts.append(path)

    def log_model(self, model: Any, name: str = "model", example: tuple | None = None) -> None:
        """Record a trained torch model (the MLflow context logs it with the PyTorch flavour);
        ``example`` is (inputs, outputs) as arrays, for its signature."""
        self.models[name] = model
        if example is not None:
            self.model_examples[name] = example

    def log_dataset(
        self, name: str, source: str, digest: str, sizes: dict[str, int] | None = None, context: str = "training"
    ) -> None:
        """Record the dataset a run reads (an MLflow input: name, content digest, folder, split sizes)."""
        self.datasets.append(
            {"name": name, "source": str(source), "digest": digest, "sizes": dict(sizes or {}), "context": context}
        )

    def set_tags(self, tags: dict[str, str]) -> None:
        """Record tags (e.g. ``bottleneck: B2``)."""
        self.tags.update({k: str(v) for k, v in tags.items()})

    def last_metric(self, key: str) -> float:
        """Most recent value of a metric (NaN if never logged)."""
        values = self.metrics.get(key)
        return values[-1][1] if values else math.nan

    def environment(self) -> dict[str, Any] | None:
        """Where this step runs: machine, devices, library versions, commit, as the engine records them
        (``environment_source``); None in a Context made without the engine, which knows none of it."""
        return self.environment_source() if self.environment_source is not None else None

    # -- progress ----------------------------------------------------------------------------------
    @contextmanager
    def progress(self, total: float | None = None, description: str = "") -> Iterator[Progress]:
        """Yield a progress handle for a long loop."""
        yield Progress(total, description)

    # -- helpers -----------------------------------------------------------------------------------
    def seed_everything(self, offset: int = 0) -> int:
        """Seed python, numpy and torch from ``seed + offset``; return the seed used."""
        seed = self.seed + offset
        random.seed(seed)
        try:
            import numpy as np

            np.random.seed(seed % 2**32)
        except ImportError:
            pass
        try:
            import torch

            torch.manual_seed(seed)
        except ImportError:
            pass
        return seed

    def path(self, name: str) -> Path:
        """A path inside the work dir (parents created)."""
        p = self.work_dir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p
