"""What the cache knows a result depends on: `plan` says why a step would be computed again (a
library upgrade, a changed data file, a parameter, an input), and the run computes exactly those."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from components import Context, component
from flows.cli import app
from flows.execute._step_cache import record
from flows.execute.cache import StepCache
from flows.execute.why import reasons
from flows.language.errors import PipelineInvalid
from flows.plan import _libraries
from flows.plan.build import build, mark_fresh
from tests.support.files import write

C = "tests.support.engine_components"
H = "tests.execute.test_cache_why"
PIPE = f"""\
    name: why
    steps:
      nums: {{uses: {C}:numbers, matrix: {{offset: [0, 10]}}, with: {{offset: "${{matrix.offset}}"}}}}
      sum: {{uses: {C}:total, matrix: {{offset: [0, 10]}}, with: {{values: "${{nums.values}}"}}}}
      table: {{uses: {C}:collect, with: {{totals: "${{sum.total}}"}}}}
    """


@component("whytest.lines", outputs=["lines"])
def lines(ctx: Context, *, data_dir: str) -> dict:
    """Count the lines of the files in ``data_dir``."""
    return {"lines": sum(len(p.read_text().splitlines()) for p in sorted(Path(data_dir).iterdir()))}


def upgrade(monkeypatch, to: str = "99.0") -> str:
    """Pretend torch was upgraded; return the version read before."""
    before = _libraries.version("torch")
    real = _libraries.version
    monkeypatch.setattr(_libraries, "version", lambda name: to if name == "torch" else real(name))
    return before


def finished(plan, home) -> None:
    """Leave the cache as a run of ``plan`` that computed every step leaves it."""
    cache = StepCache(home)
    for inst in plan.instances.values():
        work = cache.work_dir(inst.step.id, inst.key)
        result = SimpleNamespace(host="here", device="cpu")
        record(cache, inst, {"run_id": f"run-{inst.id}"}, str(work), result, plan.name)


def why(plan, home) -> dict[str, list[str]]:
    return reasons(plan, StepCache(home))


def test_plan_names_a_library_upgrade_and_what_it_reruns(tmp_path, home, monkeypatch):
    path = write(tmp_path, PIPE)
    finished(build(path), home)
    assert why(build(path), home) == {i: [] for i in build(path).instances}  # unchanged: all cached
    before = upgrade(monkeypatch)
    said = why(build(path), home)
    assert said["nums[offset=0]"] == [f"torch {before} -> 99.0"]
    assert said["sum[offset=10]"] == [f"torch {before} -> 99.0", "input nums[offset=10] reruns"]
    assert said["table"][0] == f"torch {before} -> 99.0" and "input sum[offset=0] reruns" in said["table"]


def test_plan_names_a_parameter_and_the_steps_downstream(tmp_path, home):
    path = write(tmp_path, PIPE)
    finished(build(path), home)
    said = why(build(path, sets=["sum.scale=2.0"]), home)
    assert said["nums[offset=0]"] == [] and said["nums[offset=10]"] == []
    assert said["sum[offset=0]"] == ["parameter scale 1.0 (default) -> 2.0"]  # not written before
    assert said["table"] == ["input sum[offset=0] reruns", "input sum[offset=10] reruns"]


def test_fresh_steps_no_record_and_a_removed_folder_are_reasons_too(tmp_path, home):
    path = write(tmp_path, PIPE)
    plan = build(path)
    assert why(plan, home)["nums[offset=0]"] == ["not run before"]
    finished(plan, home)
    assert mark_fresh(plan.instances, ["sum", "train*"], "--fresh") == ["train*"]
    said = why(plan, home)
    assert said["sum[offset=0]"] == ["--fresh sum"] and said["table"] == ["input sum[offset=0] reruns"]
    assert said["nums[offset=0]"] == [] and plan.instances["table"].fresh  # the run computes it again too
    inst = plan.instances["nums[offset=0]"]
    StepCache(home).work_dir(inst.step.id, inst.key).rmdir()
    assert why(build(path), home)["nums[offset=0]"] == ["its cached result's work folder was removed"]


def test_a_profile_asks_steps_fresh_and_a_pattern_that_names_none_is_an_invalid_pipeline(tmp_path):
    nightly = "profiles: {nightly: {settings: {fresh: [enginetest.total]}}}\n    steps:"
    plan = build(write(tmp_path, PIPE.replace("steps:", nightly, 1)), profile="nightly")
    assert {i: inst.fresh for i, inst in plan.instances.items()} == {
        "nums[offset=0]": "",
        "nums[offset=10]": "",
        "sum[offset=0]": "settings.fresh enginetest.total",
        "sum[offset=10]": "settings.fresh enginetest.total",
        "table": "input sum[offset=0] reruns",
    }
    path = write(tmp_path, PIPE.replace("steps:", "settings: {fresh: [trian*]}\n    steps:", 1))
    with pytest.raises(PipelineInvalid, match=r"fresh pattern 'trian\*' matches no step.*steps: nums, sum, table"):
        build(path)


def test_plan_prints_why_as_a_column_and_in_json(tmp_path, home, monkeypatch):
    path = write(tmp_path, PIPE)
    finished(build(path), home)
    before = upgrade(monkeypatch)
    cli = CliRunner()
    result = cli.invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in json.loads(result.stdout)}
    assert rows["nums[offset=0]"]["why"] == [f"torch {before} -> 99.0"] and not rows["nums[offset=0]"]["cached"]
    table = cli.invoke(app, ["plan", str(path), "nums", "--fresh", "nums[offset=0]"], env={"COLUMNS": "200"})
    assert "--fresh nums[offset=0]" in table.stdout and f"torch {before} -> 99.0" in table.stdout
    bad = cli.invoke(app, ["run", str(path), "--fresh", "nosuch"])
    assert bad.exit_code == 2 and "fresh pattern 'nosuch' matches no step" in bad.output


@pytest.mark.slow
def test_a_run_recomputes_what_an_upgrade_or_a_changed_file_reaches_and_serves_the_rest(tmp_path, home, monkeypatch):
    from flows.execute.runner import run

    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("one\ntwo\n")
    path = write(
        tmp_path,
        f"""\
        name: why-run
        steps:
          lines: {{uses: {H}:lines, with: {{data_dir: "{data}"}}}}
          nums: {{uses: {C}:numbers}}
          sum: {{uses: {C}:total, with: {{values: "${{nums.values}}"}}}}
        """,
    )
    assert set(run(build(path)).status.values()) == {"done"}
    assert set(run(build(path)).status.values()) == {"cached"}  # unchanged
    (data / "a.txt").write_text("one\nTWO\nthree\n")  # the same path, new content
    changed = run(build(path))
    assert changed.status == {"lines": "done", "nums": "cached", "sum": "cached"}
    assert changed.outputs["lines"]["lines"] == 3
    upgrade(monkeypatch)
    assert set(run(build(path)).status.values()) == {"done"}  # all depend on torch
    fresh = build(path)
    mark_fresh(fresh.instances, ["nums"], "--fresh")
    assert run(fresh).status == {"lines": "cached", "nums": "done", "sum": "done"}  # and what reads it
