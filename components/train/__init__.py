"""Components: train (``train.model``) and the checkpoint format probes read."""

from components.train import trainer  # noqa: F401
from components.train.checkpoint import load_model

__all__ = ["load_model"]
