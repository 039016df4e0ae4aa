"""Engine overhead: N trivial steps through Prefect + MLflow against the same calls made directly.

Prints per-step orchestration overhead, cold and warm startup, and the speed-up of a fully cached
rerun. Each engine measurement is a fresh `bottlenecks run` process, as a user would run it.

    python benchmarks/overhead.py --steps 20
"""
from __future__ import annotations

import argparse
import os
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
def noop(ctx: Context, *, i: int = 0, work: float = 0.0) -> dict:
    """Wait `work` seconds (a stand-in for real compute), log one metric, return i."""
    time.sleep(work)
    ctx.log_metric("i", i)
    return {"value": i}


def pipeline(path: Path, steps: int, work: float = 0.0) -> Path:
    values = ", ".join(str(i) for i in range(steps))
    path.write_text(f"name: overhead-{steps}-{work}\nsettings: {{workers: 1}}\nsteps:\n"
                    f"  noop:\n    uses: benchmarks.overhead:noop\n"
                    f"    with: {{i: \"${{matrix.i}}\", work: {work}}}\n"
                    f"    matrix: {{i: [{values}]}}\n")
    return path


def timed_run(file: Path, env: dict, *extra: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "run", str(file), *extra], cwd=REPO, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"run failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--work", type=float, default=0.5, help="seconds per step for the cache speed-up")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "BOTTLENECKS_HOME": str(tmp / "home"), "PREFECT_HOME": str(tmp / "prefect"),
               "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}"}
        env.pop("PREFECT_API_URL", None)
        one, many = pipeline(tmp / "one.yaml", 1), pipeline(tmp / "many.yaml", args.steps)
        busy = pipeline(tmp / "busy.yaml", args.steps, args.work)

        start = time.perf_counter()
        for i in range(args.steps):
            noop.component(Context(work_dir=tmp / "direct" / str(i)), i=i)
        direct = time.perf_counter() - start

        cold = timed_run(one, env)                       # fresh stores: DB migrations, server start
        warm = statistics.median(timed_run(one, env, "--no-cache") for _ in range(args.repeats))
        full = statistics.median(timed_run(many, env, "--no-cache") for _ in range(args.repeats))
        busy_run = timed_run(busy, env, "--no-cache")
        busy_cached = timed_run(busy, env)
        per_step = (full - warm) / (args.steps - 1) - direct / args.steps

    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; medians of {args.repeats} runs")
    print(f"direct calls:             {args.steps} steps in {direct:.3f} s")
    print(f"cold start (1 step):      {cold:.1f} s   (new MLflow store, Prefect ephemeral server)")
    print(f"warm start (1 step):      {warm:.1f} s   (target <= 15 s)")
    print(f"{args.steps} trivial steps:         {full:.1f} s")
    print(f"per-step overhead:        {per_step:.3f} s (target <= 0.25 s; workers=1)")
    print(f"{args.steps} steps x {args.work} s work: {busy_run:.1f} s; all cached: {busy_cached:.1f} s; "
          f"speed-up {busy_run / busy_cached:.2f}x")


if __name__ == "__main__":
    main()
