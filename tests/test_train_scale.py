"""The trainer at scale: accumulation, token budgets, prefetching, checkpoint averaging, precision, id checks."""
from __future__ import annotations

import pytest
import torch

from components import Context, get
from components.models import build
from components.train import load_model
from components.train.average import average_checkpoints
from components.train.build import TrainError
from components.train.evaluate import evaluate
from components.train.precision import choose
from components.train.tasks import Task, TranslationBatches


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def mt(tmp_path_factory):
    root = tmp_path_factory.mktemp("mt")
    return get("data.synthetic_translation")(Context(root), vocab=12, min_len=2, max_len=12, n_train=200,
                                             n_valid=16, n_test=16)["dataset"]


def _weights(out):
    return torch.load(out["checkpoint"], weights_only=False)["state_dict"]


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_accumulated_step_equals_the_big_batch_step(tmp_path, mt, smoothing):
    kw = dict(data=mt, model="transformer-tiny", overrides={"dropout": 0.0}, steps=2, optimizer="sgd", lr=1.0,
              clip="none", label_smoothing=smoothing, seed=3)
    big = _weights(get("train.model")(Context(tmp_path / "big"), batch_size=16, **kw))
    acc = _weights(get("train.model")(Context(tmp_path / "acc"), batch_size=4, accumulate=4, **kw))
    one = _weights(get("train.model")(Context(tmp_path / "one"), batch_size=4, **kw))
    assert all(torch.allclose(big[k], acc[k], atol=1e-5) for k in big)
    assert not all(torch.allclose(big[k], one[k], atol=1e-3) for k in big)  # the test can tell them apart


def test_token_budget_batches_hold_the_budget_and_cover_every_pair_once_per_epoch(mt):
    task = Task(mt, "cpu")
    src, tgt = task.split("train")
    batches = TranslationBatches(src, tgt, task.pad_id, seed=1, batch_size=1, max_tokens=64)
    seen, step = [], 0
    for epoch in range(2):
        per_epoch = len(batches._epoch(epoch))
        epoch_seen = []
        for _ in range(per_epoch):
            b = batches(step)
            assert b["src"].shape[0] * max(b["src"].shape[1], b["tgt_in"].shape[1] + 1) <= 64
            epoch_seen += batches.batches[step - batches.start]
            step += 1
        assert sorted(epoch_seen) == list(range(len(src)))
        seen.append(epoch_seen)
    assert seen[0] != seen[1]  # each epoch reshuffles


def test_prefetching_changes_no_batch(tmp_path, mt):
    kw = dict(data=mt, model="luong-tiny", steps=6, max_tokens=80, seed=2)
    a = _weights(get("train.model")(Context(tmp_path / "a"), prefetch=0, **kw))
    b = _weights(get("train.model")(Context(tmp_path / "b"), prefetch=3, **kw))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_last_checkpoints_are_averaged_and_the_average_loads_and_evaluates(tmp_path, mt):
    ctx = Context(tmp_path / "avg")
    out = get("train.model")(ctx, data=mt, model="transformer-tiny", steps=6, checkpoint_every=2, average_last=3,
                             batch_size=8, seed=0)
    s = out["summary"]
    assert s["averaged_steps"] == [2, 4, 6]
    snaps = sorted((tmp_path / "avg" / "checkpoints" / "average").glob("step_*.pt"))
    assert len(snaps) == 3  # older snapshots are deleted
    mean = average_checkpoints(snaps)
    states = [torch.load(p, weights_only=False)["state_dict"] for p in snaps]
    k = "generator.bias" if "generator.bias" in mean else next(k for k in mean if mean[k].is_floating_point())
    assert torch.allclose(mean[k], sum(st[k] for st in states) / 3)
    model = load_model(out["checkpoint"])
    assert all(torch.allclose(v, mean[n]) for n, v in model.state_dict().items())
    assert evaluate(model, Task(mt, "cpu"), "valid")["loss"] == pytest.approx(s["valid_loss"], rel=1e-6)
    last = torch.load(tmp_path / "avg" / "checkpoints" / "last.pt", weights_only=False)["state_dict"]
    assert not all(torch.equal(last[n], mean[n]) for n in mean)  # the average is not just the last weights
    with pytest.raises(TrainError, match="set checkpoint_every > 0"):
        get("train.model")(Context(tmp_path / "x"), data=mt, model="transformer-tiny", steps=2, checkpoint_every=0,
                           average_last=5)


def test_token_ids_are_checked_on_the_cpu_before_training(tmp_path, mt):
    with pytest.raises(TrainError, match=r"train split: src id \d+ is out of range for the model's src_vocab_size 5"):
        get("train.model")(Context(tmp_path / "r"), data=mt, model="transformer-tiny", steps=1,
                           overrides={"src_vocab_size": 5})


def test_recurrent_models_keep_fp32_with_tf32_on_cuda_and_transformers_get_bf16():
    assert choose(build("bahdanau-tiny"), "cuda", bf16=True) == "fp32+tf32"
    assert choose(build("seq2seq-tiny"), "cuda:0", bf16=True) == "fp32+tf32"
    assert choose(build("transformer-tiny"), "cuda", bf16=True) == "bf16"
    assert choose(build("bahdanau-tiny"), "cpu", bf16=True) == "bf16"   # CPU: as asked, no cuDNN involved
    assert choose(build("transformer-tiny"), "cpu", bf16=False) == "fp32"


def test_prefetcher_serves_batches_in_order_and_reraises_a_collation_error_on_the_training_thread():
    from components.train.prefetch import Prefetcher

    def batches(i):
        if i == 5:
            raise ValueError("bad example at step 5")
        return {"i": torch.tensor(i)}

    with Prefetcher(batches, start=2, depth=2) as loader:
        assert [int(next(loader)["i"]) for _ in range(3)] == [2, 3, 4]
        with pytest.raises(ValueError, match="bad example at step 5"):
            next(loader)
    assert not loader._thread.is_alive()
