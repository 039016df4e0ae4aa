"""A trivial component for the worker benchmark: imports torch (as real steps do), does nothing."""

from components import Context, component


@component("bench.import_torch", outputs=["ok"])
def import_torch(ctx: Context) -> dict:
    """Import torch and return at once."""
    import torch  # noqa: F401 - what a real step's worker pays once

    return {"ok": True}
