"""A new user's first hour: every printed link opens MLflow's model-training view, a piped run's
scorecard reads one claim a line, `plan --params/--json` shows each step run's resolved parameters,
and `bottlenecks ui` takes MLflow's server down with it."""

import io
import json
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


# -- a piped run's scorecard ------------------------------------------------------------------------------

LONG = "a claim long enough that a Rich table at eighty columns would wrap it over several lines of its cell"


def _card() -> dict:
    claims = [
        {
            "id": n,
            "bottleneck": f"B{n}",
            "claim": f"claim {n}: {LONG}",
            "expected": "x > 0.5",
            "measured": {"train.acc": [0.9, 0.8], "probe.slope": [1.5]},
            "verdict": verdict,
            "reason": f"because the measured value {n} is what it is, said at some length to need wrapping",
            "settings": "",
            "run_id": ["r1"],
        }
        for n, verdict in ((1, "holds"), (2, "fails"), (3, "not measured"))
    ]
    summary = {"holds": 1, "claims": 3, "fails": 1, "device_dependent": 0, "not_measured": 1}
    summary.update({"device_independent": 3, "device_independent_holds": 1})
    return {"title": "four bottlenecks", "device": "cpu", "summary": summary, "claims": claims, "architectures": {}}


def test_a_piped_runs_scorecard_has_each_claim_on_one_line(tmp_path, capsys):
    from types import SimpleNamespace

    from flows.cli.run import _print_reports

    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps(_card()))
    _print_reports(SimpleNamespace(outputs={"report": {"scorecard": str(path)}, "other": 3}))
    text = capsys.readouterr().out
    for n, verdict in ((1, "holds"), (2, "fails"), (3, "not measured")):
        (line,) = [x for x in text.splitlines() if f"claim {n}: " in x]
        assert line.startswith(f"| {n} | B{n} |") and LONG in line and verdict in line, text
        assert "train.acc" in line and "probe.slope" in line, line
        assert f"because the measured value {n} is what it is, said at some length to need wrapping" in line
    assert "╭" not in text and "┃" not in text and "│" not in text  # no Rich box drawing


def test_the_piped_scorecard_of_a_run_goes_through_the_cli_as_markdown(tmp_path):
    """The same through the command's own stdout (CliRunner's is not a terminal)."""
    import typer

    from flows.cli.run import print_scorecard

    probe = typer.Typer()
    probe.command()(lambda: print_scorecard(_card()))
    result = runner.invoke(probe, [])
    assert result.exit_code == 0, result.output
    assert sum(1 for x in result.output.splitlines() if x.startswith("| ") and LONG in x) == 3, result.output
