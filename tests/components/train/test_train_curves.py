"""Learning curves: every run logs valid/* at a handful of points under the same keys, and
evaluating changes no weights."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.train.curves import eval_steps

sys.path.insert(0, str(Path(__file__).parent))
from test_train_standins import write_sequence_data  # noqa: E402

MODEL = "test_train_standins:tiny_rnn"


@pytest.fixture(scope="module")
def data(tmp_path_factory, mt):
    return {"classify": str(write_sequence_data(tmp_path_factory.mktemp("seq"), n=96)), "translation": mt}


def _train(tmp_path, name: str, **params) -> tuple[Context, dict]:
    ctx = Context(tmp_path / name)
    return ctx, get("train.model")(ctx, **params)


def _curve(ctx: Context, key: str) -> list[int]:
    return [step for step, _ in ctx.metrics.get(key, [])]


def test_the_default_is_five_evenly_spaced_points_and_the_end():
    assert sorted(eval_steps(None, 1200)) == [200, 400, 600, 800, 960, 1000]  # 960: the late window starts
    assert sorted(eval_steps(None, 10)) == [2, 3, 5, 7, 8]
    assert sorted(eval_steps(None, 1)) == []  # the end only
    assert sorted(eval_steps(5, 20)) == [5, 10, 15]  # the end (20) is finish's
    assert eval_steps(0, 20) == frozenset()


@pytest.mark.parametrize(
    "kind,model,quality",
    [
        ("classify", MODEL, ["valid/acc"]),
        ("translation", "luong-tiny", ["valid/acc", "valid/bleu"]),
        ("translation", "transformer-tiny", ["valid/acc", "valid/bleu"]),
    ],
)
def test_every_task_logs_valid_loss_and_its_quality_metric_at_six_points(tmp_path, data, kind, model, quality):
    size = {"batch_size": 16} if kind == "classify" else {"max_tokens": 40}
    ctx, out = _train(tmp_path, "run", data=data[kind], model=model, steps=12, log_every=3, **size)
    for key in ["valid/loss", *quality]:
        assert _curve(ctx, key) == [2, 4, 6, 8, 10, 12], key
    valid = dict(ctx.metrics["valid/loss"])
    assert valid[12] == out["summary"]["valid_loss"]  # the end's point is the summary's full split
    assert dict(ctx.metrics["valid/acc"])[12] == out["summary"]["valid_acc"]
    assert all(0.0 <= v <= 100.0 for _, v in ctx.metrics.get("valid/bleu", []))
    assert "valid/bleu" not in out["summary"] and out["summary"]["eval_seconds"] >= 0.0


def test_eval_every_zero_logs_only_the_end_and_n_every_n_steps(tmp_path, data):
    ctx, out = _train(tmp_path, "zero", data=data["translation"], model="luong-tiny", steps=6, eval_every=0)
    assert ctx.metrics["valid/loss"] == [(6, out["summary"]["valid_loss"])]  # the summary's number, no curve
    assert "valid/bleu" not in ctx.metrics
    assert out["summary"]["valid_loss"] is not None and out["summary"]["eval_seconds"] == 0.0
    ctx, _ = _train(tmp_path, "three", data=data["classify"], model=MODEL, steps=10, eval_every=3, batch_size=16)
    assert _curve(ctx, "valid/loss") == [3, 6, 9, 10]


def test_eval_batches_caps_the_points_before_the_end(tmp_path, data):
    kw = dict(data=data["classify"], model=MODEL, steps=6, batch_size=16, eval_batch_size=8)
    whole, _ = _train(tmp_path, "whole", **kw)
    capped, out = _train(tmp_path, "capped", eval_batches=1, **kw)
    assert _curve(capped, "valid/loss") == _curve(whole, "valid/loss")
    assert capped.metrics["valid/loss"][:-1] != whole.metrics["valid/loss"][:-1]  # 8 of 24 valid examples
    assert capped.metrics["valid/loss"][-1] == whole.metrics["valid/loss"][-1] == (6, out["summary"]["valid_loss"])


@pytest.mark.parametrize(
    "kind,model,kw",
    [
        ("classify", MODEL, {"batch_size": 16, "overrides": {"dropout": 0.3}}),
        ("translation", "luong-tiny", {"max_tokens": 40, "overrides": {"dropout": 0.2}}),
    ],
)
def test_evaluating_changes_no_weight(tmp_path, data, kind, model, kw):
    runs, kw = {}, dict(data=data[kind], model=model, steps=8, seed=1, **kw)
    for every in (None, 1, 0):
        _, out = _train(tmp_path, f"every_{every}", eval_every=every, **kw)
        runs[every] = torch.load(out["checkpoint"], weights_only=False)["state_dict"]
    for every in (None, 1):
        assert all(torch.equal(runs[every][k], runs[0][k]) for k in runs[0]), every


@pytest.mark.parametrize("schedule,warmup", [("constant", 0), ("cosine", 4)])
def test_the_learning_rate_is_logged_at_its_value_and_in_thousandths(tmp_path, data, schedule, warmup):
    """train/lr at each logged step is the learning rate after that step (the next update's): a
    constant 0.003 is 0.003 at every point, not drawn at 0; train/lr_x1000 is the same in thousandths,
    which MLflow's chart draws at its value where the series never changes."""
    from components.train.optim import lr_factor

    ctx, _ = _train(
        tmp_path, "run", data=data["classify"], model=MODEL, steps=12, batch_size=16, log_every=3,
        lr=0.003, schedule=schedule, warmup=warmup,
    )  # fmt: skip
    factor = lr_factor(schedule, warmup, 12)
    lr, thousandths = ctx.metrics["train/lr"], ctx.metrics["train/lr_x1000"]
    assert [step for step, _ in lr] == [step for step, _ in thousandths] == [3, 6, 9, 12]
    assert [v for _, v in lr] == pytest.approx([0.003 * factor(step) for step, _ in lr], rel=1e-12)
    assert [v for _, v in thousandths] == pytest.approx([1000 * v for _, v in lr], rel=1e-12)
    if schedule == "constant":
        assert {v for _, v in lr} == {0.003} and [v for _, v in thousandths] == pytest.approx([3.0] * 4)
    else:
        assert lr[-1][1] == 0.0 < lr[0][1]  # warmed up, then decayed to 0 at the last step
