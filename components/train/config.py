"""The settings of ``train.model``, defined once: name, type, default, bound and doc.

Each field states its type and its bounds (``Size``: at least 1; ``Count``: at least 0; see
``components/bounds.py``): `bottlenecks check` refuses a value out of them at the line that sets it,
and the JSON Schema shows them. ``check()`` says the same in the trainer's words (``TrainError``)
when the component is called directly, and checks the rules that tie two fields together
(``disagreements``: `bottlenecks check` reports those too, at the line that sets the field). Nothing
here imports torch: `bottlenecks check` reads this class without it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.bounds import Count, Fraction, NonNegative, Positive, Probability, Size, refusal
from components.model_names import ModelName
from components.train.errors import TrainError

Betas = Annotated[list[Fraction], Field(min_length=2, max_length=2)]  # Adam's two decay rates, each in [0, 1)

# Parameters that may change between a killed run and its restart without invalidating the state.
RESUMABLE_CHANGES = {
    "steps",
    "converge_tolerance",
    "eval_every",
    "eval_batches",
    "eval_bleu",
    "checkpoint_every",
    "log_every",
    "compile",
    "prefetch",
    "processes",  # the same update with any number (the global batch is accumulate's)
}


class TrainConfig(BaseModel):
    """The ``with:`` parameters of ``train.model``.

    Args:
        data: a data folder (the ``dataset`` output of a data step); its meta.json decides the
            task kind and fills vocab sizes / class counts into the model config.
        model: a registered variant name (or ``package.module:function`` factory).
        overrides: config fields to replace on top of the variant (and the data's values).
        clip: ``none`` lets gradients explode (B2); a NaN/Inf loss (or one above ``max_loss``)
            then ends the run as ``diverged`` (a result, not an error).
        seed: initialisation, dropout and data order.
        accumulate: each step sums the gradients of this many consecutive batches, weighted by their
            target tokens, so ``max_tokens=3125, accumulate=8`` is a 25k-token step.
        passes: translation: the step's ``accumulate`` micro-batches are merged into this many padded
            batches, one forward/backward pass each (the same gradients up to float rounding; the same
            data and order whatever the device). None: on a GPU, one pass, doubled each time the
            device runs out of memory (the step is retried, nothing is lost); on a CPU, one pass per
            micro-batch. A given number also doubles on running out of memory. The summary's
            ``passes_per_step`` says what was used.
        processes: train in this many processes at once (``torch.distributed``: DistributedDataParallel,
            ``gloo`` on CPUs, ``nccl`` on GPUs with one GPU each). None: one per GPU the step holds
            (``resources: {gpu: N}``), else 1. Each step's ``accumulate`` micro-batches are split
            across them (``accumulate`` must be a multiple of ``processes``) and the update equals one
            process's (see ``docs/scale.md``); ``passes`` then counts one process's passes. Rank 0
            alone writes checkpoints, the model and the summary; the step keeps its one MLflow run.
        eval_every: learning curves. Every run logs ``train/loss``, ``train/acc``, ``train/grad_norm``,
            ``train/lr``, ``train/lr_x1000`` (the same in thousandths: MLflow draws a constant below
            0.5 as a line at 0) and ``train/tokens_per_s`` every ``log_every`` steps, and at each
            evaluation ``valid/loss``, ``valid/acc`` (``valid/acc_all`` where the task has it) and, for
            translation, ``valid/bleu`` (see ``eval_bleu``): the same keys for every model and task.
            None (the default): evaluate at 5 evenly spaced steps, at 80% of the steps and at the
            end; N: every N steps and at the end; 0: only at the end, as the summary's
            ``valid_loss``/``valid_acc``, with no ``valid/*`` curve. The end's point is the full
            valid split (the averaged model with ``average_last``); the points before it read the
            first ``eval_batches`` valid batches.
            Evaluation does not change training (same weights), and the summary's
            ``tokens_per_s`` leaves its time out (``eval_seconds`` says how long it took).
        converge_tolerance: convergence. From the curve, the summary records ``late_metric``
            (``bleu``, else ``acc``, else ``loss``), ``late_gain`` (its change from the last point at
            or before 80% of the steps to the end), ``late_loss_change``, ``late_from_step`` and
            ``converged``: the late gain at most this tolerance (None: 2 BLEU, 0.01 accuracy, a 2%
            relative fall of the loss); ``None`` where the curve has no point to compare with.
        average_last: keep the weights of the last N checkpoints (every ``checkpoint_every`` steps,
            the final one included) and evaluate and save their average.
        compile: each micro-batch's forward + loss through ``torch.compile`` (``compiled.py``). None
            (the default): where it pays, on CUDA for the recurrent decoders (``reduce-overhead``, CUDA
            graphs) and the Transformer (``default``), never on a CPU; false: eager; true or a mode:
            ``default``, ``reduce-overhead``, ``max-autotune``.
    """

    model_config = ConfigDict(extra="forbid")

    data: str
    model: ModelName
    overrides: dict[str, Any] | None = None
    steps: Count = 1000
    batch_size: Size = 64
    max_tokens: Size | None = None  # translation: batch by token count instead of batch_size
    accumulate: Size = 1  # micro-batches per optimiser step (gradient accumulation)
    passes: Size | None = None  # forward/backward passes per step over them; None: fit to the device
    processes: Size | None = None  # ranks training together (DDP); None: one per GPU the step holds, 1 on CPU
    optimizer: Literal["adam", "adamw", "sgd", "adadelta"] = "adam"  # adadelta: Bahdanau 2015 (lr 1.0)
    lr: Positive = 1e-3
    weight_decay: NonNegative = 0.0
    betas: Betas = [0.9, 0.999]  # the Transformer paper used [0.9, 0.98]
    momentum: NonNegative = 0.0
    eps: Positive | None = None  # Adam/AdamW 1e-8, Adadelta 1e-6 when None; Vaswani 2017 used Adam eps 1e-9
    rho: Fraction = 0.95  # Adadelta's decay (Bahdanau 2015)
    schedule: Literal["constant", "inverse_sqrt", "cosine"] = "constant"  # cosine: warm-up, then decay to 0 at steps
    warmup: Count = 0
    label_smoothing: Probability = 0.0
    shift: Count = 0  # images: random translation by up to +-shift pixels (ViT positions need it)
    clip: Literal["norm", "value", "none"] = "norm"
    clip_value: Positive = 1.0
    max_loss: Positive | None = None  # also count a loss above this as divergence (CE rarely hits Inf)
    seed: Count = 0
    eval_every: Count | None = None  # None: 5 evenly spaced valid/* points and the end; 0: only the end
    eval_batches: Count = 0  # valid batches per point before the end; 0: the whole split
    converge_tolerance: NonNegative | None = None  # late gain still called converged; None: 2 BLEU, 0.01 acc
    eval_bleu: Count = 64  # translation: valid/bleu on the first N valid sentences (greedy); 0: no BLEU
    eval_batch_size: Size = 256
    checkpoint_every: Count = 100  # 0: no checkpoints before the end
    log_every: Size = 10
    bf16: bool = False  # on CUDA, recurrent models train in fp32 + TF32 instead (see precision.choose)
    # null: compile where it pays (CUDA; recurrent decoders and the Transformer); see compiled.py
    compile: Literal[True, False, "default", "reduce-overhead", "max-autotune"] | None = None
    deterministic: bool = False
    average_last: Count = 0  # > 1: the final model averages the weights of the last N checkpoints
    prefetch: Count | None = None  # batches collated ahead on a thread; None: 2 on a GPU, 0 on a CPU

    def check(self) -> None:
        """Raise TrainError for a value out of its bounds or for two fields that disagree.

        A direct call of ``train.model`` with a value out of bounds lands here (the registry asks the
        config's ``check`` before its own words); the types are pydantic's to check.
        """
        if (
            min(self.steps, self.eval_every or 0, self.checkpoint_every, self.eval_batches, self.eval_bleu) < 0
            or min(self.batch_size, self.log_every) < 1
        ):
            raise TrainError(
                "steps, eval_every, eval_batches, eval_bleu and checkpoint_every must be >= 0; "
                "batch_size and log_every >= 1"
            )
        if self.accumulate < 1 or self.average_last < 0 or (self.prefetch is not None and self.prefetch < 0):
            raise TrainError(
                f"accumulate must be >= 1 and average_last, prefetch >= 0; got accumulate={self.accumulate}, "
                f"average_last={self.average_last}, prefetch={self.prefetch}"
            )
        for _, problem in TrainConfig.disagreements(self.model_dump()):
            raise TrainError(problem)
        if len(self.betas) != 2:
            raise TrainError(f"betas must be two numbers like [0.9, 0.98], got {self.betas}")
        try:  # the other fields' bounds, as the fields declare them
            TrainConfig.model_validate(self.model_dump())
        except ValidationError as e:
            raise TrainError("; ".join(refusal(err) or err["msg"] for err in e.errors())) from None

    @classmethod
    def disagreements(cls, values: dict[str, Any], deferred: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """(field, problem) for each rule tying two fields together that ``values`` break: ``passes``
        within ``accumulate``, ``average_last`` with ``checkpoint_every``, ``accumulate`` split evenly
        across ``processes``. A field missing from ``values`` has its default; a rule that reads a
        ``deferred`` field (a reference, known when the step runs) is not judged. `bottlenecks check`
        reports these at the line that sets the field; ``check()`` raises the first."""

        def get(name: str):
            return values.get(name, cls.model_fields[name].default)

        def judged(*names: str) -> bool:
            return not deferred.intersection(names)

        out = []
        accumulate, passes, processes = get("accumulate"), get("passes"), get("processes")
        if judged("passes", "accumulate") and passes is not None and not 1 <= passes <= accumulate:
            out.append(
                (
                    "passes",
                    f"passes must be between 1 and accumulate={accumulate} (or null to fit the device); got {passes}",
                )
            )
        if judged("average_last", "checkpoint_every") and get("average_last") > 1 and not get("checkpoint_every"):
            out.append(
                (
                    "average_last",
                    f"average_last={get('average_last')} averages checkpoints: set checkpoint_every > 0",
                )
            )
        if judged("schedule", "steps", "warmup") and get("schedule") == "cosine" and get("steps") <= get("warmup"):
            out.append(
                (
                    "schedule",
                    f"schedule 'cosine' decays after the warm-up: steps ({get('steps')}) must exceed "
                    f"warmup ({get('warmup')})",
                )
            )
        if judged("accumulate", "passes", "processes") and processes and processes > 1:
            problem = split_disagreement(accumulate, passes, processes)
            if problem:
                out.append(("processes", problem))
        return out

    def fingerprint(self) -> str:
        """Hash the settings a resumed run must share with the run that wrote its checkpoint."""
        kept = {k: v for k, v in self.model_dump().items() if k not in RESUMABLE_CHANGES}
        if self.schedule == "cosine":  # its decay ends at ``steps``: another length is another schedule
            kept["steps"] = self.steps
        return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def logged(self) -> dict[str, Any]:
        """The settings as MLflow params: lists and dicts as JSON text."""
        return {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in self.model_dump().items()}


def split_disagreement(accumulate: int, passes: int | None, world: int) -> str | None:
    """Why a step's micro-batches cannot be split evenly across ``world`` processes, or None."""
    if accumulate % world:
        up = -(-accumulate // world) * world
        return (
            f"accumulate={accumulate} must be a multiple of processes={world}: each optimiser step's "
            f"micro-batches are split evenly across the processes; set accumulate to {up} "
            f"(a larger global batch) or processes to a divisor of {accumulate}"
        )
    if passes is not None and passes > accumulate // world:
        return (
            f"passes={passes} counts one process's passes, over its {accumulate // world} of the "
            f"{accumulate} micro-batches (processes={world}): set passes <= {accumulate // world} or null"
        )
    return None
