"""Bucket examples by source length (decoding itself is ``components.models.decoding.translate``)."""

from __future__ import annotations

from components.models.decoding import output_limits, strip, translate  # their old home: older imports keep working
from components.probes.common import ProbeError

__all__ = ["bucket_names", "bucket_of", "output_limits", "strip", "translate"]


def bucket_names(edges: list[int]) -> list[str]:
    """Names of the buckets [e_i, e_{i+1} - 1] and a last open one "e_k-inf"."""
    if not edges or sorted(set(edges)) != list(edges) or edges[0] < 0:
        raise ProbeError(f"buckets must be increasing non-negative lengths like [1, 10, 20, 30], got {edges}")
    names = [f"{lo}-{hi - 1}" for lo, hi in zip(edges, edges[1:])]
    return names + [f"{edges[-1]}-inf"]


def bucket_of(n: int, edges: list[int]) -> str | None:
    """Return the bucket name of length ``n`` (None below the first edge)."""
    if n < edges[0]:
        return None
    names = bucket_names(edges)
    for i, hi in enumerate(edges[1:]):
        if n < hi:
            return names[i]
    return names[-1]
