"""Planning: a validated pipeline expanded into step runs, before anything runs.

    build.py      profiles, ``--set`` overrides, matrix expansion, references resolved, each
                  component's parameters checked, the DAG and every step run's cache key
    size.py       the bound on step runs and links, counted before anything is expanded
    resources.py  devices as resources: the GPUs a run gets and what each step asks for

Planning imports component declarations, never their code, Prefect or MLflow.
"""

from flows.plan.build import Instance, Plan, build

__all__ = ["Instance", "Plan", "build"]
