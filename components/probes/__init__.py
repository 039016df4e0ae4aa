"""Components: probes (measure the four bottlenecks) and evaluation."""
from components.probes import attention_entropy, gradient_decay, param_count, permutation, timing  # noqa: F401
