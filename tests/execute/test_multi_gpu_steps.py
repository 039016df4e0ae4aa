"""Steps that hold several GPUs: the executors give a step all the GPU slots it asks for at once
(first come first served, so nothing deadlocks or starves), run it in the first slot's worker, fill
``ctx.gpus``, and release every slot when it ends, fails or is stopped. These machines have no GPU:
``settings.devices`` lists ids without checking them, and a step reports what it was given."""

from __future__ import annotations

import os
import threading
import time

import pytest

from components.context import Context
from components.registry import component
from flows.execute import executors
from flows.execute.executors import ThreadExecutor, held_gpus
from flows.execute.pool import Claims, ProcessPool, Slot, Stopped
from flows.execute.worker import StepPayload, StepResult


@component("enginetest.held_gpus", outputs=["gpus", "visible", "device", "started", "ended"])
def held(ctx: Context, *, seconds: float = 0.0, fail: bool = False) -> dict:
    """Report the GPUs the step holds, the ones its process sees, and when it ran."""
    started = time.time()
    time.sleep(seconds)
    if fail:
        raise RuntimeError("this step fails on purpose")
    gpus = list(getattr(ctx, "gpus", ()))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"gpus": gpus, "visible": visible, "device": ctx.device, "started": started, "ended": time.time()}


def payload(name: str) -> StepPayload:
    return StepPayload(name, "enginetest.held_gpus", {}, "k", "/nonexistent", "r", 0, "", "/nonexistent")


class FakeWorker:
    """Stands in for a worker process: records which GPUs each step held and when, and fails or
    stops the steps it is told to."""

    def __init__(self, slot: Slot, spans: list, seconds: float):
        self.slot, self.spans, self.seconds = slot, spans, seconds

    def call(self, payload: StepPayload, on_event, stop) -> StepResult:
        started = time.monotonic()
        time.sleep(self.seconds)
        self.spans.append((payload.instance, self.slot.gpu, list(payload.gpus), started, time.monotonic()))
        if payload.instance.startswith("stop"):
            raise Stopped()
        if payload.instance.startswith("fail"):
            return StepResult("failed", error="RuntimeError: boom")
        return StepResult("done", gpus=list(payload.gpus))


@pytest.fixture
def pool(monkeypatch):
    spans: list = []
    monkeypatch.setattr(Slot, "start", lambda self: FakeWorker(self, spans, 0.15))
    pool = ProcessPool(0, ["0", "1", "2"], threads=1)
    pool.spans = spans
    yield pool
    pool.close()


def run_together(pool: ProcessPool, asks: dict[str, int], wait: float = 20) -> dict[str, StepResult | BaseException]:
    """Run each named step asking for its GPU count in its own thread, all at once; those not
    done within ``wait`` seconds are missing (the pool's close ends their wait)."""
    results: dict = {}

    def one(name: str, gpu: int) -> None:
        try:
            results[name] = pool.run(payload(name), gpu, lambda event: None)
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            results[name] = e

    threads = [threading.Thread(target=one, args=item, daemon=True) for item in asks.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=wait)
    return dict(results)


def test_a_two_gpu_step_and_one_gpu_steps_all_finish_and_never_share_a_gpu(pool):
    results = run_together(pool, {"wide": 2, "a": 1, "b": 1, "c": 1})
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(("wide", "a", "b", "c"), "done")
    by_name = {name: (first, gpus) for name, first, gpus, _, _ in pool.spans}
    first, gpus = by_name["wide"]
    assert len(set(gpus)) == 2 and gpus[0] == first  # it runs in the first slot's worker
    assert all(len(by_name[n][1]) == 1 and by_name[n][1][0] == by_name[n][0] for n in "abc")
    for gpu in ("0", "1", "2"):
        spans = sorted((s, e) for _, _, held, s, e in pool.spans if gpu in held)
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:])), f"two steps held GPU {gpu}"


def test_a_failing_or_stopped_multi_gpu_step_releases_every_slot(pool):
    assert pool.run(payload("fail-wide"), 2, lambda event: None).status == "failed"
    later = run_together(pool, {"all": 3}, wait=30)  # waits forever if a slot was kept
    assert later["all"].gpus == ["0", "1", "2"]
    with pytest.raises(Stopped):
        pool.run(payload("stop-wide"), 2, lambda event: None)
    assert run_together(pool, {"all-again": 3}, wait=30)["all-again"].gpus == ["0", "1", "2"]


def test_a_waiting_wide_request_is_served_before_narrow_ones_that_came_after_it():
    claims, stop = Claims(["0", "1", "2"]), threading.Event()
    first = claims.take(1, stop)
    served: list[str] = []

    def want(name: str, n: int) -> None:
        served.append((name, claims.take(n, stop))[0])

    def lined_up(n: int) -> None:
        """Wait until ``n`` requests wait in line (read under the lock: each has checked it may not go
        yet) or one was served; a loaded machine may start a thread late."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not served:
            with claims.cond:
                if len(claims.waiting) >= n:
                    return
            time.sleep(0.01)

    wide = threading.Thread(target=want, args=("wide", 3), daemon=True)
    narrow = threading.Thread(target=want, args=("narrow", 1), daemon=True)
    try:
        wide.start()
        lined_up(1)  # the wide request now waits at the head of the line
        narrow.start()
        lined_up(2)
        assert served == [] and len(claims.waiting) == 2  # a GPU is free, but narrow does not overtake wide
        claims.give(first)
        wide.join(timeout=30)
        assert served == ["wide"]
        claims.give(["0", "1", "2"])
        narrow.join(timeout=30)
        assert served == ["wide", "narrow"]
    finally:
        stop.set()  # a request still waiting ends


def test_a_waiting_request_ends_when_the_run_stops_and_more_than_the_pool_is_refused():
    claims, stop = Claims(["0", "1"]), threading.Event()
    claims.take(2, stop)
    stop.set()
    with pytest.raises(Stopped):
        claims.take(1, stop)
    assert claims.waiting == type(claims.waiting)()  # the stopped request left the line
    with pytest.raises(ValueError, match="asks for 3 GPUs but this pool has 2"):
        claims.take(3, threading.Event())


def test_the_thread_executor_gives_a_step_its_gpu_ids_and_takes_them_back(monkeypatch):
    monkeypatch.setattr(executors, "run_step", lambda p, emit, stop: StepResult("done", gpus=list(p.gpus)))
    threads = ThreadExecutor(1, ["3", "5", "6"], threads=1)
    assert threads.run(payload("wide"), 2, lambda e: None).gpus == ["3", "5"]
    assert threads.run(payload("all"), 3, lambda e: None).gpus == ["3", "5", "6"]
    assert threads.run(payload("cpu"), 0, lambda e: None).gpus == []


def test_a_dask_worker_gives_the_gpus_it_sees_and_refuses_a_wider_step(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert held_gpus(2) == ["2", "3"] and held_gpus(1) == ["2"] and held_gpus(0) == []
    with pytest.raises(ValueError, match="asks for gpu: 4 but its Dask worker sees 2 GPU"):
        held_gpus(4)


@pytest.mark.slow
def test_a_run_places_a_two_gpu_step_beside_one_gpu_steps_and_records_the_count(tmp_path, home):
    from flows.execute.runner import run
    from flows.plan.build import build
    from tests.support.files import write
    from tests.support.mlflow_runs import children

    m = __name__
    path = write(
        tmp_path,
        f"""\
        name: multi-gpu
        settings: {{workers: 1, executor: processes, devices: [0, 1, 2]}}
        steps:
          wide: {{uses: "{m}:held", with: {{seconds: 0.5}}, resources: {{gpu: 2}}}}
          one: {{uses: "{m}:held", with: {{seconds: 0.5}}, matrix: {{i: [0, 1]}}, resources: {{gpu: 1}}}}
        """,
    )
    result = run(build(path))
    assert result.ok, result.errors
    out = {iid: result.outputs[iid] for iid in ("wide", "one[i=0]", "one[i=1]")}
    wide = out["wide"]
    assert len(set(wide["gpus"])) == 2 and wide["visible"] == wide["gpus"][0] and wide["device"] == "cuda"
    assert all(len(o["gpus"]) == 1 and o["visible"] == o["gpus"][0] for iid, o in out.items() if iid != "wide")
    for gpu in ("0", "1", "2"):
        spans = sorted((o["started"], o["ended"]) for o in out.values() if gpu in o["gpus"])
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:])), f"two steps held GPU {gpu}"
    assert result.workers["wide"]["gpus"] == wide["gpus"]
    runs = children(result.parent_run_id, "multi-gpu")
    assert runs["wide"]["tags.gpus"] == "2" and runs["one[i=0]"]["tags.gpus"] == "1"
