"""Verdicts you can rerun: the same pipeline twice on the CPU gives identical metrics, and adding
seeds (what an inconclusive verdict suggests) trains only the new seeds."""

import math

import mlflow
import pytest

from flows.execute.runner import run
from flows.plan.build import build
from tests.support.files import write as write_file

pytestmark = pytest.mark.slow

PIPELINE = """\
name: {name}
params: {{seeds: [0, 1]}}
settings: {{executor: threads, workers: 1}}
steps:
  recall:
    uses: data.delayed_recall
    with: {{lag: 3, vocab: 4, n_train: 256, n_valid: 64, n_test: 64}}
  rnn:
    uses: train.model
    with: {{data: "${{recall.dataset}}", model: rnn-small, steps: 20, batch_size: 32, lr: 0.003,
           seed: "${{matrix.seed}}", overrides: {{hidden_size: 16}}}}
    matrix: {{seed: "${{params.seeds}}"}}
"""


def write(tmp_path, name):
    return write_file(tmp_path, PIPELINE.format(name=name), f"{name}.yaml")


def metrics(result, experiment):
    runs = mlflow.search_runs(
        experiment_names=[experiment], filter_string=f"tags.mlflow.parentRunId = '{result.parent_run_id}'"
    )
    out = {}
    for _, row in runs.iterrows():
        for col, value in row.items():
            timing = any(w in col for w in ("seconds", "per_s", "time", "_ms"))
            if col.startswith("metrics.") and not timing and not (isinstance(value, float) and math.isnan(value)):
                out[(row["tags.mlflow.runName"], col)] = value  # (a column another run logged is NaN here)
    return out


def test_the_same_pipeline_twice_on_the_cpu_gives_identical_metrics(tmp_path, home, monkeypatch):
    path = write(tmp_path, "repro-twice")
    first = run(build(path))
    monkeypatch.setenv("BOTTLENECKS_HOME", str(tmp_path / "empty"))  # empty stores: no cache, no checkpoint
    second = run(build(path))
    assert first.ok and second.ok and set(second.status.values()) == {"done"}  # recomputed, not cached
    a, b = metrics(first, "repro-twice"), metrics(second, "repro-twice")
    common = a.keys() & b.keys()
    finals = {(f"rnn[seed={s}]", f"metrics.{m}") for s in (0, 1) for m in ("test/loss", "valid/loss", "test/acc")}
    assert finals <= common
    different = {k: (a[k], b[k]) for k in common if a[k] != b[k]}
    assert different == {}  # bit for bit: timings are the only figures left out


def test_more_seeds_train_only_the_new_seeds(tmp_path, home):
    path = write(tmp_path, "repro-seeds")
    assert run(build(path)).ok
    more = run(build(path, sets=["seeds=[0,1,2,3]"]))  # what an inconclusive verdict's command does
    assert more.ok
    assert {k: v for k, v in more.status.items() if k.startswith("rnn")} == {
        "rnn[seed=0]": "cached",
        "rnn[seed=1]": "cached",
        "rnn[seed=2]": "done",
        "rnn[seed=3]": "done",
    }
    assert more.status["recall"] == "cached"
