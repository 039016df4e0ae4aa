"""Engine overhead: N trivial steps through Prefect + MLflow against the same calls made directly.

Prints what a user waits for (``check``, ``plan``, the first run in a new folder until its first
step starts, a fully cached rerun of a small pipeline), then per-step orchestration overhead, cold
and warm startup and the speed-up of a fully cached rerun. Each figure is a fresh `bottlenecks`
process, as a user would run it.

    python benchmarks/overhead.py --steps 20
    python benchmarks/overhead.py --only startup      # the first four figures (about a minute)
    python benchmarks/overhead.py --only engine --executor threads processes dask
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components import Context, component  # noqa: E402


@component("bench.noop", outputs=["value"])
def noop(ctx: Context, *, i: int = 0, work: float = 0.0, stamp: str = "") -> dict:
    """Wait `work` seconds (a stand-in for real compute), log one metric, return i."""
    if stamp:  # when the step began, for the time-to-first-step figure
        with open(stamp, "a") as fh:
            fh.write(f"{time.time()}\n")
    time.sleep(work)
    ctx.log_metric("i", i)
    return {"value": i}


def pipeline(path: Path, steps: int, work: float = 0.0, stamp: str = "") -> Path:
    values = ", ".join(str(i) for i in range(steps))
    path.write_text(
        f"name: overhead-{steps}-{work}\nsettings: {{workers: 1}}\nsteps:\n"
        f"  noop:\n    uses: benchmarks.overhead:noop\n"
        f'    with: {{i: "${{matrix.i}}", work: {work}, stamp: "{stamp}"}}\n'
        f"    matrix: {{i: [{values}]}}\n"
    )
    return path


def timed(command: str, file: Path, env: dict, *extra: str, cwd: Path = REPO) -> float:
    """Run ``bottlenecks COMMAND FILE`` in a fresh process; return its wall time."""
    return timed_cpu(command, file, env, *extra, cwd=cwd)[0]


def timed_cpu(command: str, file: Path, env: dict, *extra: str, cwd: Path = REPO) -> tuple[float, float]:
    """Like ``timed``, also the CPU seconds the command used: on a loaded machine the wall time is
    mostly waiting for a core, the CPU time is what it costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", command, str(file), *extra],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed:\n{proc.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed_run(file: Path, env: dict, *extra: str) -> float:
    return timed("run", file, env, *extra)


def stop_servers(folder: Path, env: dict) -> None:
    """Stop the background Prefect server and the warm zygote a run in ``folder`` may have left."""
    subprocess.run([sys.executable, "-m", "flows.cli", "stop"], cwd=folder, env=env, capture_output=True)


def stop_prefect_server(folder: Path, env: dict) -> None:
    """Stop only the folder's Prefect server: the zygote serves the next folder, as it would a user's."""
    code = (
        "import sys; from pathlib import Path; from flows.services import prefect_server; "
        "prefect_server.stop(Path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(folder / ".bottlenecks")], cwd=folder, env=env, capture_output=True)


def startup(tmp: Path, repeats: int) -> dict[str, float]:
    """Time check, plan, the first run in a new folder (to its first step) and a cached rerun.

    Each repeat is a new project folder with nothing configured, as a new user starts: the state
    folder, the MLflow store and Prefect's home are created by the first command. The first
    repeat also migrates the Prefect database template the later ones copy.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_")) and k != "BOTTLENECKS_HOME"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env["BOTTLENECKS_CACHE"] = str(tmp / "cache")  # the first folder is the machine's first: no template
    figures: dict[str, list[float]] = {
        "check": [],
        "plan": [],
        "first step": [],
        "first run": [],
        "cached rerun": [],
        "check cpu": [],
        "plan cpu": [],
        "cached rerun cpu": [],
    }
    env.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="bn-"))  # this benchmark's own zygote
    for r in range(repeats):
        folder = tmp / f"project-{r}"
        folder.mkdir()
        stamp = folder / "stamps.txt"
        small = pipeline(folder / "small.yaml", 6, stamp=str(stamp))
        wall, cpu = timed_cpu("check", small, env, cwd=folder)
        figures["check"].append(wall)
        figures["check cpu"].append(cpu)
        try:
            begin = time.time()
            figures["first run"].append(timed("run", small, env, cwd=folder))
            figures["first step"].append(float(stamp.read_text().split()[0]) - begin)
            for name, command in (("plan", "plan"), ("cached rerun", "run")):
                wall, cpu = timed_cpu(command, small, env, cwd=folder)
                figures[name].append(wall)
                figures[f"{name} cpu"].append(cpu)
        finally:
            stop_prefect_server(folder, env)
    stop_servers(folder, env)
    return {**{k: statistics.median(v) for k, v in figures.items()}, "first ever": figures["first step"][0]}


def engine(args, executor: str) -> None:
    """Per-step overhead, warm start and the cached speed-up with one executor."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {
            **os.environ,
            "BOTTLENECKS_HOME": str(tmp / "home"),
            "PREFECT_HOME": str(tmp / "prefect"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}",
            "BOTTLENECKS_EXECUTOR": executor,
        }
        env.pop("PREFECT_API_URL", None)
        one, many = pipeline(tmp / "one.yaml", 1), pipeline(tmp / "many.yaml", args.steps)
        busy = pipeline(tmp / "busy.yaml", args.steps, args.work)

        start = time.perf_counter()
        for i in range(args.steps):
            noop.component(Context(work_dir=tmp / "direct" / str(i)), i=i)
        direct = time.perf_counter() - start

        cold = timed_run(one, env)  # fresh stores: DB migrations, server start
        warm = statistics.median(timed_run(one, env, "--no-cache") for _ in range(args.repeats))
        full = statistics.median(timed_run(many, env, "--no-cache") for _ in range(args.repeats))
        busy_run = timed_run(busy, env, "--no-cache")
        busy_cached = timed_run(busy, env)
        per_step = (full - warm) / (args.steps - 1) - direct / args.steps
        stop_servers(REPO, env)

    print(f"[executor {executor}]")
    print(f"direct calls:             {args.steps} steps in {direct:.3f} s")
    print(f"cold start (1 step):      {cold:.1f} s   (new MLflow store, Prefect server)")
    print(f"warm start (1 step):      {warm:.1f} s   (target <= 15 s)")
    print(f"{args.steps} trivial steps:         {full:.1f} s")
    print(f"per-step overhead:        {per_step:.3f} s (target <= 0.25 s; workers=1)")
    print(
        f"{args.steps} steps x {args.work} s work: {busy_run:.1f} s; all cached: {busy_cached:.1f} s; "
        f"speed-up {busy_run / busy_cached:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--work", type=float, default=0.5, help="seconds per step for the cache speed-up")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["startup", "engine"], help="measure one part only")
    parser.add_argument(
        "--executor",
        nargs="+",
        default=["processes"],
        choices=["threads", "processes", "dask"],
        help="executors to measure the engine part with (e.g. --executor threads processes dask)",
    )
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; medians of {args.repeats} runs; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if args.only != "engine":
        with tempfile.TemporaryDirectory() as tmp:
            s = startup(Path(tmp), args.repeats)
        print(f"check (6 steps):          {s['check']:.2f} s   (target <= 1.5 s); CPU {s['check cpu']:.2f} s")
        print(f"plan (6 steps, cached):   {s['plan']:.2f} s   (target <= 1.5 s); CPU {s['plan cpu']:.2f} s")
        print(
            f"first run, new folder:    {s['first step']:.1f} s to its first step (target <= 15 s); "
            f"{s['first run']:.1f} s in all; the machine's first (no database template): {s['first ever']:.1f} s"
        )
        print(
            f"cached rerun (6 steps):   {s['cached rerun']:.2f} s   (target <= 3 s); CPU {s['cached rerun cpu']:.2f} s "
            "(the command; the server's share is not counted)"
        )
    if args.only == "startup":
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    for executor in args.executor:
        engine(args, executor)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
