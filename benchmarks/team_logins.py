"""What a login costs on the team's MLflow server: a request's time with MLflow's credential cache
off (``auth_cache_ttl_seconds = 0``, MLflow's default) and on (the deployment's 60 s).

MLflow's basic-auth app checks the password hash on every request unless the cache holds the
credential; a run of the engine makes dozens of requests. This starts the deployment's servers on
loopback (Postgres, MLflow's basic-auth app with one worker; needs the Debian package
``postgresql``) once per setting and times REQUESTS logged-in requests (``experiments/search``)
and RUNS 2-step ``bottlenecks run`` against them (steps in threads), with the server's CPU
seconds read through psutil (which the project has through Dask).

    python benchmarks/team_logins.py [--requests 40] [--runs 2]
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

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.servers import TeamServers, api, pg_bin  # noqa: E402  (the repository's path first)

PIPELINE = """name: team-logins
steps:
  first: {uses: "tests.support.engine_components:numbers"}
  last: {uses: "tests.support.engine_components:total", with: {values: "${first.values}"}, needs: [first]}
"""


def server_cpu(team: TeamServers) -> float:
    """CPU seconds the MLflow server and its worker processes have used so far."""
    root = psutil.Process(team.mlflow.proc.pid)
    return sum(sum(p.cpu_times()[:2]) for p in (root, *root.children(recursive=True)))


def measure(cache_seconds: int, requests: int, runs: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        team = TeamServers(Path(tmp) / "servers", auth_cache_seconds=cache_seconds).start()
        try:
            url = f"{team.mlflow_url}/api/2.0/mlflow/experiments/search"
            api("POST", url, {"max_results": 1})  # the first request warms the server
            cpu0 = server_cpu(team)
            for _ in range(requests):
                start = time.perf_counter()
                api("POST", url, {"max_results": 1})
                figures.setdefault("request wall", []).append(time.perf_counter() - start)
            figures["server CPU per request"] = [(server_cpu(team) - cpu0) / requests]
            path = Path(tmp) / "p.yaml"
            path.write_text(PIPELINE)
            env = team.client_env(Path(tmp) / "home", BOTTLENECKS_EXECUTOR="threads", BOTTLENECKS_DAEMON="off")
            env["PYTHONPATH"] = str(REPO)
            for _ in range(runs):
                cpu0 = server_cpu(team)
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "flows.cli", "run", "--no-cache", str(path)],
                    cwd=REPO,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if done.returncode != 0:
                    raise SystemExit(f"the run failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
                figures.setdefault("2-step run wall", []).append(time.perf_counter() - start)
                figures.setdefault("server CPU per run", []).append(server_cpu(team) - cpu0)
        finally:
            team.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if pg_bin() is None:
        raise SystemExit("needs Postgres' server binaries (Debian package 'postgresql')")
    print(f"machine: {os.cpu_count()} cores; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for seconds in (0, 60):
        figures = measure(seconds, args.requests, args.runs)
        print(f"\n[MLflow basic-auth, auth_cache_ttl_seconds = {seconds}]")
        for name, values in figures.items():
            print(f"  {name:24s} median {statistics.median(values):7.3f} s   (n={len(values)})")
    print(f"\nload average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
