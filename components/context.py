"""The context a component receives: where to write, which device and seed, where to log.

``Context`` is the plain version used by tests and direct calls: it keeps what is logged in
memory (and nothing else). ``flows/`` subclasses it to log to MLflow and drive the progress view.
Components never import prefect or mlflow; they only talk to this object.

Metric names group by what they are (``NAMESPACES``, docs/metrics.md): the context places a key
that is in no namespace under its component's family (``place_metric``), so ``grad_norm/lstm``
logged by ``probe.gradient_decay`` is ``probe/gradient_decay/grad_norm/lstm``, for shipped
components and users' alike. The component is set when it is called through the registry.
"""

from __future__ import annotations

import logging
import math
import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

# a metric name's first segment -> what lives there
NAMESPACES: dict[str, str] = {
    "train": "curves over training steps: loss, acc, lr, grad_norm, tokens_per_s",
    "valid": "the learning curve on the valid split (loss, acc, bleu) at a handful of steps and the end",
    "test": "a training run's final test metrics, at its last step",
    "vitals": "a training run's facts at its end: steps, seconds, cpu_seconds, params, diverged, eval_seconds",
    "data": "a data step's counts: n_train, n_valid, n_test, dropped/<why>, vocabulary sizes",
    "probe": "probe/<probe>/...: what a probe measured, e.g. probe/gradient_decay/grad_norm/lstm",
    "eval": "eval/<name>/...: an evaluation's scores, e.g. eval/bleu/bleu/lstm",
    "report": "report/<name>/...: a report step's own numbers, e.g. report/bleu_by_length/seeds/lstm",
    "claim": "claim/<id>: a verdict as a number; claim/<id>/{margin,lo,hi,p,p_holm}: its evidence",
    "claims": "claims/<count>: the scorecard's counts of verdicts (holds, fails, total, ...)",
}


# namespaces renamed, and what a key logged under the old one is placed under: MLflow's run page lays
# out its chart sections alphabetically, and ``run/`` (one value each) came before ``train/`` and
# ``valid/`` (the learning curves); ``vitals/`` comes after them
MOVED: dict[str, str] = {"run/": "vitals/"}


def metric_namespace(key: str) -> str | None:
    """The namespace ``key`` is in (its first segment, when that is one), else None."""
    head = key.split("/", 1)[0]
    return head if head in NAMESPACES else None


def metric_prefix(component: str) -> str:
    """Where a component's keys that are in no namespace go: ``data/``, ``vitals/`` or ``<family>/<name>/``."""
    family, _, name = component.partition(".")
    if family == "data":
        return "data/"
    if family == "train":
        return "vitals/"
    return f"{family}/{name}/" if name else f"{family}/"


def place_metric(key: str, component: str) -> str:
    """The name ``key`` is logged under by ``component``: unchanged when it is in a namespace, already
    under the component's prefix, or no component is known; else under the prefix. Placing twice
    gives the same name."""
    for old, new in MOVED.items():
        if key.startswith(old):
            return new + key[len(old) :]
    if not component or metric_namespace(key) is not None:
        return key
    where = metric_prefix(component)
    return key if key.startswith(where) else where + key


class Progress:
    """A progress handle: ``advance(n)``, ``update(completed=, total=, description=)``.

    ``on_change(handle)`` is called after each of them: how the live view, a worker's events and a
    training rank's relay follow a component's progress, without a subclass each.
    """

    def __init__(self, total: float | None, description: str = "", on_change: Callable[[Progress], None] | None = None):
        self.total = total
        self.completed = 0.0
        self.description = description
        self.on_change = on_change

    def advance(self, n: float = 1) -> None:
        self.completed += n
        self._changed()

    def update(
        self, *, completed: float | None = None, total: float | None = None, description: str | None = None
    ) -> None:
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        if description is not None:
            self.description = description
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)


@dataclass
class Context:
    """What a component may use: work dir, device, seed, a logger for results, progress, the environment."""

    work_dir: Path
    device: str = "cpu"
    seed: int = 0
    step_name: str = "step"
    component: str = ""  # the registry name (``probe.timing``): where metric names are placed; "" places none
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, list[tuple[int | None, float]]] = field(default_factory=dict)
    artifacts: list[Path] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    model_examples: dict[str, tuple] = field(default_factory=dict)
    # Set by the engine (flows.track.environment.describe); a Context made without it has none.
    environment_source: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    # Set by the engine: a run id -> its page in the tracking UI; a Context made without it knows none.
    run_link_source: Callable[[str], str | None] | None = field(default=None, repr=False, compare=False)
    # The physical GPU ids the step holds, in order (set by the engine): empty on a CPU worker, one
    # for an ordinary GPU step; with several, the step runs on the first and the others wait for it.
    gpus: tuple[str, ...] = ()
    # Set by the engine: the command that runs this pipeline again as its user started it
    # (``bottlenecks run p.yaml --profile quick``), for a report that suggests one; None without it.
    run_command: str | None = None

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log = logging.getLogger(f"bottlenecks.{self.step_name}")

    # -- results ---------------------------------------------------------------------------------
    def log_params(self, params: dict[str, Any]) -> None:
        """Record parameters (strings in MLflow)."""
        self.params.update(params)

    def metric_name(self, key: str) -> str:
        """The name ``key`` is logged under (``place_metric`` for this context's component)."""
        return place_metric(key, self.component)

    def log_metric(self, key: str, value: float, step: int | None = None) -> None:
        """Record one metric value under its placed name; NaN and Inf are kept (a diverged run is a result)."""
        self.metrics.setdefault(self.metric_name(key), []).append((step, float(value)))

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
        """Most recent value of a metric, by the name it was logged with or its placed name (NaN if never logged)."""
        values = self.metrics.get(self.metric_name(key))
        return values[-1][1] if values else math.nan

    def environment(self) -> dict[str, Any] | None:
        """Where this step runs: machine, devices, library versions, commit, as the engine records them
        (``environment_source``); None in a Context made without the engine, which knows none of it."""
        return self.environment_source() if self.environment_source is not None else None

    def run_link(self, run_id: str) -> str | None:
        """The tracking UI's page of run ``run_id`` (a run of this pipeline), or None where the engine
        gave no UI address (a Context made without it)."""
        return self.run_link_source(run_id) if self.run_link_source is not None else None

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
