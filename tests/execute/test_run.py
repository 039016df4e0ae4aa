"""End to end through Prefect and MLflow on temporary stores, read back with mlflow.search_runs."""

import mlflow
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.execute.runner import run
from flows.plan.build import build
from tests.support.files import write
from tests.support.mlflow_runs import children

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("executor")]  # under threads and processes
C = "tests.support.engine_components"


def _tracked(first) -> dict:
    """Assert what MLflow holds for the first run of the e2e-track pipeline; return its step runs."""
    assert first.outputs["table"]["table"] == {"0": 3.0, "10": 33.0}
    assert first.flow_run_id
    parent = mlflow.get_run(first.parent_run_id)
    assert parent.data.tags["pipeline"] == "e2e-track"
    assert parent.data.tags["prefect_flow_run_id"] == first.flow_run_id
    assert parent.data.tags["spec_hash"] and parent.data.params["n"] == "3"
    kids = children(first.parent_run_id, "e2e-track")
    assert set(kids) == {"nums[offset=0]", "nums[offset=10]", "sum[offset=0]", "sum[offset=10]", "table", "train"}
    nums = kids["nums[offset=10]"]
    assert nums["params.offset"] == "10" and nums["tags.cached"] == "false"
    assert nums["tags.component"] == "enginetest.numbers" and nums["tags.matrix.offset"] == "10"
    assert len(nums["tags.cache_key"]) == 64
    history = mlflow.MlflowClient().get_metric_history(nums["run_id"], "enginetest/numbers/value")  # docs/metrics.md
    assert [(m.step, m.value) for m in history] == [(0, 10.0), (1, 11.0), (2, 12.0)]
    artifacts = [a.path for a in mlflow.MlflowClient().list_artifacts(nums["run_id"])]
    assert "numbers.txt" in artifacts
    return kids


def test_run_tracks_everything_reruns_from_cache_and_no_cache_recomputes(tmp_path, home, executor):
    """A run tracked in MLflow, its rerun from the cache, a changed parameter recomputing only what
    depends on it; ``--no-cache`` trains from step 0, not from the finished run's last checkpoint,
    and a recompute that fails leaves the finished outputs in the cache, one that succeeds replaces them.
    The last part is the parent's work (the cache, the work folders), the same whatever runs the
    steps: it runs under threads only, sparing four runs that each start a pool of processes."""
    path = write(
        tmp_path,
        f"""\
        name: e2e-track
        params: {{n: 3}}
        steps:
          nums:
            uses: {C}:numbers
            with: {{n: "${{params.n}}", offset: "${{matrix.offset}}"}}
            matrix: {{offset: [0, 10]}}
          sum:
            uses: {C}:total
            with: {{values: "${{nums.values}}"}}
            matrix: {{offset: [0, 10]}}
          table:
            uses: {C}:collect
            with: {{totals: "${{sum.total}}"}}
          train: {{uses: {C}:slow_train, with: {{steps: 3, seconds_per_step: 0.0, started_file: "{tmp_path / "s"}"}}}}
        """,
    )
    first = run(build(path))
    assert first.ok and set(first.status.values()) == {"done"}
    kids = _tracked(first)
    assert first.outputs["train"]["resumed_from"] == 0

    second = run(build(path))
    assert set(second.status.values()) == {"cached"}
    assert second.outputs["table"] == first.outputs["table"]
    kids2 = children(second.parent_run_id, "e2e-track")
    assert kids2["sum[offset=10]"]["tags.reused_from"] == kids["sum[offset=10]"]["run_id"]
    assert kids2["sum[offset=10]"]["metrics.enginetest/total/total"] == 33.0  # results copied onto the cached run

    third = run(build(path, sets=["sum.scale=2"]))
    assert third.status == {
        "nums[offset=0]": "cached",
        "nums[offset=10]": "cached",
        "sum[offset=0]": "done",
        "sum[offset=10]": "done",
        "table": "done",
        "train": "cached",
    }
    assert third.outputs["table"]["table"] == {"0": 6.0, "10": 66.0}
    if executor == "threads":
        _no_cache_recomputes(path, home, first.outputs["train"]["run_id"], tmp_path / "s")


def _no_cache_recomputes(path, home, old: str, started):
    """``use_cache=False`` recomputes every step from an empty folder, replacing the cached outputs
    only when it succeeds (the train step of the e2e-track pipeline, finished once as ``old``)."""
    fresh = run(build(path), use_cache=False)
    assert set(fresh.status.values()) == {"done"}
    assert fresh.outputs["train"]["resumed_from"] == 0  # not 3: the finished checkpoint is not resumed
    again = run(build(path))
    assert set(again.status.values()) == {"cached"}
    assert again.outputs["train"]["run_id"] == fresh.outputs["train"]["run_id"]
    work = home / "work"
    assert len([p for p in work.iterdir() if p.name.startswith("train-")]) == 1  # the replaced folder is gone
    assert old != fresh.outputs["train"]["run_id"]

    started.unlink()
    started.mkdir()  # the step now fails as it starts
    failed = run(build(path), use_cache=False)
    assert failed.status["train"] == "failed"
    kept = run(build(path))
    assert (
        kept.status["train"] == "cached" and kept.outputs["train"] == again.outputs["train"]
    )  # nothing computed was lost


def test_failing_branch_does_not_stop_others_retries_are_honoured_and_rerun_resumes(tmp_path, home):
    marker = tmp_path / "fixed"
    path = write(
        tmp_path,
        f"""\
        name: e2e-fail
        steps:
          good: {{uses: {C}:numbers}}
          good_sum: {{uses: {C}:total, with: {{values: "${{good.values}}"}}}}
          bad: {{uses: {C}:fail, with: {{message: "disk on fire", marker: "{marker}"}}}}
          after_bad: {{uses: {C}:numbers, needs: [bad]}}
          flaky:
            uses: {C}:flaky
            with: {{counter: "{tmp_path / "count"}", succeed_on: 2}}
            retries: 1
        """,
    )
    cli = CliRunner()
    result = cli.invoke(app, ["run", str(path)])
    assert result.exit_code == 1
    assert "step bad failed: RuntimeError: disk on fire" in result.output
    assert "not run because an upstream step failed: after_bad" in result.output
    parent_id = mlflow.search_runs(
        experiment_names=["e2e-fail"], filter_string="tags.pipeline = 'e2e-fail' and attributes.run_name = 'e2e-fail'"
    ).iloc[0]["run_id"]
    kids = children(parent_id, "e2e-fail")
    assert kids["good_sum"]["status"] == "FINISHED" and kids["bad"]["status"] == "FAILED"
    assert kids["bad"]["tags.error"] == "RuntimeError: disk on fire"
    assert "after_bad" not in kids

    marker.write_text("ok")
    again = run(build(path))
    assert again.ok
    assert again.status == {
        "good": "cached",
        "good_sum": "cached",
        "bad": "done",
        "after_bad": "done",
        "flaky": "cached",
    }
    assert again.outputs["flaky"]["attempts"] == 2  # cached from the first run: its one retry succeeded
