"""The shipped components: registry name -> the module whose ``@component`` registers it.

Pipelines are validated from these modules' source (``components/declared.py``) and a module is
imported only when one of its steps runs, so `bottlenecks check` never pays for torch. A new
component is one line here; ``tests/components/test_components_lazy.py`` fails until it is added.
"""

from __future__ import annotations

import importlib

MODULES: dict[str, str] = {
    "data.adding": "components.data.adding",
    "data.agreement": "components.data.agreement",
    "data.delayed_recall": "components.data.recall",
    "data.digit_strips": "components.data.strips",
    "data.digits": "components.data.digits",
    "data.documents": "components.data.documents",
    "data.mnist": "components.data.mnist",
    "data.multi_lookup": "components.data.lookup",
    "data.patches": "components.data.patches",
    "data.spell": "components.data.spell",
    "data.synthetic_translation": "components.data.synthetic_translation",
    "data.variable_length": "components.data.variable_length",
    "data.wmt": "components.data.wmt",
    "eval.bleu": "components.probes.bleu",
    "eval.classify": "components.probes.classify",
    "probe.attention_entropy": "components.probes.attention_entropy",
    "probe.attention_maps": "components.probes.attention_maps",
    "probe.capacity": "components.probes.capacity",
    "probe.gradient_decay": "components.probes.gradient_decay",
    "probe.long_lag": "components.probes.long_lag",
    "probe.param_count": "components.probes.param_count",
    "probe.permutation": "components.probes.permutation",
    "probe.position_similarity": "components.probes.position_similarity",
    "probe.timing": "components.probes.timing",
    "report.bleu_by_length": "components.report.bleu_plot",
    "report.scorecard": "components.report.scorecard",
    "train.model": "components.train.trainer",
}


def import_all() -> None:
    """Import every shipped component module (and so register every component)."""
    for module in sorted(set(MODULES.values())):
        importlib.import_module(module)
