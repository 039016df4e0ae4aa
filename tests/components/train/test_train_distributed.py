"""One training across several processes (torch.distributed, gloo on the CPU): the same update as one
process at the same global batch, each rank's share of the batches, a killed rank, resume, one run."""

from __future__ import annotations

import logging.handlers
import os
import re
import signal
import time
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.models import build
from components.models.transformer import Transformer
from components.train import distributed as D
from components.train.config import TrainConfig
from components.train.errors import TrainError

KILL = "BOTTLENECKS_TEST_KILL_RANK1_AT_FORWARD"  # read by ``killable_transformer`` in the ranks


class KillableTransformer(Transformer):
    """transformer-tiny whose rank 1 kills itself (SIGKILL) at its Nth training forward when the
    environment says N (a test-only fault: a rank that dies mid-step)."""

    calls = 0  # this process's training forwards

    def forward(self, *args, **kwargs):
        KillableTransformer.calls += self.training
        at = int(os.environ.get(KILL, 0))
        if at and os.environ.get("RANK") == "1" and KillableTransformer.calls == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().forward(*args, **kwargs)


def killable_transformer(src_vocab_size: int, tgt_vocab_size: int, pad_id: int = 0, dropout: float = 0.0):
    """transformer-tiny, built as the variant is, as a ``KillableTransformer``."""
    sizes = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, pad_id=pad_id, dropout=dropout)
    net = build("transformer-tiny", **sizes)
    net.__class__ = KillableTransformer
    return net


def _kw(mt, **changes):
    """Dropout-free transformer-tiny on plain SGD, 2 micro-batches of 4 sentences a step, a loss every step."""
    kw = dict(data=mt, model="transformer-tiny", overrides={"dropout": 0.0}, optimizer="sgd", lr=1.0, clip="none")
    steps = dict(seed=3, steps=4, batch_size=4, accumulate=2, log_every=1, eval_every=0, checkpoint_every=2)
    return kw | steps | changes


def _weights(out):
    return torch.load(out["checkpoint"], weights_only=False)["state_dict"]


def _losses(ctx):
    return [v for _, v in ctx.metrics["train/loss"]]


@pytest.fixture(scope="module", autouse=True)
def trainers_forkserver():
    """The ranks fork from a forkserver that preloads the trainer's modules, and the test files after
    this one get one of their own: a process has one, preloaded by whoever starts it first
    (flows/execute/processes.py), and the pool's never preloads torch. Stopped with the hook
    CPython's own tests use."""
    from multiprocessing import forkserver

    forkserver._forkserver._stop()
    yield
    forkserver._forkserver._stop()


@pytest.fixture(scope="module")
def one(mt, tmp_path_factory):
    """The single-process run every distributed one is compared with."""
    torch.set_num_threads(1)
    ctx = Context(tmp_path_factory.mktemp("one"))
    return ctx, get("train.model")(ctx, **_kw(mt))


# -- the rules, in-process -------------------------------------------------------------------------
def test_each_rank_reads_its_share_of_each_steps_micro_batches():
    order = lambda i: i  # noqa: E731  (the single process's micro-batch i)
    ranks = [D.shard(order, 4, r, 2) for r in range(2)]
    assert [ranks[0](i) for i in range(4)] == [0, 2, 4, 6]  # step 0: 0 and 2, step 1: 4 and 6
    assert [ranks[1](i) for i in range(4)] == [1, 3, 5, 7]
    assert D.shard(order, 4, 0, 1) is order


def test_accumulate_must_split_evenly_across_the_processes():
    with pytest.raises(TrainError) as e:
        D.check_split(accumulate=3, passes=None, world=2)
    assert str(e.value) == (
        "accumulate=3 must be a multiple of processes=2: each optimiser step's micro-batches are split "
        "evenly across the processes; set accumulate to 4 (a larger global batch) or processes to a divisor of 3"
    )
    with pytest.raises(TrainError, match=r"passes=3 counts one process's passes, over its 2 of the 4"):
        D.check_split(accumulate=4, passes=3, world=2)


def test_the_number_of_processes_follows_the_steps_gpus_unless_given():
    assert D.world_size(None, (), "cpu") == 1
    assert D.world_size(None, ("3", "5"), "cuda") == 2
    assert D.world_size(2, (), "cpu") == 2
    assert D.rank_gpus(2, ("3", "5", "6")) == ["3", "5"]
    with pytest.raises(TrainError, match=r"processes=4 needs 4 GPUs, one a rank, and the step holds 2 \(3, 5\)"):
        D.rank_gpus(4, ("3", "5"))


def test_processes_is_a_bounded_setting_that_a_resumed_run_may_change():
    base = TrainConfig(data="d", model="lstm-small")
    assert base.fingerprint() == TrainConfig(data="d", model="lstm-small", processes=2).fingerprint()
    with pytest.raises(TrainError, match="processes"):
        TrainConfig.model_construct(**(base.model_dump() | {"processes": 0})).check()


def test_rank_0s_relay_replays_its_logging_into_the_steps_context(tmp_path):
    import logging
    import queue

    from components.train import launch

    sent: queue.Queue = queue.Queue()
    relay = launch.Relay(sent, tmp_path / "rank0", step_name="rank0")  # its logger lives in the rank
    relay.log.addHandler(logging.handlers.QueueHandler(sent))
    relay.log_params({"lr": 0.1})
    relay.log_metrics({"train/loss": 2.5, "steps": 3}, step=4)
    relay.set_tags({"bottleneck": "B2"})
    relay.log.warning("loss is %s at step %d", "nan", 5)
    with relay.progress(total=10, description="train m") as bar:
        bar.update(completed=2)
        bar.advance()
    relay.log_model(torch.nn.Linear(2, 1), "model", example=None)
    step = Context(tmp_path / "step", step_name="t", component="train.model")
    seen: list[logging.LogRecord] = []
    step.log.addHandler(type("Keep", (logging.Handler,), {"emit": lambda self, r: seen.append(r)})())
    with step.progress(total=None) as shown:
        launch._drain(step, shown, sent)
    assert step.params == {"lr": 0.1} and step.tags == {"bottleneck": "B2"}
    assert step.metrics == {"train/loss": [(4, 2.5)], "vitals/steps": [(4, 3.0)]}  # placed as the step places them
    assert (shown.total, shown.completed, shown.description) == (10, 3, "train m")
    assert [r.getMessage() for r in seen] == ["loss is nan at step 5"]
    assert isinstance(step.models["model"], torch.nn.Linear) and not list((tmp_path / "rank0").glob(".relay-*"))


# -- two ranks on the CPU (gloo) -------------------------------------------------------------------
@pytest.mark.slow
def test_two_processes_train_as_one_at_the_same_global_batch_in_one_mlflow_run(tmp_path, mt, one):
    """2 ranks x 1 micro-batch each = 1 process x accumulate 2: the same losses and weights, and the
    step's one MLflow run gets rank 0's metrics, params and model."""
    import mlflow

    from flows.track.runs import MlflowContext, Tracker

    run_id = mlflow.MlflowClient().create_run(mlflow.MlflowClient().create_experiment("ddp")).info.run_id
    ctx = MlflowContext(tracker=Tracker.for_runs(), run_id=run_id, work_dir=tmp_path / "two", component="train.model")
    two = get("train.model")(ctx, **_kw(mt, processes=2))
    ctx.flush()
    ref_ctx, ref = one
    a, b = _losses(ref_ctx), _losses(ctx)
    assert len(a) == len(b) == 4 and torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5), f"1: {a}\n2: {b}"
    wa, wb = _weights(ref), _weights(two)
    assert all(torch.allclose(wa[k], wb[k], atol=1e-5) for k in wa)
    assert two["summary"]["steps"] == 4 and two["summary"]["valid_loss"] == pytest.approx(ref["summary"]["valid_loss"])
    client = mlflow.MlflowClient()
    logged = [m.value for m in client.get_metric_history(run_id, "train/loss")]
    assert logged == pytest.approx(b)
    assert client.get_run(run_id).data.params["processes"] == "2"
    assert len(client.search_runs([client.get_run(run_id).info.experiment_id])) == 1  # the ranks made no runs
    assert "model" in ctx.models and not list((tmp_path / "two").glob(".relay-*"))


@pytest.mark.slow
def test_a_killed_rank_ends_the_step_and_the_rerun_resumes_to_the_same_weights(tmp_path, mt, one, monkeypatch):
    kw = _kw(mt, processes=2, model=f"{__name__}:killable_transformer")
    monkeypatch.setenv(KILL, "3")  # rank 1 dies in step 3, after the checkpoint of step 2
    before, t0 = _children(), time.monotonic()
    with pytest.raises(TrainError) as e:
        get("train.model")(Context(tmp_path / "run"), **kw)
    assert time.monotonic() - t0 < 60
    assert str(e.value).startswith("rank 1 of 2 was killed by SIGKILL")
    assert "rerun the step to resume" in str(e.value)
    assert _children() - before == set()  # no rank left behind
    monkeypatch.delenv(KILL)
    ctx = Context(tmp_path / "run")
    out = get("train.model")(ctx, **kw)
    assert out["summary"]["resumed_from_step"] == 2
    ref = _weights(one[1])
    got = _weights(out)
    assert all(torch.allclose(ref[k], got[k], atol=1e-5) for k in ref)
    assert _losses(ctx) == pytest.approx(_losses(one[0])[2:], abs=1e-5)  # steps 3 and 4


def _children() -> set[int]:
    """This process's live descendants (from /proc) but multiprocessing's forkserver and resource
    tracker, which stay by design (a rank forks from the forkserver and shows its command line: it
    is told apart by its parent, the forkserver)."""
    parents, cmds, live = {}, {}, set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
            state, ppid = rest.rsplit(") ", 1)[1].split()[:2]
            cmds[int(pid)] = (stat.parent / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError):
            continue  # ended meanwhile
        parents[int(pid)] = int(ppid)
        if state != "Z":
            live.add(int(pid))
    helper = lambda pid: "forkserver" in cmds.get(pid, "") or "resource_tracker" in cmds.get(pid, "")  # noqa: E731
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return {pid for pid in found & live if not (helper(pid) and not helper(parents[pid]))}


@pytest.mark.slow
def test_a_run_resumed_with_another_number_of_processes_continues_to_the_same_weights(tmp_path, mt, one):
    get("train.model")(Context(tmp_path / "run"), **_kw(mt, steps=2))  # one process writes step 2
    out = get("train.model")(Context(tmp_path / "run"), **_kw(mt, processes=2))
    assert out["summary"]["resumed_from_step"] == 2
    ref, got = _weights(one[1]), _weights(out)
    assert all(torch.allclose(ref[k], got[k], atol=1e-5) for k in ref)


@pytest.mark.slow
def test_a_rank_that_raises_ends_the_step_with_its_traceback_tail(tmp_path, mt):
    kw = _kw(mt, processes=2, overrides={"dropout": 0.0, "src_vocab_size": 3})  # ids beyond the vocabulary
    with pytest.raises(TrainError) as e:
        get("train.model")(Context(tmp_path / "run"), **kw)
    said = str(e.value)
    assert re.match(r"rank [01] of 2 exited with status 1:\n", said), said
    assert "src id" in said and "out of range for the model's src_vocab_size 3" in said
    assert said.endswith("the other ranks were ended")  # no resume hint: rerunning would fail again
