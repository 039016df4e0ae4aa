"""The trainer at scale: accumulation, token budgets, prefetching, checkpoint averaging, precision, id checks."""

from __future__ import annotations

import pytest
import torch

from components import Context, get
from components.models import build
from components.train import load_model
from components.train.average import average_checkpoints
from components.train.build import TrainError, build_model, data_overrides
from components.train.evaluate import evaluate
from components.train.precision import choose
from components.train.tasks import Task, TranslationBatches


def _weights(out):
    return torch.load(out["checkpoint"], weights_only=False)["state_dict"]


def _plain_sgd(mt, **changes):
    """A dropout-free tiny Transformer on plain SGD: two runs with equal gradients end equal."""
    return (
        dict(
            data=mt, model="transformer-tiny", overrides={"dropout": 0.0}, optimizer="sgd", lr=1.0, clip="none", seed=3
        )
        | changes
    )


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_accumulated_step_equals_the_big_batch_step(tmp_path, mt, smoothing):
    kw = _plain_sgd(mt, steps=2, label_smoothing=smoothing)
    big = _weights(get("train.model")(Context(tmp_path / "big"), batch_size=16, **kw))
    acc = _weights(get("train.model")(Context(tmp_path / "acc"), batch_size=4, accumulate=4, **kw))
    one = _weights(get("train.model")(Context(tmp_path / "one"), batch_size=4, **kw))
    assert all(torch.allclose(big[k], acc[k], atol=1e-5) for k in big)
    assert not all(torch.allclose(big[k], one[k], atol=1e-3) for k in big)  # the test can tell them apart


def _acc_kw(mt):
    return _plain_sgd(mt, steps=3, batch_size=4, accumulate=4, log_every=1)


def test_micro_batches_merged_into_fewer_passes_give_the_same_step(tmp_path, mt):
    """On a GPU the trainer puts a step's micro-batches in as few passes as fit: the same data, the
    same update (up to float rounding), whatever the device's memory."""
    kw = _acc_kw(mt)
    ref = get("train.model")(Context(tmp_path / "four"), **kw)
    assert ref["summary"]["passes_per_step"] == 4  # on a CPU, one pass per micro-batch by default
    for n in (1, 2, 3):
        out = get("train.model")(Context(tmp_path / f"p{n}"), passes=n, **kw)
        assert out["summary"]["passes_per_step"] == n
        a, b = _weights(ref), _weights(out)
        assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a), n


def test_a_step_that_runs_out_of_device_memory_is_retried_in_more_passes(tmp_path, mt, monkeypatch):
    kw = _acc_kw(mt)
    ref = _weights(get("train.model")(Context(tmp_path / "ref"), **kw))
    real, sizes = Task.step_loss, []

    def small_device(self, model, batch, label_smoothing=0.0):  # a device that holds 8 rows at most
        sizes.append(batch["src"].size(0))
        if batch["src"].size(0) > 8:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, model, batch, label_smoothing)

    monkeypatch.setattr(Task, "step_loss", small_device)
    ctx = Context(tmp_path / "fit")
    out = get("train.model")(ctx, passes=1, **kw)
    assert out["summary"]["passes_per_step"] == 2 and out["summary"]["steps"] == 3
    assert sizes[:3] == [16, 8, 8] and set(sizes[1:]) == {8}  # one failed pass, then two per step
    got = _weights(out)
    assert all(torch.allclose(ref[k], got[k], atol=1e-5) for k in ref)  # the retried step lost nothing

    monkeypatch.setattr(Task, "step_loss", lambda *a, **k: (_ for _ in ()).throw(torch.OutOfMemoryError("OOM")))
    with pytest.raises(torch.OutOfMemoryError):  # one micro-batch a pass and still too big: the error stands
        get("train.model")(Context(tmp_path / "never"), passes=4, **kw)


def test_passes_must_lie_between_one_and_accumulate(tmp_path, mt):
    with pytest.raises(TrainError, match="passes must be between 1 and accumulate=4"):
        get("train.model")(Context(tmp_path / "x"), **{**_acc_kw(mt), "passes": 5})


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
    out = get("train.model")(
        ctx, data=mt, model="transformer-tiny", steps=6, checkpoint_every=2, average_last=3, batch_size=8, seed=0
    )
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
        get("train.model")(
            Context(tmp_path / "x"), data=mt, model="transformer-tiny", steps=2, checkpoint_every=0, average_last=5
        )


def test_token_ids_are_checked_on_the_cpu_before_training(tmp_path, mt):
    with pytest.raises(TrainError, match=r"train split: src id \d+ is out of range for the model's src_vocab_size 5"):
        get("train.model")(
            Context(tmp_path / "r"), data=mt, model="transformer-tiny", steps=1, overrides={"src_vocab_size": 5}
        )


def test_recurrent_models_keep_fp32_with_tf32_on_cuda_and_transformers_get_bf16():
    assert choose(build("bahdanau-tiny"), "cuda", bf16=True) == "fp32+tf32"
    assert choose(build("seq2seq-tiny"), "cuda:0", bf16=True) == "fp32+tf32"
    assert choose(build("transformer-tiny"), "cuda", bf16=True) == "bf16"
    assert choose(build("bahdanau-tiny"), "cpu", bf16=True) == "bf16"  # CPU: as asked, no cuDNN involved
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


@pytest.mark.parametrize("name", ["seq2seq-small", "luong-dot-small", "bahdanau-small", "transformer-tiny"])
def test_projecting_only_the_scored_positions_gives_the_full_passs_loss_and_gradients(mt, name):
    """Translation models project only non-padding targets onto the vocabulary (most of a step's work
    with a large vocabulary); the loss, accuracy and every gradient must equal the full projection's."""
    task = Task(mt, "cpu")
    torch.manual_seed(0)
    model = build_model(name, {**data_overrides(task.meta, name), "dropout": 0.0})
    V = model.config.tgt_vocab_size
    assert model.projects_kept
    batch = next(iter(task.eval_batches("train", 8)))
    assert (batch["tgt_out"] == -100).any()  # the batch has padding to skip

    def run(kept: bool):
        model.zero_grad()
        model.projects_kept = kept
        out, y = task.outputs(model, batch)
        loss, correct, counted = task.score(out, y)
        loss.backward()
        return (
            out,
            float(loss.detach()),
            int(correct),
            int(counted),
            {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None},
        )

    out_k, loss_k, c_k, n_k, g_k = run(True)
    out_f, loss_f, c_f, n_f, g_f = run(False)
    n_real = int((batch["tgt_out"] != -100).sum())
    assert out_k.shape == (n_real, V) and out_f.shape[:2] == batch["tgt_out"].shape
    assert loss_k == pytest.approx(loss_f, rel=1e-6) and (c_k, n_k) == (c_f, n_f) == (c_k, n_real)
    assert g_k.keys() == g_f.keys()
    assert all(torch.allclose(g_k[k], g_f[k], atol=1e-6) for k in g_k)
    flat = out_f.reshape(-1, V)[(batch["tgt_out"].reshape(-1) != -100)]
    assert torch.allclose(out_k, flat, atol=1e-6)  # the same logits, in the targets' order
