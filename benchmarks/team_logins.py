"""What a login costs on the team's MLflow server: a request's time with MLflow's credential cache
off (``auth_cache_ttl_seconds = 0``, MLflow's default) and on (the deployment's 60 s).

MLflow's basic-auth app checks the password hash on every request unless the cache holds the
credential; a run of the engine makes dozens of requests. This starts the deployment's servers on
loopback (Postgres, MLflow's basic-auth app with one worker; needs the Debian package
``postgresql``) once per setting and times REQUESTS logged-in requests (``experiments/search``)
and a 2-step ``bottlenecks run`` against them (steps in threads), alternately, with the server's
CPU seconds per request read from ``/proc``.

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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.servers import TeamServers, api, pg_bin  # noqa: E402  (the repository's path first)

PIPELINE = """name: team-logins
steps:
  first: {uses: "tests.support.engine_components:numbers"}
  last: {uses: "tests.support.engine_components:total", with: {values: "${first.values}"}, needs: [first]}
"""


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process and its waited-for children (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def server_pids(team: TeamServers) -> list[int]:
    """The MLflow server's process and its children (uvicorn's worker)."""
    root = team.mlflow.proc.pid
    kids = subprocess.run(["pgrep", "-P", str(root)], capture_output=True, text=True).stdout.split()
    return [root, *(int(k) for k in kids)]


def measure(cache_seconds: int, requests: int, runs: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        team = TeamServers(Path(tmp) / "servers", auth_cache_seconds=cache_seconds).start()
        try:
            url = f"{team.mlflow_url}/api/2.0/mlflow/experiments/search"
            api("POST", url, {"max_results": 1})  # the first request warms the server
            pids = server_pids(team)
            cpu0 = sum(cpu_seconds(p) for p in pids)
            for _ in range(requests):
                start = time.perf_counter()
                api("POST", url, {"max_results": 1})
                figures.setdefault("request wall", []).append(time.perf_counter() - start)
            figures["server CPU per request"] = [(sum(cpu_seconds(p) for p in pids) - cpu0) / requests]
            path = Path(tmp) / "p.yaml"
            path.write_text(PIPELINE)
            env = team.client_env(Path(tmp) / "home", BOTTLENECKS_EXECUTOR="threads", BOTTLENECKS_DAEMON="off")
            env["PYTHONPATH"] = str(REPO)
            for _ in range(runs):
                cpu0 = sum(cpu_seconds(p) for p in pids)
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
                figures.setdefault("server CPU per run", []).append(sum(cpu_seconds(p) for p in pids) - cpu0)
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
