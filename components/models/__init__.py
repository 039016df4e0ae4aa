"""Components: models. ``build(name, **overrides)``, ``names()``, ``describe(name)``, ``ModelError``."""

from components.models import variants  # noqa: F401  (registers the named variants)
from components.models.registry import ModelError, build, config, describe, family_of, names

__all__ = ["ModelError", "build", "config", "describe", "family_of", "names"]
