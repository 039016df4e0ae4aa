"""Deployments registered before the engine was cut into layers name ``flows.schedule:run_pipeline``
as their entry point; this keeps them running. ``bottlenecks deploy`` (or ``schedule``) again
registers them under ``flows.ops.schedule`` and makes this file unnecessary."""

from flows.ops.schedule import run_pipeline

__all__ = ["run_pipeline"]
