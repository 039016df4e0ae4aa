"""A new user's first hour: every printed link opens MLflow's model-training view, a piped run's
scorecard reads one claim a line, `plan --params/--json` shows each step run's resolved parameters,
and `bottlenecks ui` takes MLflow's server down with it."""

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from flows.cli import app

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

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
    import uuid

    from mlflow.tracking import MlflowClient

    from flows.track import links, runs

    name = f"first-hour-{uuid.uuid4().hex[:8]}"
    eid = MlflowClient().create_experiment(name)
    view = "?workflowType=machine_learning"  # MLflow 3's model-training page
    assert f"{name}: http://h:1/#/experiments/{eid}{view}" in runs.experiment_links("http://h:1")
    assert links.mlflow_run(eid, "abc").endswith(f"/#/experiments/{eid}/runs/abc{view}")


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

    from components.registry import get
    from flows.cli.run import _print_reports

    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps(_card()))
    plan = SimpleNamespace(instances={"report": SimpleNamespace(component=get("report.scorecard"))})
    _print_reports(plan, SimpleNamespace(outputs={"report": {"scorecard": str(path)}}))
    text = capsys.readouterr().out
    lines = text.splitlines()
    for n, verdict in ((1, "holds"), (2, "fails"), (3, "not measured")):
        (first,) = [x for x in lines if x.startswith(f"| {n} · B{n} |")]  # the verdicts table
        assert f" {verdict} |" in first and LONG not in first, first
        (line,) = [x for x in lines if x.startswith(f"**B{n} · ")]  # the claim below it, on one line
        assert line.endswith(f"{verdict}** claim {n}: {LONG}"), line
        evidence = text[text.index(f"### Claim {n}\n") :]
        assert "`train.acc`: \\[0.9, 0.8\\]" in evidence and "`probe.slope`: \\[1.5\\]" in evidence
        assert f"- why: because the measured value {n} is what it is, said at some length to need wrapping" in evidence
    assert "╭" not in text and "┃" not in text and "│" not in text  # no Rich box drawing


def test_the_piped_scorecard_of_a_run_goes_through_the_cli_as_markdown(tmp_path):
    """The same through the command's own stdout (CliRunner's is not a terminal)."""
    import typer

    from flows.cli.run import show_on_console

    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps(_card()))
    probe = typer.Typer()
    probe.command()(lambda: show_on_console(str(path), "components.report.console:render"))
    result = runner.invoke(probe, [])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(1 for x in lines if re.match(r"\| \d · B\d \|", x)) == 3, result.output  # verdicts
    assert sum(1 for x in lines if x.startswith("**B") and x.endswith(LONG)) == 3, result.output  # a claim a line


# -- plan --params / --json -------------------------------------------------------------------------------

FULL_TRANSFORMER = {  # pipelines/four_bottlenecks.yaml, profile full, steps.mt_transformer.with
    "model": "transformer-base",
    "max_tokens": 3125,
    "accumulate": 8,
    "steps": 100000,
    "lr": 0.0007,
    "warmup": 4000,
    "optimizer": "adam",
    "schedule": "inverse_sqrt",
    "betas": [0.9, 0.98],
    "label_smoothing": 0.1,
    "bf16": True,
    "checkpoint_every": 1000,
    "average_last": 5,
}


def test_plan_json_has_the_full_profiles_transformer_base_parameters(home):
    result = runner.invoke(app, ["plan", str(FOUR), "--profile", "full", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {"id", "step", "component", "after", "cached", "key", "params"} <= set(rows[0])
    mt = [r for r in rows if r["step"] == "mt_transformer"]
    assert mt, [r["id"] for r in rows]
    for row in mt:
        assert row["component"] == "train.model" and isinstance(row["cached"], bool) and len(row["key"]) == 64
        assert {k: row["params"][k] for k in FULL_TRANSFORMER} == FULL_TRANSFORMER, row["params"]
        assert row["params"]["data"].startswith("${") and row["after"]  # a reference, as text
    assert sorted(r["params"]["seed"] for r in mt) == list(range(len(mt)))


def test_plan_json_of_the_default_profile_is_not_the_full_one(home):
    result = runner.invoke(app, ["plan", str(FOUR), "mt_transformer", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and all(r["step"] == "mt_transformer" for r in rows)
    assert all(r["params"]["model"] != "transformer-base" for r in rows)


def test_plan_params_prints_one_steps_resolved_parameters(home):
    result = runner.invoke(app, ["plan", str(FOUR), "--profile", "full", "--params", "mt_transformer"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    heads = [x for x in lines if not x.startswith(" ")]
    assert heads and all(h.startswith("mt_transformer[") for h in heads), heads
    for name in ("model", "max_tokens", "accumulate", "steps"):
        assert f"    {name}: {json.dumps(FULL_TRANSFORMER[name])}" in lines, result.stdout
    one = runner.invoke(app, ["plan", str(FOUR), "--profile", "full", "--params", heads[0].split()[0]])
    assert one.exit_code == 0 and [x for x in one.stdout.splitlines() if not x.startswith(" ")] == [heads[0]]


def test_plan_with_a_step_that_does_not_exist_exits_2_with_a_suggestion(home):
    result = runner.invoke(app, ["plan", str(FOUR), "--params", "mt_transfomer"])
    assert result.exit_code == 2, result.output
    assert "no step or step run 'mt_transfomer'" in result.output
    assert "did you mean mt_transformer" in result.output


# -- `bottlenecks ui` takes MLflow's server down with it --------------------------------------------------


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_ui_stops_mlflows_server_and_leaves_no_child(tmp_path, signum):
    from flows.services.ports import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "BOTTLENECKS_HOME"))}
    env.update({"BOTTLENECKS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "ui", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not _answers(port):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the MLflow UI never answered"
            time.sleep(0.3)
        children = _descendants(proc.pid)
        assert children, "MLflow's server is not a child of the command"
        proc.send_signal(signum)
        proc.wait(timeout=60)
        assert proc.returncode == 128 + signum, proc.stdout.read()
        assert not _answers(port), "MLflow's server still answers"
        left = {pid for pid in children if _alive(pid)}
        assert not left, f"children left running: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
