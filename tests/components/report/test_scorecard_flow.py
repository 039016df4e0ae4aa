"""report.scorecard inside a real pipeline: matrixed summaries and run ids in, verdicts read back from MLflow."""

import json
import os
import textwrap
from pathlib import Path

import mlflow
import pytest

from components import Context, component
from flows.execute.runner import run
from flows.plan.build import build
from tests.support.mlflow_runs import children

pytestmark = pytest.mark.slow
ACC = {"rnn": (0.13, 0.26, 0.13), "lstm": (0.99, 0.99, 1.0)}


@component("scorecardtest.probe", outputs=["summary"])
def probe(ctx: Context, *, arch: str, seed: int) -> dict:
    """Stand in for a trained probe: report a fixed accuracy per architecture and seed."""
    return {"summary": {"acc": ACC[arch][seed], "loss": None if arch == "rnn" and seed == 1 else 0.5}}


def test_scorecard_step_judges_matrixed_measurements_and_logs_to_mlflow(tmp_path, home):
    path = tmp_path / "card.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: scorecard-e2e
        steps:
          lag:
            uses: tests.components.report.test_scorecard_flow:probe
            with: {arch: "${matrix.arch}", seed: "${matrix.seed}"}
            matrix: {arch: [rnn, lstm], seed: [0, 1, 2]}
          card:
            uses: report.scorecard
            with:
              min_seeds: 3
              measurements: {lag: "${lag.summary}"}
              run_ids: {lag: "${lag.run_id}"}
              expect:
                - {id: 4, claim: LSTM solves the lag the RNN fails, check: beats,
                   a: "lag[arch=lstm].acc", b: "lag[arch=rnn].acc"}
                - {id: 5, claim: no run diverges, check: finite, value: "lag[arch=rnn].loss"}
                - {id: 9, claim: a key the probe does not write, check: above, value: "lag[arch=rnn].mass", than: 0}
              architectures:
                lstm: {B2: {check: at_least, value: "lag[arch=lstm].acc", than: 0.95}}
        """)
    )
    plan = build(path)  # the probe declares no summary keys: its keys are read when it runs
    assert [w.message.split(":")[0] for w in plan.warnings] == ["warning"]
    result = run(plan)
    assert result.ok, result.status
    out = result.outputs["card"]
    card = json.loads(Path(out["scorecard"]).read_text())
    verdicts = {c["id"]: c["verdict"] for c in card["claims"]}
    assert verdicts == {"4": "holds", "5": "inconclusive", "9": "not measured"}  # 5: one diverged seed of three
    lag_runs = {result.outputs[f"lag[arch=lstm,seed={s}]"]["run_id"] for s in range(3)}
    claim4 = card["claims"][0]
    assert lag_runs <= set(claim4["run_id"]) and len(claim4["run_id"]) == 6

    row = children(result.parent_run_id, "scorecard-e2e")["card"]
    assert row["metrics.claim/4"] == 1 and row["metrics.claim/5"] == 0.5 and row["metrics.claims/holds"] == 1
    assert card["architectures"]["lstm"]["B2"]["mean"] == pytest.approx((0.99 + 0.99 + 1.0) / 3)
    assert not [c for c in row.index if c.startswith("metrics.arch/")]  # no one-bar charts on the parent
    files = {a.path for a in mlflow.MlflowClient().list_artifacts(row["run_id"])}
    assert {"scorecard.json", "scorecard.md", "scorecard.html"} <= files

    # where the numbers came from: on the parent run (tags and a file) and in scorecard.json
    import torch

    parent = mlflow.MlflowClient().get_run(result.parent_run_id)
    assert parent.data.tags["env.torch"] == torch.__version__
    assert parent.data.tags["env.cores"] == str(os.cpu_count()) and "env.libraries.sacrebleu" in parent.data.tags
    assert parent.data.tags["env.git_commit"] == card["environment"]["git_commit"]
    assert "environment.json" in {a.path for a in mlflow.MlflowClient().list_artifacts(result.parent_run_id)}
    assert card["environment"]["torch"] == torch.__version__ and card["environment"]["torch_threads"] >= 1
