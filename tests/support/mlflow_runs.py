"""What a test reads back from MLflow: a pipeline run's step runs."""

import mlflow


def children(parent_id: str, experiment: str) -> dict:
    """The step runs under ``parent_id``, by run name (rows of ``mlflow.search_runs``)."""
    found = mlflow.search_runs(experiment_names=[experiment], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    return {row["tags.mlflow.runName"]: row for _, row in found.iterrows()}
