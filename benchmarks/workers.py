"""Worker processes: start-up time, memory, and the round trip of one trivial step.

    python benchmarks/workers.py --workers 2 --repeat 3

Prints, for a local pool of ``--workers`` CPU workers: seconds until every worker answers and
the CPU seconds that start-up cost (the workers' and their helpers', the other processes this one
started: multiprocessing's forkserver and resource tracker, flows/execute/processes.py;
``BOTTLENECKS_WORKER_TEMPLATE=off`` measures fresh interpreters instead), seconds for the first
step (the worker imports the component's module, here torch), the median round trip of a trivial
step afterwards, and each worker's resident memory after importing torch. Runs no Prefect flow
and creates no MLflow run (the payload's run id is a throwaway one in a temporary SQLite store).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children() -> set[int]:
    """This process's child processes (Linux ``/proc``)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
        except (OSError, ValueError):
            continue  # ended meanwhile
    return found


def settled(measure, quiet: float = 1.0) -> tuple[float, float]:
    """``measure()`` once it has not moved for ``quiet`` seconds, and when it last moved."""
    last, since = measure(), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.05)
        now = measure()
        if now != last:
            last, since = now, time.monotonic()
    return last, since


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10, help="trivial steps per worker after the first")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bottlenecks-bench-"))
    os.environ.update({"BOTTLENECKS_HOME": str(tmp / "home"), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'm.db'}"})
    from flows import home

    home.configure()
    from mlflow.tracking import MlflowClient

    from flows.execute import processes
    from flows.execute.pool import ProcessPool
    from flows.execute.worker import StepPayload

    client = MlflowClient()
    exp = client.create_experiment("bench-workers")
    started = time.monotonic()
    pool = ProcessPool(args.workers, [], threads=1, eager=(args.workers, 0))
    for slot in pool.cpu:  # a worker says "ready" first; wait for each (started in the background)
        worker = slot.start()
        worker.conn.poll(120)
        worker.conn.recv()
        worker.ready = True
    ready = time.monotonic() - started
    pids = [s.worker.pid for s in pool.cpu]
    # a worker says "ready" first, then imports MLflow (if its forkserver has not) and opens the store
    start_cpu, warm_at = settled(lambda: sum(cpu_seconds(pid) for pid in pids))
    warm = warm_at - started
    helper_cpu = sum(cpu_seconds(pid) for pid in children() - set(pids))

    def step(i: int) -> float:
        run = client.create_run(exp).info.run_id
        payload = StepPayload(
            instance=f"s{i}",
            component="bench.import_torch",
            params={},
            key=f"k{i}",
            work_dir=str(tmp / f"w{i}"),
            run_id=run,
            seed=0,
            tracking_uri=os.environ["MLFLOW_TRACKING_URI"],
            home=str(tmp / "home"),
            module="benchmarks.noop_component",
        )
        t0 = time.monotonic()
        result = pool.run(payload, 0, lambda event: None)
        assert result.status == "done", result.error
        return time.monotonic() - t0

    first = [step(i) for i in range(args.workers)]
    rest = [step(100 + i) for i in range(args.repeat * args.workers)]
    memory = [rss_mib(s.worker.pid) for s in pool.cpu]
    pool.close()
    print(
        f"workers: {args.workers} (python {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f})"
    )
    print(f"all workers ready:            {ready:.2f} s (answering), {warm:.2f} s (store opened)")
    how = "forked from the forkserver" if processes.forked() else "fresh interpreters"
    print(
        f"start-up CPU:                 {helper_cpu + start_cpu:.2f} s ({how}: helpers {helper_cpu:.2f} s, "
        f"workers {start_cpu:.2f} s)"
    )
    print(f"first step per worker:        {statistics.median(first):.2f} s (imports torch)")
    print(f"trivial step round trip:      {statistics.median(rest) * 1000:.0f} ms (median of {len(rest)})")
    print(f"worker memory after torch:    {statistics.median(memory):.0f} MiB (median RSS)")


if __name__ == "__main__":
    main()
