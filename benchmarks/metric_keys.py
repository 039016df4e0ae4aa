"""How many metric keys a pipeline's experiment holds: the sections of MLflow's chart view.

    python benchmarks/metric_keys.py [--tracking-uri URI] [--experiment four-bottlenecks] [--parent RUN_ID]

Counts the distinct metric keys over every run of the experiment (``--parent``: that parent run and
its step runs only; ``--parent newest``: the newest parent run), then per namespace (the key's first
segment) and, for ``probe``, ``eval`` and ``report``, per component (its second segment). The tracking URI
defaults to the folder's store (``sqlite:///.bottlenecks/mlflow.db``, or ``MLFLOW_TRACKING_URI``).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter

from mlflow.tracking import MlflowClient

PER_COMPONENT = ("probe", "eval", "report")


def runs(client: MlflowClient, experiment_id: str, parent: str | None) -> list:
    """The runs to count: all of the experiment's, or one parent run (an id, or "newest") and its children."""
    every = []
    token = None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        every.extend(page)
        token = page.token
        if not token:
            break
    if not parent:
        return every
    parents = [r for r in every if "mlflow.parentRunId" not in r.data.tags]
    if parent != "newest":
        parents = [r for r in parents if r.info.run_id == parent]
    if not parents:
        return []
    top = max(parents, key=lambda r: r.info.start_time)
    return [top] + [r for r in every if r.data.tags.get("mlflow.parentRunId") == top.info.run_id]


def counts(keys: set[str]) -> Counter:
    """Keys per prefix: the namespace, and ``namespace/component`` where a namespace holds components."""
    per: Counter = Counter()
    for key in keys:
        head, _, rest = key.partition("/")
        per[head] += 1
        if head in PER_COMPONENT and rest:
            per[f"{head}/{rest.split('/', 1)[0]}"] += 1
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_uri = os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///.bottlenecks/mlflow.db"
    parser.add_argument("--tracking-uri", default=default_uri)
    parser.add_argument("--experiment", default="four-bottlenecks")
    parser.add_argument("--parent", default=None, help="a parent run id, or 'newest': only it and its step runs")
    args = parser.parse_args()
    client = MlflowClient(tracking_uri=args.tracking_uri)
    experiment = client.get_experiment_by_name(args.experiment)
    if experiment is None:
        raise SystemExit(f"no experiment {args.experiment!r} at {args.tracking_uri}")
    found = runs(client, experiment.experiment_id, args.parent)
    keys = {k for r in found for k in r.data.metrics}
    print(f"{args.experiment}: {len(keys)} metric keys over {len(found)} runs")
    per = counts(keys)
    for prefix in sorted(per, key=lambda p: (p.split("/")[0], "/" in p, -per[p], p)):
        indent = "    " if "/" in prefix else "  "
        print(f"{indent}{prefix + '/*':<34}{per[prefix]:>5}")


if __name__ == "__main__":
    main()
