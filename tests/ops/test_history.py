"""History across runs: parent and step runs seeded in the session's MLflow store, the judge's rules, the CLI."""

import getpass
import math
import os
import socket
import time

import mlflow
import pandas as pd
import pytest
from mlflow.entities import Metric
from typer.testing import CliRunner

from flows.cli import app
from flows.ops import history
from flows.track import environment, zombies
from tests.support.history_runs import DAY, T0, experiment, name, night, seed, trained


def cli(*args):
    return CliRunner().invoke(app, ["history", *args])


STEADY = [{"bleu": 20.0 + d, "claim/b2": 1.0, "claims/holds": 3.0} for d in (0.0, 0.4, -0.3, 0.2)]


# -- reading: parent runs, step runs grouped over seeds, cached steps --------------------------------------


def test_table_is_oldest_first_with_parent_metrics():
    p = name()
    ids = seed(p, STEADY)
    frame = history.table(p, last=3)
    assert list(frame.index) == ids[1:]
    assert list(frame.columns) == ["start_time", "status", "cached", "bleu", "claim/b2", "claims/holds"]
    assert frame["bleu"].tolist() == [20.4, 19.7, 20.2]
    assert frame["start_time"].is_monotonic_increasing


def test_child_metrics_are_named_by_step_run_when_parent_has_none():
    p = name()
    seed(p, STEADY, on_children=True)
    frame = history.table(p, last=10)
    assert len(frame) == 4
    # by default the scorecard's step run: the one that judged claims
    assert list(frame.columns)[3:] == ["report/bleu", "report/claim/b2", "report/claims/holds"]
    assert history.regressions(frame, history.Thresholds(0.1)) == []
    only_train = history.table(p, metrics=["train[[]*"])
    assert list(only_train.columns)[3:] == ["train[arch=lstm]/loss"]


def test_metric_globs_reach_step_runs_grouped_over_seeds_with_cached_steps_marked():
    p = name()
    trained(p, [[0.50, 0.52, 0.48], [0.51, 0.49, 0.50]], cached=True)
    frame = history.table(p, metrics=["train*"])  # the parent has metrics of its own; the glob reaches the steps
    assert list(frame.columns)[3:] == ["train[arch=lstm]/test/acc"]
    rid = frame.index[-1]
    assert frame.attrs["seeds"][rid]["train[arch=lstm]/test/acc"] == (0.51, 0.49, 0.50)  # ordered by seed
    assert frame["train[arch=lstm]/test/acc"].iloc[-1] == pytest.approx(0.50)
    assert frame["cached"].tolist() == ["3/3", "3/3"]
    text = history.render(frame, [])
    assert "0.5 ± 0.01" in text and "(cached steps)" in text and "3/3" in text
    assert list(history.table(p).columns)[3:] == ["claims/holds"]  # without -m: the parent's own


def test_older_metric_names_are_read_under_their_current_names():
    p = name()
    night(p, 0, steps={f"train[seed={s}]": {"test_acc": v} for s, v in enumerate([0.5, 0.52, 0.48])})
    night(p, 1, steps={f"train[seed={s}]": {"test/acc": v} for s, v in enumerate([0.9, 0.91, 0.92])})
    frame = history.table(p, metrics=["train/*"])
    assert list(frame.columns)[3:] == ["train/test/acc"]  # test_acc, logged before the namespace, is test/acc
    assert frame["train/test/acc"].tolist() == pytest.approx([0.5, 0.91])
    (flag,) = history.regressions(frame, history.Thresholds())
    assert flag.kind == "improvement"


# -- direction and noise ------------------------------------------------------------------------------------


def test_a_training_metric_better_beyond_its_seed_noise_is_an_improvement_and_exits_0():
    p = name()
    trained(p, [[0.50, 0.52, 0.48], [0.51, 0.49, 0.50], [0.99, 1.00, 0.98]])
    (flag,) = history.regressions(history.table(p, metrics=["train*"]), history.Thresholds())
    assert (flag.metric, flag.kind, flag.direction) == ("train[arch=lstm]/test/acc", "improvement", "better")
    assert "0.5 ± 0.01 (3 seeds) -> 0.99 ± 0.01 (3 seeds): up 0.49" in flag.message
    assert "Welch t over 3 and 3 seeds" in flag.message
    result = cli(p, "-m", "train*", "--no-plot")
    assert result.exit_code == 0, result.output
    assert "IMPROVEMENT train[arch=lstm]/test/acc" in result.output and "1 improvement(s)" in result.output


def test_a_training_metric_worse_beyond_its_seed_noise_exits_1_naming_metric_values_and_interval():
    p = name()
    trained(p, [[0.91, 0.90, 0.92], [0.80, 0.79, 0.81]])
    result = cli(p, "-m", "train*", "--no-plot")
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("REGRESSION"))
    assert line.startswith("REGRESSION train[arch=lstm]/test/acc: 0.91 ± 0.01 (3 seeds) -> 0.8 ± 0.01 (3 seeds)")
    assert "down 0.11, 95% interval of the change [-0.1" in line and "(same environment)" not in line  # none recorded


def test_one_value_a_run_falls_back_to_the_relative_threshold_and_says_so():
    p = name()
    seed(p, STEADY + [{"bleu": 14.0, "claim/b2": 1.0, "claims/holds": 3.0}])
    judged = history.judge(history.table(p, last=5), history.Thresholds(0.2))
    (flag,) = judged.flags
    assert (flag.metric, flag.kind) == ("bleu", "regression")
    assert flag.newest == 14.0 and flag.baseline == pytest.approx(20.1)  # median of 4 runs
    assert "30% below the median 20.1" in flag.message and "judged by the relative threshold 20%" in flag.message
    assert any("one value a run" in note for note in judged.notes)
    assert history.regressions(history.table(p, last=5), history.parse_thresholds(["0.2", "bl*=0.5"])) == []


def test_claim_flips_follow_the_verdict_order():
    p = name()
    seed(p, STEADY + [{"bleu": 20.0, "claim/b2": 0.0, "claims/holds": 3.0}])
    flags = history.regressions(history.table(p, last=5), history.Thresholds(0.5))
    assert [(f.metric, f.kind) for f in flags] == [("claim/b2", "regression")]
    assert "claim/b2: holds -> fails" in flags[0].message


def test_diverged_newest_value_and_failed_run_are_regressions():
    p = name()
    seed(p, STEADY + [{"bleu": math.nan, "claim/b2": 1.0, "claims/holds": 3.0}], failed_last=True)
    kinds = {(f.metric, f.kind) for f in history.regressions(history.table(p, last=5), history.Thresholds())}
    assert kinds == {("status", "failed"), ("bleu", "regression")}


def test_bad_threshold_and_unknown_pipeline_explain_themselves():
    with pytest.raises(history.HistoryError, match="expected a number like 0.2"):
        history.parse_thresholds(["bleu=high"])
    with pytest.raises(history.HistoryError, match="no runs of pipeline 'no-such-pipeline'"):
        history.table("no-such-pipeline")
    p = name()
    seed(p, STEADY)
    with pytest.raises(history.HistoryError, match="no metric matches nope"):
        history.table(p, metrics=["nope"])


# -- a changed pipeline, a run still running, slots that did not run -----------------------------------------


def test_a_changed_pipeline_is_reported_with_its_difference_not_as_a_regression():
    p = name()
    client = mlflow.MlflowClient()
    texts = ["name: x\nparams: {threshold: 0.5}\n", "name: x\nparams: {threshold: 0.9}\n"]
    for i, (code, text) in enumerate(zip((1.0, 0.0), texts)):
        rid = night(p, i, own={"claim/b2": code}, tags={"spec_hash": f"hash{i}"})
        client.log_text(rid, text, "pipeline/x.yaml")
    flags = history.regressions(history.table(p), history.Thresholds())
    assert [f.kind for f in flags] == ["pipeline", "pipeline"]
    assert "-params: {threshold: 0.5}\n+params: {threshold: 0.9}" in flags[0].message
    assert flags[1].message.startswith("claim/b2: holds -> fails (worse) with a changed pipeline")
    result = cli(p, "--no-plot")
    assert result.exit_code == 0, result.output
    assert "PIPELINE CHANGED the pipeline changed between run" in result.output


def test_a_run_still_running_is_named_and_nothing_is_logged_into_it():
    p = name()
    done = trained(p, [[0.9, 0.91, 0.92], [0.9, 0.91, 0.92]])
    live_tags = {zombies.HOST: socket.gethostname(), zombies.PID: str(os.getpid())}
    live = night(p, 2, own={"claims/holds": math.nan}, tags=live_tags, status="RUNNING", start=int(time.time() * 1000))
    frame = history.table(p)
    assert list(frame.index) == done
    judged = history.judge(frame, history.Thresholds())
    assert judged.notes[0] == f"run {live} is still running: judged the one before it, {done[-1]}"
    result = cli(p, "--plot")
    assert result.exit_code == 0, result.output
    assert f"run {live} is still running" in result.output
    assert mlflow.MlflowClient().list_artifacts(live, "history") == []
    assert {a.path for a in mlflow.MlflowClient().list_artifacts(done[-1], "history")} == {
        "history/trend.png",
        "history/trend.csv",
    }


def test_slots_that_did_not_run_are_shown_never_judged():
    p = name()
    seed(p, STEADY[:2])
    client = mlflow.MlflowClient()
    tags = {
        "pipeline": p,
        "bottlenecks.slot": "missed",
        "bottlenecks.slot_reason": "serve was down",
        "bottlenecks.slot_time": "2023-11-16T02:00:00+00:00",
    }
    slot = client.create_run(experiment(p), run_name=f"{p} missed", tags=tags, start_time=T0 + DAY + 3_600_000)
    client.set_terminated(slot.info.run_id)
    frame = history.table(p)
    assert len(frame) == 2 and [s.kind for s in frame.attrs["slots"]] == ["missed"]
    assert history.regressions(frame, history.Thresholds()) == []
    text = history.render(frame, [])
    assert "11-16 02:00 missed" in text and "missed 2023-11-16 02:00 UTC: serve was down" in text


# -- the CLI -----------------------------------------------------------------------------------------------


def test_cli_exits_1_on_regression_and_logs_trend_plot():
    p = name()
    ids = seed(p, STEADY + [{"bleu": 14.0, "claim/b2": 0.0, "claims/holds": 2.0}])
    result = cli(p, "--last", "5", "--threshold", "0.2", "--plot")
    assert result.exit_code == 1, result.output
    assert "REGRESSION claim/b2: holds -> fails" in result.output
    assert "REGRESSION bleu = 14 is 30% below the median" in result.output
    assert "REGRESSION claims/holds = 2 is 33% below" in result.output
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(ids[-1], "history")}
    assert artifacts == {"history/trend.png", "history/trend.csv"}
    csv = mlflow.artifacts.download_artifacts(run_id=ids[-1], artifact_path="history/trend.csv")
    assert pd.read_csv(csv, index_col=0)["bleu"].iloc[-1] == 14.0


def test_cli_exits_0_without_regression_and_2_for_bad_input():
    p = name()
    seed(p, STEADY)
    ok = cli(p, "--no-plot", "-m", "bleu")
    assert ok.exit_code == 0, ok.output
    assert "no regression" in ok.output and "claims/holds" not in ok.output
    bad = cli(p, "--threshold", "x=y")
    assert bad.exit_code == 2 and "--threshold 'x=y'" in bad.output


# -- verdicts over time: a regression, a change with its evidence, a change with another machine ---------


def recorded(pipeline, nights):
    """Parent runs as the engine records them: env.* tags, git_commit, claim/<id> verdict codes and a
    scorecard.json whose reason is the evidence. ``nights``: (verdict code, reason, environment) each."""
    client = mlflow.MlflowClient()
    exp_id = experiment(pipeline)
    ids = []
    for i, (code, reason, env) in enumerate(nights):
        tags = {"pipeline": pipeline, "git_commit": "a" * 40, **environment.as_tags(env)}
        run = client.create_run(exp_id, run_name=pipeline, tags=tags, start_time=T0 + i * DAY)
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
    result = cli(p, "--no-plot")
    assert result.exit_code == 1 and "REGRESSION claim/19: holds -> fails" in result.output


def test_holds_to_inconclusive_is_a_change_shown_with_its_evidence():
    p = name()
    unsure = "not at least in seed 2: 90.4 vs 92.59; mean margin +6.007 +- 7.815. Inconclusive: about 6 seeds"
    recorded(p, [(1.0, "at least in every seed", HERE), (0.5, unsure, HERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "change" and not flag.is_regression
    assert flag.message.startswith("claim/19: holds -> inconclusive (worse)")
    assert "mean margin +6.007 +- 7.815" in flag.message
    result = cli(p, "--no-plot")
    assert result.exit_code == 0 and "CHANGE claim/19: holds -> inconclusive" in result.output
    assert "no regression" in result.output


def test_a_flip_that_came_with_another_environment_is_marked_as_such():
    p = name()
    recorded(p, [(1.0, "holds here", HERE), (0.0, "fails there", ELSEWHERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "environment" and not flag.is_regression
    assert "holds -> fails (worse) with another environment" in flag.message
    assert f"cpu_model {HERE['cpu_model']} -> Another CPU" in flag.message and "machine_id" in flag.message
    result = cli(p, "--no-plot")
    assert result.exit_code == 0, result.output
    assert "CHANGED WITH THE ENVIRONMENT claim/19: holds -> fails" in result.output


def test_runs_before_the_environment_was_recorded_count_as_another_environment():
    p = name()
    recorded(p, [(1.0, "old", {}), (0.0, "new", HERE)])
    (flag,) = history.regressions(history.table(p), history.Thresholds())
    assert flag.kind == "environment" and "environment None -> recorded" in flag.message


def test_a_run_an_operator_stopped_is_named_with_who_stopped_it_and_never_a_regression():
    p = name()
    base = trained(p, [[0.90, 0.91, 0.92], [0.90, 0.91, 0.92]])
    os.environ.pop("BOTTLENECKS_STOPPED_BY", None)
    who = zombies.who_stopped("stopped by SIGTERM")
    try:
        user = getpass.getuser()
    except Exception:  # a uid without a name (a container's): the uid, as who_stopped says it
        user = str(os.getuid())
    assert who == f"SIGTERM, user {user} on {socket.gethostname()}"
    assert zombies.who_stopped("stopped by SIGINT").startswith("Ctrl-C (SIGINT), user ")
    assert zombies.who_stopped("interrupted (KeyboardInterrupt)").startswith("Ctrl-C (SIGINT), user ")
    assert zombies.who_stopped(f"its process 12 on {socket.gethostname()} is gone (killed or crashed)") is None
    tags = {zombies.REASON: "stopped by SIGTERM", zombies.STOPPED_BY: who}
    stopped = night(p, 2, own={"claims/holds": 1.0}, tags=tags, status="KILLED")  # a part of a night
    legacy = night(p, 3, tags={zombies.REASON: "stopped by SIGINT"}, status="KILLED")  # before the tag
    result = cli(p, "--no-plot")
    assert result.exit_code == 0, result.output
    assert "REGRESSION" not in result.output
    assert f"run {stopped} was stopped by {who}: not judged (no regression); judged {base[-1]}" in result.output
    assert f"run {legacy} was stopped by SIGINT: not judged (no regression); judged {base[-1]}" in result.output
    assert "no regression in the newest of 2 run(s)" in result.output

    crashed = night(p, 4, tags={zombies.REASON: "its process 12 on h is gone (killed or crashed)"}, status="KILLED")
    result = cli(p, "--no-plot")
    assert result.exit_code == 1, result.output
    assert (
        f"REGRESSION the newest run {crashed[:8]} was KILLED: its process 12 on h is gone (killed or crashed)"
        in result.output
    )


def test_history_writes_nothing_unless_asked():
    p = name()
    ids = seed(p, STEADY)
    assert cli(p, "-m", "bleu").exit_code == 0
    assert mlflow.MlflowClient().list_artifacts(ids[-1], "history") == []


def test_two_files_sharing_a_name_are_told_apart_by_the_file(tmp_path):
    p = name()
    mine, other = tmp_path / "mine.yaml", tmp_path / "other.yaml"
    for f in (mine, other):
        f.write_text(f"name: {p}\nsteps:\n  d: {{uses: data.digits}}\n")
    for i, bleu in enumerate((20.0, 20.4, 19.8, 20.1)):
        night(p, i, own={"bleu": bleu}, tags={"pipeline_path": str(mine.resolve()), "pipeline_file": "mine.yaml"})
    night(p, 4, own={"bleu": 3.0}, tags={"pipeline_path": str(other.resolve()), "pipeline_file": "other.yaml"})
    by_name = cli(p, "-m", "bleu", "--threshold", "0.2")
    assert by_name.exit_code == 1  # the other file's deliberate mistake is the newest run of the name
    assert f"2 pipeline files share the name {p!r}: " in by_name.output
    assert "pass the file (`bottlenecks history FILE.yaml`) to follow one" in by_name.output
    by_file = cli(str(mine), "-m", "bleu", "--threshold", "0.2")
    assert by_file.exit_code == 0, by_file.output  # its own four runs, steady
    assert "share the name" not in by_file.output
