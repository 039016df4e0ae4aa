"""Metric names that group: the namespace every logged metric lives in, and the names older runs used.

A metric's first segment says what it is (``NAMESPACES``). A component logs a key through its
context, and the context places a key that is in no namespace under its component's family
(``place``): ``data.*`` under ``data/``, ``train.*`` under ``run/``, any other ``<family>.<name>``
(``probe.gradient_decay``, ``eval.bleu``, a user's ``mylab.probe``) under ``<family>/<name>/``.
``current`` maps a key as logged by older runs to its name today, so histories read both.
The namespace is documented in docs/metrics.md.
"""

from __future__ import annotations

from components.context import NAMESPACES, metric_namespace, metric_prefix, place_metric

namespace, prefix, place = metric_namespace, metric_prefix, place_metric  # the rule components log by

# train.model's end-of-run facts, logged flat (``seconds``) before the namespace
RUN_FACTS = frozenset(
    {
        "steps",
        "seconds",
        "cpu_seconds",
        "passes_per_step",
        "params",
        "resumed_from_step",
        "tokens_per_s",
        "eval_seconds",
        "diverged",
        "diverged_step",
    }
)

# an older key's first segment (or the whole key) -> the component that logged it, for keys read
# without the step run's ``component`` tag
OLD_OWNERS: dict[str, str] = {
    "grad_norm": "probe.gradient_decay",
    "grad": "probe.gradient_decay",
    "rho": "probe.gradient_decay",
    "rho_init": "probe.gradient_decay",
    "rel_error": "probe.permutation",
    "error": "probe.permutation",
    "neighbour_cos": "probe.position_similarity",
    "neighbour_minus_far": "probe.position_similarity",
    "seq_steps_per_layer": "probe.timing",
    "exact": "probe.capacity",
    "ratio": "probe.capacity",
    "entropy": "probe.attention_entropy",
    "unscaled_drop": "probe.attention_entropy",
    "scaled_min": "probe.attention_entropy",
    "acc_by_lag": "probe.long_lag",
    "acc_min": "probe.long_lag",
    "longest_solved": "probe.long_lag",
    "time_s": "probe.timing",
    "time_s_ci": "probe.timing",
    "time_exp": "probe.timing",
    "time_exp_ci": "probe.timing",
    "memory_mb": "probe.timing",
    "memory_exp": "probe.timing",
    "memory_exp_ci": "probe.timing",
    "params": "probe.param_count",  # params/T_<T>; a bare ``params`` is train.model's (RUN_FACTS)
    "runs": "probe.param_count",
    "runs_all": "probe.param_count",
    "params_spread": "probe.param_count",
    "params_constant": "probe.param_count",
    "diag_mass": "probe.attention_maps",
    "diag_mass_uniform": "probe.attention_maps",
    "diag_ratio": "probe.attention_maps",
    "dropped": "data.wmt",
    "src_vocab_size": "data.synthetic_translation",
    "tgt_vocab_size": "data.synthetic_translation",
}

RETIRED = ("arch/",)  # report.scorecard's arch/<name>/<B> means: no longer logged (scorecard.json keeps them)


def current(key: str, component: str | None = None) -> str:
    """The name today of ``key`` as logged by an older run (no step prefix); identity when current.

    ``component`` is the step run's ``component`` tag: with it every name maps exactly; without it,
    keys that only one shipped component logged map by that component, train.model's end-of-run
    keys map to ``valid/``, ``test/`` and ``run/``, and a key whose owner cannot be told stays as it is.
    """
    if key.startswith(RETIRED):
        return key
    family = (component or "").partition(".")[0]
    if component is None or family == "train":
        renamed = _train_name(key)
        if renamed is not None:
            return renamed
    if component:
        return place(key, component)
    if namespace(key) is not None:
        return key
    if key.startswith("n_"):
        return "data/" + key
    owner = OLD_OWNERS.get(key.split("/", 1)[0])
    return place(key, owner) if owner else key


def _train_name(key: str) -> str | None:
    """train.model's older flat keys (``valid_loss``, ``test_acc``, ``seconds``) renamed; else None."""
    for split in ("valid", "test"):
        if key.startswith(f"{split}_"):
            return f"{split}/{key[len(split) + 1 :]}"
    return f"run/{key}" if key in RUN_FACTS else None


__all__ = ["NAMESPACES", "OLD_OWNERS", "RETIRED", "RUN_FACTS", "current", "namespace", "place", "prefix"]
