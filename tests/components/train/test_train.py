"""train.model: learns, checkpoints, resumes after SIGKILL, records divergence as a result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.registry import ComponentError
from components.train import load_model
from components.train.build import TrainError

sys.path.insert(0, str(Path(__file__).parent))
from test_train_standins import RECORDED_DTYPES, write_sequence_data  # noqa: E402

MODEL = "test_train_standins:tiny_rnn"


def test_learns_and_returns_a_loadable_checkpoint(tmp_path):
    data = write_sequence_data(tmp_path / "data")
    out = get("train.model")(
        Context(tmp_path / "run"),
        data=str(data),
        model=MODEL,
        steps=150,
        batch_size=32,
        lr=1e-2,
        seed=0,
        eval_every=50,
        log_every=10,
    )
    s = out["summary"]
    assert s["steps"] == 150 and s["diverged"] is False and s["params"] > 0
    assert s["valid_acc"] > 0.9 and s["test_acc"] > 0.9  # recall the last token: easy
    model = load_model(out["checkpoint"])
    x = torch.load(data / "test.pt")["x"]
    assert (model(x).argmax(-1) == x[:, -1]).float().mean() > 0.9


def test_logs_stepwise_metrics_and_the_model(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=64)
    ctx = Context(tmp_path / "run")
    out = get("train.model")(ctx, data=str(data), model=MODEL, steps=20, batch_size=16, eval_every=10, log_every=5)
    assert [s for s, _ in ctx.metrics["train/loss"]] == [5, 10, 15, 20]
    assert [s for s, _ in ctx.metrics["valid/acc"]] == [10, 20]
    assert "model" in ctx.models and ctx.metrics["test/acc"] == [(20, out["summary"]["test_acc"])]
    assert ctx.metrics["vitals/steps"] == [(None, 20.0)] and "steps" not in ctx.metrics  # docs/metrics.md


def test_same_seed_same_weights_other_seed_differs(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=64)
    run = lambda d, seed: get("train.model")(
        Context(tmp_path / d),
        data=str(data),
        model=MODEL,  # noqa: E731
        steps=10,
        batch_size=16,
        seed=seed,
    )["checkpoint"]
    a, b, c = (torch.load(run(d, s))["state_dict"] for d, s in (("a", 1), ("b", 1), ("c", 2)))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.slow
def test_resume_after_sigkill_reaches_identical_weights(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=128)
    params = dict(
        data=str(data),
        model=MODEL,
        steps=400,
        batch_size=16,
        lr=3e-3,
        seed=3,
        checkpoint_every=20,
        eval_every=100,
        overrides={"dropout": 0.3},
    )  # dropout: the RNG state must resume too
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        torch.set_num_threads(1)
        from components import Context
        from components.train.trainer import train_model
        train_model.component(Context(sys.argv[1]), **{params!r})
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", script, str(killed)], env=env)
    ckpt = killed / "checkpoints" / "last.pt"
    deadline = time.time() + 60
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "model.pt").exists()
    subprocess.run([sys.executable, "-c", script, str(killed)], env=env, check=True)
    whole = get("train.model")(Context(tmp_path / "whole"), **params)  # uninterrupted, in this process
    resumed = torch.load(killed / "model.pt")
    assert resumed["summary"]["resumed_from_step"] > 0
    assert whole["summary"]["resumed_from_step"] == 0
    weights = torch.load(whole["checkpoint"])["state_dict"]
    for k, v in weights.items():
        assert torch.equal(v, resumed["state_dict"][k]), k


def test_huge_learning_rate_without_clipping_is_a_diverged_result(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=64)
    ctx = Context(tmp_path / "run")
    out = get("train.model")(
        ctx, data=str(data), model=MODEL, steps=50, batch_size=16, optimizer="sgd", lr=1e38, clip="none", log_every=1
    )
    s = out["summary"]
    assert s["diverged"] is True and 1 <= s["diverged_step"] < 50 and s["steps"] == s["diverged_step"] - 1
    assert len(ctx.metrics["train/loss"]) == s["diverged_step"]  # metrics so far are kept
    assert Path(out["checkpoint"]).exists()
    clipped = get("train.model")(
        Context(tmp_path / "clipped"),
        data=str(data),
        model=MODEL,
        steps=50,
        batch_size=16,
        optimizer="sgd",
        lr=1.0,
        clip="norm",
        clip_value=1.0,
    )
    assert clipped["summary"]["diverged"] is False


def test_max_loss_counts_a_blow_up_as_divergence(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=64)
    out = get("train.model")(
        Context(tmp_path / "run"),
        data=str(data),
        model=MODEL,
        steps=50,
        batch_size=16,
        optimizer="sgd",
        lr=1e3,
        clip="none",
        max_loss=100.0,
    )
    assert out["summary"]["diverged"] is True and out["summary"]["diverged_step"] == 2


def test_inverse_sqrt_schedule_peaks_at_warmup(tmp_path):
    from components.train.optim import lr_factor

    f = lr_factor("inverse_sqrt", 100)
    assert f(0) == pytest.approx(0.01) and f(99) == pytest.approx(1.0) and f(399) == pytest.approx(0.5)
    with pytest.raises(TrainError, match="warmup >= 1"):
        lr_factor("inverse_sqrt", 0)


def test_bad_inputs_say_what_to_fix(tmp_path):
    with pytest.raises(ValueError, match="no meta.json"):
        get("train.model")(Context(tmp_path / "r"), data=str(tmp_path), model=MODEL)
    data = write_sequence_data(tmp_path / "data", n=32)
    with pytest.raises(ComponentError, match="model 'no_such_module:f': no module named 'no_such_module'"):
        get("train.model")(Context(tmp_path / "r"), data=str(data), model="no_such_module:f")
    with pytest.raises(TrainError, match="not a bottlenecks checkpoint"):
        torch.save({"x": 1}, tmp_path / "x.pt")
        load_model(tmp_path / "x.pt")


@pytest.mark.parametrize("kind", ["adding", "translation", "digits", "strips", "tagging", "generate"])
def test_every_task_kind_trains_a_zoo_model(tmp_path, kind):
    ctx = Context(tmp_path / "d")
    if kind == "adding":
        data, model = get("data.adding")(ctx, seq_len=20, n_train=64, n_valid=16, n_test=16)["dataset"], "lstm-tiny"
    elif kind == "translation":
        data = get("data.synthetic_translation")(ctx, vocab=6, min_len=2, max_len=6, n_train=64, n_valid=8, n_test=8)[
            "dataset"
        ]
        model = "luong-tiny"
    elif kind == "generate":
        data, model = (
            get("data.spell")(ctx, base=3, length=4, n_train=64, n_valid=16, n_test=16)["dataset"],
            "lstm-generator-small",
        )
    elif kind == "tagging":
        data = get("data.delayed_recall")(ctx, lag=3, target="tag", n_train=64, n_valid=16, n_test=16)["dataset"]
        model = "transformer-tagger-small"
    else:
        data = get("data.digits")(ctx)["dataset"]
        model = "cnn-tiny"
        if kind == "strips":
            data = get("data.digit_strips")(
                Context(tmp_path / "s"), images=data, digits=2, n_train=64, n_valid=16, n_test=16
            )["dataset"]
            model = "captioner-tiny"
    first = None
    for run in ("a", "b"):
        out = get("train.model")(
            Context(tmp_path / run),
            data=data,
            model=model,
            steps=6,
            batch_size=16,
            max_tokens=200 if kind == "translation" else None,
            eval_every=3,
        )
        s = out["summary"]
        assert s["steps"] == 6 and not s["diverged"] and 0 <= s["test_acc"] <= 1 and s["valid_loss"] > 0
        weights = torch.load(out["checkpoint"])["state_dict"]
        if first is None:
            first = weights
    assert all(torch.equal(first[k], weights[k]) for k in first)  # same seed, same result, every kind
    model_back = load_model(out["checkpoint"])
    assert sum(p.numel() for p in model_back.parameters()) == s["params"]


def test_several_outputs_per_step_score_each_and_all_together(tmp_path):
    data = get("data.multi_lookup")(
        Context(tmp_path / "d"), seq_len=8, vocab=4, offsets=[1, 3], n_train=64, n_valid=16, n_test=16
    )["dataset"]
    s = get("train.model")(
        Context(tmp_path / "r"), data=data, model="transformer-tagger-small", steps=5, batch_size=16
    )["summary"]
    assert 0 <= s["test_acc_all"] <= s["test_acc"] <= 1


def test_a_one_to_many_generator_learns_to_spell_numbers(tmp_path):
    # One id in, four digits out: the generator unrolls from one vector and learns every digit.
    data = get("data.spell")(Context(tmp_path / "d"), base=3, length=4, n_train=2000, n_valid=200, n_test=200)[
        "dataset"
    ]
    s = get("train.model")(
        Context(tmp_path / "r"),
        data=data,
        model="lstm-generator-small",
        overrides={"hidden_size": 64, "embed_dim": 32},
        steps=300,
        batch_size=64,
        lr=0.01,
    )["summary"]
    assert s["test_acc"] > 0.95 and s["test_acc_all"] > 0.8  # chance: 1/3 per digit, 1/81 per number
    assert s["test_acc_all"] <= s["test_acc"]


def test_a_generate_task_refuses_a_model_that_is_not_one_to_many(tmp_path):
    data = get("data.spell")(Context(tmp_path / "d"), base=3, length=4, n_train=32, n_valid=8, n_test=8)["dataset"]
    with pytest.raises(TrainError, match="needs a one-to-many model such as lstm-generator-small"):
        get("train.model")(Context(tmp_path / "r"), data=data, model="transformer-tagger-small", steps=2)


@pytest.mark.parametrize("bf16,dtype", [(True, torch.bfloat16), (False, torch.float32)])
def test_bf16_runs_the_training_forward_under_bfloat16_autocast(tmp_path, bf16, dtype):
    RECORDED_DTYPES.clear()
    data = write_sequence_data(tmp_path / "data", n=64)
    s = get("train.model")(
        Context(tmp_path / "r"),
        data=str(data),
        model="test_train_standins:dtype_recording_rnn",
        steps=5,
        batch_size=16,
        bf16=bf16,
        eval_every=0,  # the training steps' forwards, then the end's evaluation only
    )["summary"]
    assert s["steps"] == 5 and not s["diverged"]
    # the head's matmul ran in bfloat16 in every training step (evaluation stays float32)
    assert RECORDED_DTYPES[:5] == [dtype] * 5, RECORDED_DTYPES
    assert set(RECORDED_DTYPES[5:]) == {torch.float32}


def test_translation_run_extended_in_place_resumes_to_the_same_weights(tmp_path):
    data = get("data.synthetic_translation")(
        Context(tmp_path / "d"), vocab=6, min_len=2, max_len=6, n_train=64, n_valid=8, n_test=8
    )["dataset"]
    kw = dict(data=data, model="luong-tiny", overrides={"dropout": 0.3}, max_tokens=60, lr=1e-3, seed=4)
    get("train.model")(Context(tmp_path / "split"), steps=9, **kw)
    resumed = get("train.model")(Context(tmp_path / "split"), steps=25, **kw)
    whole = get("train.model")(Context(tmp_path / "whole"), steps=25, **kw)
    assert resumed["summary"]["resumed_from_step"] == 9
    a, b = torch.load(resumed["checkpoint"])["state_dict"], torch.load(whole["checkpoint"])["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_deterministic_mode_is_scoped_to_the_run(tmp_path):
    data = write_sequence_data(tmp_path / "data", n=64)
    assert not torch.are_deterministic_algorithms_enabled()
    s = get("train.model")(
        Context(tmp_path / "r"), data=str(data), model=MODEL, steps=5, batch_size=16, deterministic=True
    )["summary"]
    assert s["steps"] == 5 and not torch.are_deterministic_algorithms_enabled()


def test_shift_augmentation_moves_images_within_bounds():
    from components.train.tasks import shift_images

    x = torch.zeros(64, 1, 8, 8)
    x[:, :, 4, 4] = 1.0
    torch.manual_seed(0)
    y = shift_images(x, 2)
    rows, cols = (y[:, 0] == 1).nonzero()[:, 1], (y[:, 0] == 1).nonzero()[:, 2]
    assert y.shape == x.shape and len(rows) == 64  # the pixel stays inside and stays one pixel
    assert set(rows.tolist()) == {2, 3, 4, 5, 6} and set(cols.tolist()) == {2, 3, 4, 5, 6}
    assert torch.equal(shift_images(x, 0), x)
