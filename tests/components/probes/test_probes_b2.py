"""B2 probes: gradient decay (rho) and accuracy against lag."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.train.checkpoint import save_model

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

sys.path.insert(0, str(Path(__file__).parents[1] / "train"))
from test_train_standins import linear_rnn  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_linear_rnn_with_w_09_recovers_rho_09(tmp_path):
    out = get("probe.gradient_decay")(Context(tmp_path), model="test_train_standins:linear_rnn", length=40)
    assert out["summary"]["rho"] == pytest.approx(0.9, abs=5e-4)
    assert Path(out["plot"]).stat().st_size > 0
    half = get("probe.gradient_decay")(
        Context(tmp_path / "h"), model="test_train_standins:linear_rnn", overrides={"decay": 0.5}, length=40
    )
    assert half["summary"]["rho"] == pytest.approx(0.5, abs=5e-4)


def test_zoo_models_at_init_order_as_the_story_says(tmp_path):
    rho = {
        m: get("probe.gradient_decay")(Context(tmp_path / m), model=m, length=60, batch=8)["summary"]["rho"]
        for m in ("rnn-small", "lstm-small", "transformer-encoder-small")
    }
    assert rho["rnn-small"] < rho["lstm-small"] - 0.05  # gates decay slower
    assert abs(rho["transformer-encoder-small"] - 1) < 0.01  # no distance decay


def test_a_checkpoint_reports_rho_of_its_weights_and_rho_init_of_its_architecture(tmp_path):
    # a linear RNN built with decay 0.9 whose saved recurrence was changed to 0.5 * I: the trained
    # weights decay by exactly 0.5 per step, a fresh copy of the architecture by 0.9
    net = linear_rnn(decay=0.9)
    with torch.no_grad():
        net.W.copy_(0.5 * torch.eye(8))
    ckpt = tmp_path / "model.pt"
    save_model(ckpt, net, "test_train_standins:linear_rnn", {"decay": 0.9})
    ctx = Context(tmp_path / "p")
    s = get("probe.gradient_decay")(ctx, model=str(ckpt), length=30, batch=4)["summary"]
    assert s["rho"] == pytest.approx(0.5, abs=5e-4) and s["rho_init"] == pytest.approx(0.9, abs=5e-4)
    assert s["grad/d_5"] == pytest.approx(0.5**5, rel=1e-3)
    assert len(ctx.metrics["probe/gradient_decay/grad_norm/trained"]) == 30
    assert len(ctx.metrics["probe/gradient_decay/grad_norm/init"]) == 30


def test_long_lag_reports_accuracy_per_lag_and_longest_solved(tmp_path):
    ckpts = {}
    for lag in (2, 12):
        data = get("data.delayed_recall")(
            Context(tmp_path / f"d{lag}"), lag=lag, vocab=4, n_train=512, n_valid=64, n_test=128
        )["dataset"]
        ckpts[f"lag={lag}"] = get("train.model")(
            Context(tmp_path / f"t{lag}"),
            data=data,
            model="lstm-tiny",
            steps=150 if lag == 2 else 5,
            lr=1e-2,
            batch_size=32,
        )["checkpoint"]
    ctx = Context(tmp_path / "p")
    s = get("probe.long_lag")(ctx, checkpoints=ckpts, threshold=0.9)["summary"]
    direct = get("eval.classify")(Context(tmp_path / "c"), checkpoint=ckpts["lag=12"])["summary"]["acc"]
    assert s["acc/lag_12"] == pytest.approx(direct, abs=1e-6)
    assert s["acc/lag_2"] >= 0.9 > s["acc/lag_12"]  # 150 steps solve lag 2; 5 steps cannot solve lag 12
    assert s["longest_solved"] == 2 and s["chance"] == 0.25
    assert any(p.suffix == ".png" for p in ctx.artifacts)
