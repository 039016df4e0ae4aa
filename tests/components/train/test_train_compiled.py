"""train.model's ``compile`` option: which mode a run gets, the length buckets, and compiled = eager."""

from __future__ import annotations

import logging
import time

import pytest
import torch

from components import Context, get
from components.models import build as build_variant
from components.train import compiled as compiled_step
from components.train.compiled import CompiledTask, pad_to_bucket, resolve
from components.train.tasks import Task, collate_rows
from flows.language.errors import PipelineInvalid
from flows.plan.build import build

TINY = {"src_vocab_size": 64, "tgt_vocab_size": 64}  # above the toy data's ids


@pytest.mark.parametrize(
    "variant,value,device,mode",
    [
        ("rnnsearch-tiny", None, "cpu", None),  # every CPU run stays eager unless asked
        ("transformer-tiny", None, "cpu", None),
        ("rnnsearch-tiny", None, "cuda", "reduce-overhead"),  # RNNsearch / RNNencdec: CUDA graphs
        ("rnnencdec-tiny", None, "cuda:1", "reduce-overhead"),
        ("luong-tiny", None, "cuda", "reduce-overhead"),  # seq2seq / Luong
        ("transformer-tiny", None, "cuda", "default"),
        ("transformer-tiny", False, "cuda", None),
        ("rnnsearch-tiny", True, "cpu", "default"),
        ("transformer-tiny", "max-autotune", "cpu", "max-autotune"),
    ],
)
def test_compile_resolves_to_a_mode_per_device_and_family(variant, value, device, mode):
    assert resolve(value, device, build_variant(variant, **TINY)) == mode


def test_null_leaves_other_families_eager_on_cuda():
    assert resolve(None, "cuda", build_variant("lstm-small", input_dim=4, num_classes=2)) is None


def test_a_bad_compile_value_is_refused_at_its_line(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: t\nsteps:\n  a:\n    uses: train.model\n    with: {data: x, model: lstm-small, compile: fast}\n"
    )
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    assert [f"{err.line}:{err.col}: {err.message}" for err in e.value.errors] == [
        "5:49: step 'a' (train.model): compile must be True, False, 'default', 'reduce-overhead' or "
        "'max-autotune'; got 'fast'"
    ]


def test_padding_to_the_length_bucket_leaves_loss_and_gradients_unchanged(mt):
    """The extra source positions are masked and the extra targets are -100: the same loss, the
    same gradients, for a recurrent model with attention and for the Transformer."""
    task = Task(mt, "cpu")
    src, tgt = task.split("train")
    batch = collate_rows(src, tgt, range(6), task.pad_id)
    padded = pad_to_bucket(batch, task.pad_id)
    assert padded["src"].size(1) % 8 == 0 and padded["tgt_in"].size(1) % 8 == 0
    assert padded["src"].size(1) > batch["src"].size(1) and padded["tgt_out"].size(1) > batch["tgt_out"].size(1)
    for variant in ("rnnsearch-tiny", "transformer-tiny"):
        torch.manual_seed(0)
        net = build_variant(variant, **TINY, dropout=0.0)
        grads, losses = [], []
        for b in (batch, padded):
            net.zero_grad()
            loss, correct, counted = task.step_loss(net, b)
            loss.backward()
            losses.append((loss.item(), int(correct), int(counted)))
            grads.append([p.grad.clone() for p in net.parameters()])
        assert losses[0][1:] == losses[1][1:] and losses[0][0] == pytest.approx(losses[1][0], abs=1e-6), variant
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads)), variant


def test_a_failed_compilation_trains_eager_with_a_warning(mt, caplog):
    task = Task(mt, "cpu")
    src, tgt = task.split("train")
    batch = collate_rows(src, tgt, range(4), task.pad_id)
    net = build_variant("transformer-tiny", **TINY, dropout=0.0)
    step = CompiledTask(task, net, "default", logging.getLogger("test"))

    def inductor():
        pass

    def broken(*args):
        raise torch._dynamo.exc.BackendCompilerFailed(inductor, RuntimeError("no C++ compiler found"), None)

    step.compiled = broken
    with caplog.at_level(logging.WARNING):
        loss, _, counted = step.step_loss(step.model, batch)
    assert "compile (default) failed, training eager from here: RuntimeError: no C++ compiler found" in caplog.text
    assert step.compiled is None  # and it stays eager
    eager, _, eager_counted = task.step_loss(net, batch)
    assert loss.item() == pytest.approx(eager.item(), abs=1e-6) and int(counted) == int(eager_counted)


def test_shapes_past_the_cap_run_eager_with_one_warning(mt, caplog, monkeypatch):
    task = Task(mt, "cpu")
    src, tgt = task.split("train")
    order = sorted(range(len(src)), key=lambda i: len(src[i]))  # a short batch and a long one: two buckets
    batches = [collate_rows(src, tgt, order[:4], task.pad_id), collate_rows(src, tgt, order[-4:], task.pad_id)]
    net = build_variant("transformer-tiny", **TINY, dropout=0.0)
    step = CompiledTask(task, net, "default", logging.getLogger("test"))
    calls = []
    step.compiled = lambda batch, ls: calls.append(batch["src"].shape) or task.step_loss(step.model, batch, ls)
    monkeypatch.setattr(compiled_step, "RECOMPILES", 1)
    with caplog.at_level(logging.WARNING):
        for batch in batches + batches:
            step.step_loss(step.model, batch)
    assert len(calls) == 2 and len(set(calls)) == 1  # the first shape compiled, twice; the second ran eager
    assert caplog.text.count("compile: 1 batch shapes compiled; new shapes run eager") == 1


@pytest.fixture(scope="module")
def short_mt(tmp_path_factory):
    """Toy pairs of at most 6 tokens: one length bucket of 8 holds every batch (with BOS and EOS), so
    each model compiles one graph, and the recurrent decoder unrolls 8 steps."""
    root = tmp_path_factory.mktemp("short_mt")
    return get("data.synthetic_translation")(
        Context(root), vocab=12, min_len=2, max_len=6, n_train=64, n_valid=8, n_test=8
    )["dataset"]


def _train(tmp_path, mt, name, model, overrides, compile_):
    ctx = Context(tmp_path / name)
    t0 = time.perf_counter()
    out = get("train.model")(
        ctx,
        data=mt,
        model=model,
        overrides=overrides,
        optimizer="sgd",
        lr=0.5,
        clip="none",
        batch_size=8,
        steps=4,
        log_every=1,
        eval_every=0,
        eval_bleu=0,
        checkpoint_every=0,
        seed=1,
        compile=compile_,
    )
    losses = [v for _, v in ctx.metrics[ctx.metric_name("train/loss")]]
    weights = torch.load(out["checkpoint"], weights_only=False)["state_dict"]
    return losses, weights, time.perf_counter() - t0


@pytest.mark.slow  # compiling two small models on a CPU
@pytest.mark.parametrize(
    "model,overrides",
    [
        ("rnnsearch-tiny", {"dropout": 0.0}),  # the RNNsearch-50 decoder at toy size
        ("transformer-tiny", {"dropout": 0.0}),
    ],
)
def test_compiled_training_agrees_with_eager_on_the_cpu(tmp_path, short_mt, model, overrides):
    """Four SGD steps compiled (padded to the length bucket, every position projected) against eager:
    losses within 1e-4 at each step, final weights within 1e-4 (float rounding of fused kernels)."""
    eager, w_eager, _ = _train(tmp_path, short_mt, "eager", model, overrides, False)
    torch._dynamo.reset()
    compiled, w_compiled, _ = _train(tmp_path, short_mt, "compiled", model, overrides, True)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > 0  # compiled, not fallen back to eager
    assert len(eager) == len(compiled) == 4 and eager[0] != eager[-1]  # it trains
    assert compiled == pytest.approx(eager, abs=1e-4)
    assert all(torch.allclose(w_eager[k], w_compiled[k], atol=1e-4) for k in w_eager)
