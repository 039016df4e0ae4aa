"""Bucket examples by source length (decoding itself is ``components.models.decoding.translate``)."""

from __future__ import annotations

from components import summary_keys
from components.models.decoding import output_limits, strip, translate  # their old home: older imports keep working
from components.probes.common import ProbeError

__all__ = ["bucket_names", "bucket_of", "output_limits", "strip", "translate"]


def bucket_names(edges: list[int]) -> list[str]:
    """Names of the buckets [e_i, e_{i+1} - 1] and a last open one "e_k-inf" (defined with the summary
    keys the probes declare, ``components.summary_keys``, so `check` names the same buckets)."""
    try:
        return summary_keys.bucket_names(edges)
    except ValueError as e:
        raise ProbeError(str(e)) from None


def bucket_of(n: int, edges: list[int]) -> str | None:
    """Return the bucket name of length ``n`` (None below the first edge)."""
    if n < edges[0]:
        return None
    names = bucket_names(edges)
    for i, hi in enumerate(edges[1:]):
        if n < hi:
            return names[i]
    return names[-1]
