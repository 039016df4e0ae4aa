"""The step library: plain typed functions registered as pipeline components.

Nothing in this package imports prefect or mlflow.
"""

from components.context import Context, Progress
from components.registry import Component, ComponentError, component, get

__all__ = ["Component", "ComponentError", "Context", "Progress", "component", "get"]
