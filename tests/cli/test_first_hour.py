"""A new user's first hour: every printed link opens MLflow's model-training view, a piped run's
scorecard reads one claim a line, `plan --params/--json` shows each step run's resolved parameters,
and `bottlenecks ui` takes MLflow's server down with it."""

import io
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
FOUR = REPO / "pipelines" / "four_bottlenecks.yaml"
runner = CliRunner()


# -- links ------------------------------------------------------------------------------------------------


def test_the_follow_link_opens_the_model_training_view(monkeypatch):
    from flows.track import links

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert (
        links.mlflow_run("7", "abc") == "http://127.0.0.1:5000/#/experiments/7/runs/abc?workflowType=machine_learning"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.org/")
    assert links.mlflow_run("7", "abc") == (
        "https://mlflow.example.org/#/experiments/7/runs/abc?workflowType=machine_learning"
    )
    console = Console(file=io.StringIO(), width=40)
    links.announce(console, "7", "abc", None)
    (line,) = console.file.getvalue().splitlines()
    assert line == "follow: MLflow https://mlflow.example.org/#/experiments/7/runs/abc?workflowType=machine_learning"


def test_the_follow_link_asks_for_the_same_view_as_the_experiment_links():
    import inspect

    from flows.track import links, runs

    assert links.MODEL_TRAINING_VIEW.lstrip("?") in inspect.getsource(runs.experiment_links)
