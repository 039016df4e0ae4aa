"""Every probe in one tiny pipeline through Prefect and MLflow: metrics and PNGs land in MLflow."""

import json
import textwrap
from pathlib import Path

import mlflow
import pytest

from components.context import NAMESPACES
from flows.execute.runner import run
from flows.plan.build import build
from tests.support.mlflow_runs import children

pytestmark = pytest.mark.slow

PIPELINE = """\
name: probes-e2e
steps:
  recall:
    uses: data.delayed_recall
    with: {lag: "${matrix.lag}", vocab: 4, n_train: 128, n_valid: 32, n_test: 32}
    matrix: {lag: [2, 4]}
  rnn:
    uses: train.model
    with: {data: "${recall.dataset}", model: rnn-tiny, steps: 20, batch_size: 32}
    matrix: {lag: [2, 4]}
  exploding:
    uses: train.model
    with: {data: "${recall.dataset}", model: rnn-tiny, steps: 20, batch_size: 32, optimizer: sgd,
           lr: 1.0e+38, clip: none}
    matrix: {lag: [2]}
  classify_diverged:
    uses: eval.classify
    with: {checkpoint: "${exploding.checkpoint}"}
    matrix: {lag: [2]}
  long_lag:
    uses: probe.long_lag
    with: {checkpoints: "${rnn.checkpoint}"}
  gradients:
    uses: probe.gradient_decay
    with: {model: lstm-tiny, length: 20, batch: 4}
  toy:
    uses: data.synthetic_translation
    with: {vocab: 6, min_len: 2, max_len: 8, n_train: 200, n_valid: 20, n_test: 30}
  luong:
    uses: train.model
    with: {data: "${toy.dataset}", model: luong-tiny, steps: 10, max_tokens: 300}
  bleu:
    uses: eval.bleu
    with: {checkpoints: {luong: "${luong.checkpoint}"}, tokenize: none, buckets: [1, 5], n_bootstrap: 20}
  capacity:
    uses: probe.capacity
    with: {checkpoints: {luong: "${luong.checkpoint}"}, buckets: [1, 5]}
  maps:
    uses: probe.attention_maps
    with: {checkpoint: "${luong.checkpoint}", n_stat: 10}
  timing:
    uses: probe.timing
    with: {models: {rnn: rnn-tiny, attn: transformer-encoder-tiny}, lengths: [8, 16], repeats: 1, warmup: 1}
  permutation:
    uses: probe.permutation
    with: {models: {none: transformer-encoder-tiny}, overrides: {none: {positions: none}}}
  entropy:
    uses: probe.attention_entropy
    with: {d_k: [8, 32]}
  params:
    uses: probe.param_count
    with: {model: rnn-tiny, lengths: [4, 8]}
  positions:
    uses: probe.position_similarity
    with: {model: vit-tiny}
"""

PLOTS = {
    "long_lag",
    "gradients",
    "bleu",
    "capacity",
    "maps",
    "timing",
    "entropy",
    "positions",
    "classify_diverged[lag=2]",
}


def test_every_probe_logs_metrics_and_plots_to_mlflow(tmp_path, home):
    path = tmp_path / "probes.yaml"
    path.write_text(textwrap.dedent(PIPELINE))
    result = run(build(path))
    assert result.ok, result.status
    diverged = result.outputs["exploding[lag=2]"]["summary"]
    assert diverged["diverged"] is True  # a result, and the eval after it still ran
    by_name = children(result.parent_run_id, "probes-e2e")
    client = mlflow.MlflowClient()
    for step in (
        "long_lag",
        "gradients",
        "bleu",
        "capacity",
        "maps",
        "timing",
        "permutation",
        "entropy",
        "params",
        "positions",
        "classify_diverged[lag=2]",
    ):
        row = by_name[step]
        metrics = [c for c in row.index if c.startswith("metrics.") and row[c] == row[c]]
        assert metrics, f"{step} logged no metrics"
        outside = [c for c in metrics if c.removeprefix("metrics.").split("/")[0] not in NAMESPACES]
        assert not outside, f"{step} logged metrics in no namespace of docs/metrics.md: {outside}"
        if step in PLOTS:
            files = [a.path for a in client.list_artifacts(row["run_id"])]
            assert any(f.endswith(".png") for f in files), f"{step} logged no PNG: {files}"
    # what MLflow shows is what the probe measured, and the structural answers are the known ones
    lag = result.outputs["long_lag"]["summary"]
    assert by_name["long_lag"]["metrics.probe/long_lag/longest_solved"] == lag["longest_solved"]
    assert lag["chance"] == 0.25 and lag["longest_solved"] == 0  # 20 steps solve no lag
    # a point of an axis is a row of the step's summary.json, not a metric key of its own
    assert "metrics.probe/long_lag/acc/lag_4" not in by_name["long_lag"].index
    table = json.loads(Path(client.download_artifacts(by_name["long_lag"]["run_id"], "summary.json")).read_text())
    assert table["acc/lag_4"] == pytest.approx(lag["acc/lag_4"], abs=1e-6)
    timing = json.loads(Path(client.download_artifacts(by_name["timing"]["run_id"], "summary.json")).read_text())
    assert timing["seq_steps_per_layer/rnn/T_16"] == 16 and timing["seq_steps_per_layer/attn/T_16"] == 1
    assert by_name["permutation"]["metrics.probe/permutation/rel_error/none"] < 1e-4  # no positions: equivariant
    params = by_name["params"]
    assert params["metrics.probe/param_count/params_spread"] == 0 and params["metrics.probe/param_count/runs_all"] == 1
