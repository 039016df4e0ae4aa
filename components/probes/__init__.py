"""Components: probes (measure the four bottlenecks) and evaluation."""
from components.probes import (  # noqa: F401
    attention_entropy,
    attention_maps,
    bleu,
    capacity,
    classify,
    gradient_decay,
    long_lag,
    param_count,
    permutation,
    position_similarity,
    timing,
)
