"""History across runs: seeded parent runs in a temporary MLflow store, regression rules, the CLI."""

import math
import time
import uuid

import mlflow
import pandas as pd
import pytest
from mlflow.entities import Metric
from typer.testing import CliRunner

from flows import home
from flows.cli import app
from flows.ops import history
from flows.track import environment


def seed(pipeline, nights, on_children=False, failed_last=False):
    """One parent run per night with ``metrics``; on_children puts them on a 'report' step run."""
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(pipeline)
    # The engine's artifact folder, not MLflow's default ./mlruns in the working directory.
    exp_id = exp.experiment_id if exp else client.create_experiment(pipeline, artifact_location=home.artifact_root())
    ids = []
    for i, metrics in enumerate(nights):
        parent = client.create_run(
            exp_id, run_name=pipeline, tags={"pipeline": pipeline}, start_time=1_700_000_000_000 + i * 86_400_000
        ).info.run_id
        target = parent
        if on_children:
            target = client.create_run(
                exp_id, run_name="report", tags={"pipeline": pipeline, "step": "report", "mlflow.parentRunId": parent}
            ).info.run_id
            other = client.create_run(
                exp_id,
                run_name="train[arch=lstm]",
                tags={"pipeline": pipeline, "step": "train", "mlflow.parentRunId": parent},
            ).info.run_id
            client.log_batch(other, metrics=[Metric("loss", 1.0, 0, 0)])
            client.set_terminated(other)
        now = int(time.time() * 1000)
        client.log_batch(target, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()])
        if target != parent:
            client.set_terminated(target)
        failed = failed_last and i == len(nights) - 1
        client.set_terminated(parent, "FAILED" if failed else "FINISHED")
        ids.append(parent)
    return ids


def name():
    return f"hist-{uuid.uuid4().hex[:8]}"


STEADY = [{"bleu": 20.0 + d, "claim/b2": 1.0, "claims/holds": 3.0} for d in (0.0, 0.4, -0.3, 0.2)]


def test_table_is_oldest_first_with_parent_metrics():
    p = name()
    ids = seed(p, STEADY)
    frame = history.table(p, last=3)
    assert list(frame.index) == ids[1:]
    assert list(frame.columns) == ["start_time", "status", "bleu", "claim/b2", "claims/holds"]
    assert frame["bleu"].tolist() == [20.4, 19.7, 20.2]
    assert frame["start_time"].is_monotonic_increasing


def test_child_metrics_are_named_by_step_run_when_parent_has_none():
    p = name()
    seed(p, STEADY, on_children=True)
    frame = history.table(p, last=10)
    assert len(frame) == 4
    # by default the scorecard's step run: the one that judged claims
    assert list(frame.columns) == ["start_time", "status", "report/bleu", "report/claim/b2", "report/claims/holds"]
    assert history.regressions(frame, history.Thresholds(0.1)) == []
    everything = history.table(p, last=10, metrics=["*"])
    assert "train[arch=lstm]/loss" in everything.columns
    only_train = history.table(p, metrics=["train[[]*"])
    assert list(only_train.columns) == ["start_time", "status", "train[arch=lstm]/loss"]


def test_metric_beyond_threshold_is_flagged_against_median():
    p = name()
    seed(p, STEADY + [{"bleu": 14.0, "claim/b2": 1.0, "claims/holds": 3.0}])
    frame = history.table(p, last=5)
    flags = history.regressions(frame, history.Thresholds(0.2))
    assert [(f.metric, f.kind) for f in flags] == [("bleu", "threshold")]
    assert flags[0].newest == 14.0 and flags[0].baseline == pytest.approx(20.1)  # median of 4 runs
    assert "30% off the median" in flags[0].message
    # a looser threshold for this metric only
    assert history.regressions(frame, history.parse_thresholds(["0.2", "bl*=0.5"])) == []


def test_claim_flip_is_flagged_even_when_small():
    p = name()
    seed(p, STEADY + [{"bleu": 20.0, "claim/b2": 0.0, "claims/holds": 3.0}])
    flags = history.regressions(history.table(p, last=5), history.Thresholds(0.5))
    assert [(f.metric, f.kind) for f in flags] == [("claim/b2", "regression")]
    assert "claim/b2: holds -> fails" in flags[0].message


def test_a_claims_interval_and_p_value_are_not_read_as_verdicts_or_banded():
    p = name()
    nights = [{"claim/b2": 1.0, "claim/b2/p": 0.001 * (1 + i), "claim/b2/lo": 0.1 + 0.1 * i} for i in range(4)]
    seed(p, nights + [{"claim/b2": 1.0, "claim/b2/p": 0.02, "claim/b2/lo": 0.9}])
    assert history.regressions(history.table(p, last=5), history.Thresholds(0.2)) == []


def test_diverged_newest_value_and_failed_run_are_regressions():
    p = name()
    seed(p, STEADY + [{"bleu": math.nan, "claim/b2": 1.0, "claims/holds": 3.0}], failed_last=True)
    kinds = {(f.metric, f.kind) for f in history.regressions(history.table(p, last=5), history.Thresholds())}
    assert kinds == {("status", "failed"), ("bleu", "threshold")}


def test_bad_threshold_and_unknown_pipeline_explain_themselves():
    with pytest.raises(history.HistoryError, match="expected a number like 0.2"):
        history.parse_thresholds(["bleu=high"])
    with pytest.raises(history.HistoryError, match="no runs of pipeline 'no-such-pipeline'"):
        history.table("no-such-pipeline")
    p = name()
    seed(p, STEADY)
    with pytest.raises(history.HistoryError, match="no metric matches nope"):
        history.table(p, metrics=["nope"])


def test_cli_exits_1_on_regression_and_logs_trend_plot():
    p = name()
    ids = seed(p, STEADY + [{"bleu": 14.0, "claim/b2": 0.0, "claims/holds": 2.0}])
    result = CliRunner().invoke(app, ["history", p, "--last", "5", "--threshold", "0.2"])
    assert result.exit_code == 1, result.output
    assert "REGRESSION claim/b2: holds -> fails" in result.output
    assert "REGRESSION bleu = 14" in result.output
    assert "claims/holds" in result.output  # 2 vs 3 is 33% off
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(ids[-1], "history")}
    assert artifacts == {"history/trend.png", "history/trend.csv"}
    csv = mlflow.artifacts.download_artifacts(run_id=ids[-1], artifact_path="history/trend.csv")
    assert pd.read_csv(csv, index_col=0)["bleu"].iloc[-1] == 14.0


def test_cli_exits_0_without_regression_and_2_for_bad_input():
    p = name()
    seed(p, STEADY)
    ok = CliRunner().invoke(app, ["history", p, "--no-plot", "-m", "bleu"])
    assert ok.exit_code == 0, ok.output
    assert "no regression" in ok.output and "claims/holds" not in ok.output
    bad = CliRunner().invoke(app, ["history", p, "--threshold", "x=y"])
    assert bad.exit_code == 2 and "--threshold 'x=y'" in bad.output


# -- verdicts over time: a regression, a change with its evidence, a change with another machine ---------


def recorded(pipeline, nights):
    """Parent runs as the engine records them: env.* tags, git_commit, claim/<id> verdict codes and a
    scorecard.json whose reason is the evidence. ``nights``: (verdict code, reason, environment) each."""
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(pipeline)
    exp_id = exp.experiment_id if exp else client.create_experiment(pipeline, artifact_location=home.artifact_root())
    ids = []
    for i, (code, reason, env) in enumerate(nights):
        tags = {"pipeline": pipeline, "git_commit": "a" * 40, **environment.as_tags(env)}
        run = client.create_run(exp_id, run_name=pipeline, tags=tags, start_time=1_700_000_000_000 + i * 86_400_000)
        rid = run.info.run_id
        client.log_batch(rid, metrics=[Metric("claim/19", code, 0, 0)])
        verdict = history.verdict_name(code)
        client.log_dict(rid, {"claims": [{"id": "19", "verdict": verdict, "reason": reason}]}, "scorecard.json")
        client.set_terminated(rid)
        ids.append(rid)
    return ids


HERE = environment.describe(import_torch=False)
ELSEWHERE = {**HERE, "machine_id": "0123456789ab", "cpu_model": "Another CPU"}


def test_holds_to_fails_on_one_machine_is_a_regression_and_exits_1():
    p = name()
    recorded(
        p, [(1.0, "at least in every seed (seed 2: 95.3 vs 91.2)", HERE), (0.0, "not at least in every seed", HERE)]
    )
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "regression" and flag.is_regression
    assert "claim/19: holds -> fails (same environment)" in flag.message
    assert "before: at least in every seed (seed 2: 95.3 vs 91.2); now: not at least" in flag.message
    result = CliRunner().invoke(app, ["history", p, "--no-plot"])
    assert result.exit_code == 1 and "REGRESSION claim/19: holds -> fails" in result.output


def test_holds_to_inconclusive_is_a_change_shown_with_its_evidence():
    p = name()
    unsure = "not at least in seed 2: 90.4 vs 92.59; mean margin +6.007 +- 7.815. Inconclusive: about 6 seeds"
    recorded(p, [(1.0, "at least in every seed", HERE), (0.5, unsure, HERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "change" and not flag.is_regression
    assert flag.message.startswith("claim/19: holds -> inconclusive") and "mean margin +6.007 +- 7.815" in flag.message
    result = CliRunner().invoke(app, ["history", p, "--no-plot"])
    assert result.exit_code == 0 and "CHANGE claim/19: holds -> inconclusive" in result.output
    assert "no regression" in result.output


def test_a_flip_that_came_with_another_environment_is_marked_as_such():
    p = name()
    recorded(p, [(1.0, "holds here", HERE), (0.0, "fails there", ELSEWHERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "environment" and not flag.is_regression
    assert "holds -> fails with another environment" in flag.message
    assert f"cpu_model {HERE['cpu_model']} -> Another CPU" in flag.message and "machine_id" in flag.message
    result = CliRunner().invoke(app, ["history", p, "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "CHANGED WITH THE ENVIRONMENT claim/19: holds -> fails" in result.output


def test_runs_before_the_environment_was_recorded_count_as_another_environment():
    p = name()
    recorded(p, [(1.0, "old", {}), (0.0, "new", HERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "environment" and "environment None -> recorded" in flag.message
