"""The step library: plain typed functions registered as pipeline components.

Nothing in this package imports prefect or mlflow. The core beside the areas (data/, models/, train/,
probes/, report/): the registry, the context, bounds, outputs, and ``stats``, the statistics of every
verdict (the scorecard's and `bottlenecks history`'s), which names no component.
"""

from components.context import Context, Progress
from components.registry import Component, ComponentError, component, get

__all__ = ["Component", "ComponentError", "Context", "Progress", "component", "get"]
