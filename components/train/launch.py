"""Launch ``train.model``'s ranks the way ``torchrun`` does, and relay rank 0's logging back.

torch.distributed's elastic ``start_processes`` starts W ranks with MASTER_ADDR/PORT, RANK,
LOCAL_RANK and WORLD_SIZE set, each GPU rank in a child that sees only its own GPU
(``CUDA_VISIBLE_DEVICES``), ``nccl`` between GPUs and ``gloo`` on CPUs. Each rank runs the
trainer's phases (``phases.train``); rank 0 alone writes checkpoints, the model file and the
summary, and its context (``Relay``) sends what it logs through a queue to the launching process,
which replays it into the step's own context: the step keeps its one MLflow run and its progress
bar, and the ranks need no tracking address. A rank that fails or is killed ends the others and
the step fails naming it.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import queue as queues
import signal
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from components.context import Context, Progress
from components.train.config import TrainConfig
from components.train.distributed import check_split, rank_gpus
from components.train.errors import TrainError
from components.train.phases import train

TIMEOUT = timedelta(minutes=30)  # a collective that waits longer (a hung rank) fails the step
FAILING_RANK_WAIT = 1.0  # seconds a failing rank waits before it ends (see ``run_rank``)
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)  # those the elastic launcher takes over
# what a rank imports (this module: its entry point and the phases; the optimiser imports torch._dynamo,
# translation data its readers): 7-10 s on 2 busy cores
_PRELOAD = ["torch", "torch._dynamo", "components.train.launch", "components.data.io", "components.models"]
_RELAYED = {"log_params", "log_metric", "log_artifact", "log_dataset", "set_tags"}


@dataclass
class RankSpec:
    """What each rank needs to rebuild the step: the parameters, the work dir, the relay queue."""

    cfg: dict[str, Any]
    work_dir: str
    step_name: str
    cuda: bool
    threads: int
    log_level: int
    queue: Any
    launcher: int  # the launching process's pid


def launch(ctx: Context, cfg, world: int) -> dict:
    """Train ``cfg`` on ``world`` ranks; replay rank 0's logging into ``ctx``; return its outputs.

    A rank that fails or is killed ends the others, and the step fails with a ``TrainError`` that
    names the rank and how it ended (its signal, or its traceback's tail).
    """
    cuda = ctx.device.startswith("cuda")
    check_split(cfg.accumulate, cfg.passes, world)
    gpus = rank_gpus(world, tuple(getattr(ctx, "gpus", ()))) if cuda else []
    method = _start_method(cuda)
    relay = mp.get_context(method).Queue()
    threads = max(1, torch.get_num_threads() // world) if not cuda else torch.get_num_threads()
    level = ctx.log.getEffectiveLevel()
    spec = RankSpec(cfg.model_dump(), str(ctx.work_dir), ctx.step_name, cuda, threads, level, relay, os.getpid())
    envs = _rank_envs(world, gpus)
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std, start_processes

    with tempfile.TemporaryDirectory(prefix="ranks-") as logs, _signals_kept():
        ranks = start_processes(
            name="train.model",
            entrypoint=run_rank,
            args={r: (spec,) for r in range(world)},
            envs=envs,
            logs_specs=DefaultLogsSpecs(log_dir=logs, tee=Std.ERR),  # stderr to the console and a file
            start_method=method,
        )
        try:
            result = _follow(ctx, cfg, ranks, relay)
        finally:
            ranks.close(timeout=10)
        if result.is_failed():
            raise TrainError(_failure(result, world, gpus))
    return result.return_values[0]


def _start_method(cuda: bool) -> str:
    """How ranks start. CPU ranks fork from a server that has imported the trainer once
    (multiprocessing's forkserver, started at the first launch and kept by this process): a rank
    starts in a fraction of a second instead of importing torch again. GPU ranks start fresh
    (``spawn``): a process that has touched CUDA must not fork, and a rank's ``CUDA_VISIBLE_DEVICES``
    counts only before CUDA starts in it."""
    if cuda:
        return "spawn"
    mp.set_forkserver_preload(_PRELOAD)
    return "forkserver"


def _rank_envs(world: int, gpus: list[str]) -> dict[int, dict[str, str]]:
    """This process's environment (the forkserver's is the one of its first launch) with what
    ``torchrun`` gives each rank on one host, and each GPU rank its own GPU."""
    port = _free_port()
    common = dict(os.environ) | {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(world)}
    common |= {"LOCAL_WORLD_SIZE": str(world), "GROUP_RANK": "0", "TORCHELASTIC_RUN_ID": "train.model"}
    envs = {}
    for r in range(world):
        envs[r] = common | {"RANK": str(r), "LOCAL_RANK": str(r), "GROUP_WORLD_SIZE": "1"}
        if gpus:
            envs[r]["CUDA_VISIBLE_DEVICES"] = gpus[r]
    return envs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _signals_kept():
    """Give back this process's signal handlers after the launch (the launcher installs its own)."""
    main = threading.current_thread() is threading.main_thread()
    before = {s: signal.getsignal(s) for s in _SIGNALS} if main else {}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _follow(ctx: Context, cfg, ranks, relay):
    """Poll the ranks until they end, replaying rank 0's messages into ``ctx`` and its progress bar."""
    with ctx.progress(total=cfg.steps, description=f"train {cfg.model}") as bar:
        while True:
            result = ranks.wait(timeout=0)
            if result is None or not result.is_failed():  # a killed writer may leave half a message
                _drain(ctx, bar, relay)
            if result is not None:
                return result
            time.sleep(0.05)


def _drain(ctx: Context, bar: Progress, relay) -> None:
    while True:
        try:
            message = relay.get_nowait()
        except queues.Empty:
            return
        _replay(ctx, bar, message)


def _replay(ctx: Context, bar: Progress, message) -> None:
    """Do in ``ctx`` what rank 0 did in its relay context."""
    if isinstance(message, logging.LogRecord):
        ctx.log.handle(message)
        return
    call, *args = message
    if call == "bar":
        bar.update(**args[0])
    elif call == "log_model":
        path, name, example = args
        ctx.log_model(torch.load(path, weights_only=False), name, example)
        Path(path).unlink(missing_ok=True)
    elif call in _RELAYED:
        getattr(ctx, call)(*args)


def _failure(result, world: int, gpus: list[str]) -> str:
    """Which rank failed and how: its signal or exit code, and its traceback's tail."""
    rank, failure = min(result.failures.items())
    where = f" (GPU {gpus[rank]})" if gpus else ""
    if failure.exitcode < 0:
        how = f"was killed by {failure.signal_name()}"
    else:
        how = f"exited with status {failure.exitcode}"
    trace = failure.error_file_data.get("message", {})
    said = trace.get("extraInfo", {}).get("py_callstack", "") if isinstance(trace, dict) else ""
    if not said and result.stderrs.get(rank) and Path(result.stderrs[rank]).exists():
        said = Path(result.stderrs[rank]).read_text(errors="replace")  # it died before its traceback was kept
    said = "\n".join(said.strip().splitlines()[-12:])
    said = f":\n{said}" if said else ""
    ended = "the other ranks were ended" + (
        "; rerun the step to resume from its last checkpoint" if failure.exitcode < 0 else ""
    )
    return f"rank {rank} of {world}{where} {how}{said}\n{ended}"


def run_rank(spec: RankSpec) -> dict | None:
    """A rank's entry point: join the group, train, leave; rank 0 returns the step's outputs."""
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    _end_with_launcher(spec.launcher)
    torch.set_num_threads(spec.threads)
    if spec.cuda:
        torch.cuda.set_device(0)  # the only GPU this rank sees
    dist.init_process_group("nccl" if spec.cuda else "gloo", timeout=TIMEOUT)
    try:
        ctx = _rank_context(spec, rank)
        out = train(ctx, TrainConfig.model_validate(spec.cfg), rank, size)
    except BaseException:
        # a rank whose peer was killed fails in its next collective at once: end a moment later, so
        # the launcher sees the killed rank end first and names it
        time.sleep(FAILING_RANK_WAIT)
        raise
    finally:
        dist.destroy_process_group()
        spec.queue.close()
        spec.queue.join_thread()  # every message is in the pipe before the launcher sees this rank end
    return out if rank == 0 else None


def _end_with_launcher(pid: int) -> None:
    """End this rank when the launching process is gone: one killed outright (SIGKILL) cannot end
    its ranks, and the forkserver a CPU rank forks from outlives it while the rank runs."""

    def watch() -> None:
        while _alive(pid):
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="launcher-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except OSError:  # no /proc (macOS): os.kill said it runs
        return True


def _rank_context(spec: RankSpec, rank: int) -> Context:
    """Rank 0's context relays to the launcher; the others' keep what they log to themselves."""
    device = "cuda" if spec.cuda else "cpu"
    if rank:
        return Context(Path(spec.work_dir), device=device, step_name=spec.step_name)
    ctx = Relay(spec.queue, Path(spec.work_dir), device=device, step_name=spec.step_name)
    ctx.log.setLevel(spec.log_level)
    ctx.log.addHandler(logging.handlers.QueueHandler(spec.queue))
    ctx.log.propagate = False
    return ctx


class Relay(Context):
    """Rank 0's context: what the trainer logs is also sent to the launching process's context."""

    def __init__(self, queue, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.queue = queue

    def send(self, *message) -> None:
        self.queue.put(message)

    def log_params(self, params: dict[str, Any]) -> None:
        super().log_params(params)
        self.send("log_params", dict(params))

    def log_metric(self, key: str, value: float, step: int | None = None) -> None:
        super().log_metric(key, value, step)
        self.send("log_metric", key, float(value), step)

    def log_artifact(self, path) -> None:
        super().log_artifact(path)
        self.send("log_artifact", str(path))

    def log_dataset(self, name, source, digest, sizes=None, context="training") -> None:
        super().log_dataset(name, source, digest, sizes, context)
        self.send("log_dataset", name, str(source), digest, dict(sizes or {}), context)

    def set_tags(self, tags: dict[str, str]) -> None:
        super().set_tags(tags)
        self.send("set_tags", dict(tags))

    def log_model(self, model, name: str = "model", example: tuple | None = None) -> None:
        """Hand the model over as a file the launcher loads (and removes)."""
        path = self.path(f".relay-{name}.pt")
        torch.save(model, path)
        self.send("log_model", str(path), name, example)

    @contextmanager
    def progress(self, total: float | None = None, description: str = ""):
        """A handle whose every change is sent as the bar's state (the launcher's bar takes it)."""

        def send(bar: Progress) -> None:
            self.send("bar", {"completed": bar.completed, "total": bar.total, "description": bar.description})

        bar = Progress(total, description, on_change=send)
        send(bar)
        yield bar
