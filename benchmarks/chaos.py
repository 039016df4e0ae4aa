"""Chaos runs: run benchmarks/chaos.yaml while a random participant is killed (SIGKILL) at a random
moment, rerun it to completion, and check what the kill may not have cost.

Participants: ``worker`` (the pool process computing a step), ``run`` (the process running the
flow: the warm zygote's child), ``command`` (the ``bottlenecks run`` command that handed the run to
the zygote), ``prefect_server`` (the folder's background Prefect server), ``zygote`` (the warm
process) and ``mlflow_server`` (an ``mlflow server`` the runs track to, in a second project folder).

After each rerun: the final outputs (the step cache's records) and the MLflow metrics of every step
equal those of an uninterrupted run; no step the cache had recorded at the kill is computed again
(one in flight may be, once); no MLflow run is left RUNNING; no lease or lock is held; no process
of the round is left but the documented warm services; every cache record reads as JSON and no
half-written one is left.

    python benchmarks/chaos.py --kills 12 --seed 0     # the figure: kills survived of kills made
    python benchmarks/chaos.py --kills 2 --only worker,run

Each round changes the pipeline's ``salt`` param, so every step is computed afresh in it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIPELINE = REPO / "benchmarks" / "chaos.yaml"
PARTICIPANTS = ("worker", "run", "command", "prefect_server", "zygote", "mlflow_server")
CHECKS = (
    "outputs and metrics equal the uninterrupted run's",
    "no step the cache had recorded at the kill computed again, none more than twice",
    "no MLflow run left RUNNING",
    "no lease or lock held",
    "no process left but the warm services",
    "cache index readable, no half-written record",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Project:
    """A folder with its own state, ledger and environment (and, with ``mlflow_server``, a server)."""

    def __init__(self, root: Path, name: str, workers: int, mlflow_server: bool = False):
        self.folder = root / name
        self.folder.mkdir(parents=True)
        self.home = self.folder / ".bottlenecks"
        self.ledger = self.folder / "ledger"
        self.workers = workers
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_", "BOTTLENECKS_"))}
        env.update(
            {
                "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
                "XDG_RUNTIME_DIR": str(root / "rt"),
                "BOTTLENECKS_DAEMON": "on",
                "BOTTLENECKS_DAEMON_IDLE": "600",
                "BOTTLENECKS_PREFECT_IDLE": "600",
                "BOTTLENECKS_CHAOS_LEDGER": str(self.ledger),
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            }
        )
        (root / "rt").mkdir(exist_ok=True)
        self.env = env
        self.mlflow: subprocess.Popen | None = None
        self.mlflow_url = ""
        if mlflow_server:
            self.mlflow_url = f"http://127.0.0.1:{_free_port()}"
            env["MLFLOW_TRACKING_URI"] = self.mlflow_url
            self.start_mlflow()

    def start_mlflow(self) -> None:
        port = self.mlflow_url.rsplit(":", 1)[1]
        cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{self.folder / 'ml.db'}"]
        cmd += ["--artifacts-destination", str(self.folder / "mlartifacts"), "--host", "127.0.0.1", "--port", port]
        cmd += ["--workers", "1"]
        env = {**self.env, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with open(self.folder / "mlflow-server.log", "ab") as log:
            self.mlflow = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.mlflow_url}/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"mlflow server did not answer at {self.mlflow_url}")

    def tracking_uri(self) -> str:
        return self.mlflow_url or f"sqlite:///{self.home / 'mlflow.db'}"

    def run(self, salt: int) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "flows.cli", "run", str(PIPELINE), "--set", f"salt={salt}"]
        cmd += ["--workers", str(self.workers)]
        return subprocess.Popen(
            cmd, cwd=self.folder, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def run_to_end(self, salt: int, timeout: float = 300) -> tuple[int, str, float]:
        started = time.monotonic()
        proc = self.run(salt)
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out, time.monotonic() - started

    def stop(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "flows.cli", "stop"], cwd=self.folder, env=self.env, capture_output=True, timeout=60
        )
        if self.mlflow is not None:
            _kill(self.mlflow.pid, signal.SIGTERM)
            self.mlflow.wait(timeout=30)


# -- what the ledger and /proc say ----------------------------------------------------------------
def ledger(project: Project, salt: int) -> list[tuple[str, str, int, float]]:
    """(event, work dir, pid, time) of the round with ``salt``."""
    if not project.ledger.exists():
        return []
    rows = []
    for line in project.ledger.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[1] == str(salt):
            rows.append((parts[0], parts[2], int(parts[3]), float(parts[4])))
    return rows


def in_flight(project: Project, salt: int) -> list[tuple[str, int]]:
    rows = ledger(project, salt)
    done = {(w, p) for e, w, p, _ in rows if e == "done"}
    return [(w, p) for e, w, p, _ in rows if e == "start" and (w, p) not in done]


def processes(project: Project) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live process started for this project."""
    mark = f"BOTTLENECKS_CHAOS_LEDGER={project.ledger}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue  # exited, waiting for its parent to reap it
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry.name)] = (ppid, cmdline)
    return found


def warm_services(project: Project) -> set[int]:
    """The zygote and the folder's Prefect server: the processes documented to outlive a run (and
    the MLflow server this script runs, with its workers)."""
    procs = processes(project)
    daemons = {pid for pid, (_, cmd) in procs.items() if "flows.services.daemon serve" in cmd}
    zygotes = {pid for pid in daemons if procs[pid][0] not in daemons}
    servers = {pid for pid, (_, cmd) in procs.items() if "flows.services.prefect_server" in cmd}
    # a Prefect server's own helpers (its services run in child processes)
    helpers = {pid for pid, (ppid, _) in procs.items() if ppid in servers}
    mlflow = project.mlflow.pid if project.mlflow is not None else None
    tracking = {pid for pid in procs if mlflow is not None and _group(pid) == mlflow}
    return zygotes | servers | helpers | tracking


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def target(
    participant: str, project: Project, proc: subprocess.Popen, salt: int, prefer: int | None = None
) -> int | None:
    """The pid to kill now, or None when that participant is not there (yet); a worker: ``prefer``
    (a pid) while it computes a step, else one computing a step."""
    procs = processes(project)
    if participant == "worker":
        flying = [p for _, p in in_flight(project, salt) if p in procs]
        if prefer in flying:
            return prefer
        return random.choice(flying) if flying else None
    if participant == "command":
        return proc.pid if proc.poll() is None else None
    daemons = {pid for pid, (_, cmd) in procs.items() if "flows.services.daemon serve" in cmd}
    if participant == "run":
        children = [pid for pid in daemons if procs[pid][0] in daemons]
        return children[0] if children else (proc.pid if proc.poll() is None else None)
    if participant == "zygote":
        zygotes = [pid for pid in daemons if procs[pid][0] not in daemons]
        return zygotes[0] if zygotes else None
    if participant == "prefect_server":
        try:
            pid = json.loads((project.home / "prefect-server.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return None
        return pid if pid in procs else None
    if participant == "mlflow_server":
        return project.mlflow.pid if project.mlflow is not None and project.mlflow.poll() is None else None
    raise ValueError(participant)


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_group(pid: int) -> None:
    """The MLflow server's workers die with it, as when its host or container goes."""
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        _kill(pid)


# -- the checks ------------------------------------------------------------------------------------
def records(project: Project, salt: int) -> dict[str, dict]:
    """Cache key -> record of the steps computed in the round with ``salt``."""
    dirs = {w for _, w, _, _ in ledger(project, salt)}
    found = {}
    for entry in (project.home / "cache").glob("*.json"):
        record = json.loads(entry.read_text())
        if Path(record.get("work_dir", "")).name in dirs:
            found[entry.stem] = record
    return found


def outputs(project: Project, salt: int) -> dict[str, object]:
    """Step instance -> its cached outputs (less the MLflow run id) in the round with ``salt``."""
    found = {}
    for record in records(project, salt).values():
        found[record["step"]] = {k: v for k, v in record["outputs"].items() if k != "run_id"}
    return found


READ_RUNS = """
import json, sys, mlflow
c = mlflow.MlflowClient(sys.argv[1])
e = c.get_experiment_by_name("chaos")
runs = c.search_runs([e.experiment_id], max_results=5000) if e else []
print(json.dumps([dict(id=r.info.run_id, name=r.info.run_name, status=r.info.status, start=r.info.start_time,
                       metrics=r.data.metrics, tags=r.data.tags) for r in runs]))
"""


def metrics(project: Project, salt: int) -> tuple[dict[str, float], list[str]]:
    """The step metrics of the round's newest finished parent run by step run name, and the names of
    every run of the experiment left RUNNING."""
    env = {k: v for k, v in project.env.items() if not k.startswith("MLFLOW_")}
    res = subprocess.run(
        [sys.executable, "-c", READ_RUNS, project.tracking_uri()], env=env, capture_output=True, text=True, timeout=120
    )
    if res.returncode != 0:
        raise RuntimeError(f"reading MLflow failed: {res.stderr[-2000:]}")
    runs = json.loads(res.stdout)
    running = [r["name"] for r in runs if r["status"] == "RUNNING"]
    keys = set(records(project, salt))
    by_id = {r["id"]: r for r in runs}
    parents = {r["tags"].get("mlflow.parentRunId") for r in runs if r["tags"].get("cache_key") in keys}
    parents = [by_id[p] for p in parents if p in by_id and by_id[p]["status"] == "FINISHED"]
    if not parents:
        return {}, running
    newest = max(parents, key=lambda r: r["start"])["id"]
    children = [r for r in runs if r["tags"].get("mlflow.parentRunId") == newest]
    return {r["name"]: r["metrics"].get("chaostest/work/value") for r in children}, running


def held_locks(project: Project) -> list[str]:
    held = []
    for path in [*(project.home / "locks").glob("*.lock"), *project.home.glob("*.lock")]:
        with open(path, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fh, fcntl.LOCK_UN)
            except BlockingIOError:
                held.append(path.name)
    return held


def unreadable_cache(project: Project) -> list[str]:
    bad = []
    cache = project.home / "cache"
    for entry in cache.glob("*"):
        if entry.suffix != ".json":
            bad.append(f"{entry.name} (half-written)")
            continue
        try:
            json.loads(entry.read_text())
        except (OSError, ValueError) as e:
            bad.append(f"{entry.name} ({e})")
    return bad


def leftovers(project: Project, before: set[int], warm: set[int]) -> list[str]:
    deadline = time.monotonic() + 15  # a worker's exit after its run's last step takes a moment
    while True:
        procs = processes(project)
        left = [f"{pid} {cmd[:80]}" for pid, (_, cmd) in procs.items() if pid not in before | warm]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)
        warm = warm | warm_services(project)


def check(project: Project, salt: int, reference: dict, committed: set[str], before: set[int]) -> list[str]:
    """What this round broke: one line per problem (none: the kill was survived)."""
    problems = []
    outs = outputs(project, salt)
    if outs != reference["outputs"]:
        problems.append(f"outputs differ: {outs} != {reference['outputs']}")
    values, running = metrics(project, salt)
    if values != reference["metrics"]:
        problems.append(f"metrics differ: {values} != {reference['metrics']}")
    if running:
        problems.append(f"MLflow runs left RUNNING: {running}")
    # a step the cache had recorded when the kill came is finished: it must not run again; one in
    # flight (started, or finished on its worker but not yet recorded by the run) may
    starts = Counter(w for e, w, _, _ in ledger(project, salt) if e == "start")
    again = sorted(w for w in committed if starts[w] > 1)
    twice = sorted(w for w, n in starts.items() if n > 2)
    if again or twice:
        problems.append(f"steps computed again: {again + twice}")
    if held := held_locks(project):
        problems.append(f"locks held: {held}")
    if left := leftovers(project, before, warm_services(project)):
        problems.append(f"processes left behind: {left}")
    if bad := unreadable_cache(project):
        problems.append(f"cache records unreadable: {bad}")
    return problems


# -- a round ------------------------------------------------------------------------------------------
def chaos_round(project: Project, participant: str, salt: int, reference: dict, rng: random.Random) -> dict:
    before = set(processes(project)) - warm_services(project)
    proc = project.run(salt)
    started = time.monotonic()
    # a worker is killed at a seeded step start (the k-th of the round), the others at a seeded moment
    # of the run: a step is in flight for a few tenths of a second only, so a moment drawn over the
    # whole run (imports, servers, tracking) often finds none, more often the faster the machine
    nth = rng.randint(1, len(reference["outputs"])) if participant == "worker" else None
    delay = rng.uniform(0.0, reference["seconds"] * 0.9)
    pid = None
    while proc.poll() is None and time.monotonic() - started < 300:
        if nth is not None:
            starts = [p for e, _, p, _ in ledger(project, salt) if e == "start"]
            if len(starts) >= nth:
                pid = target(participant, project, proc, salt, prefer=starts[nth - 1])
                if pid is not None:
                    break
        elif time.monotonic() - started >= delay:
            pid = target(participant, project, proc, salt)
            if pid is not None:
                break
        time.sleep(0.02)
    if pid is None:
        proc.communicate(timeout=300)
        return {"participant": participant, "killed": False, "problems": []}
    (kill_group if participant == "mlflow_server" else _kill)(pid)
    at = time.monotonic() - started
    committed = {Path(r["work_dir"]).name for r in records(project, salt).values()}
    try:
        first_out, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        _kill(proc.pid)
        first_out, _ = proc.communicate()
        return {"participant": participant, "killed": True, "at": at, "problems": ["the killed run hung"]}
    if participant == "mlflow_server":
        project.mlflow.wait(timeout=30)
        project.start_mlflow()
    rc, out, _ = project.run_to_end(salt)
    problems = [] if rc == 0 else [f"the rerun failed ({rc}): {out[-1500:]}"]
    if rc == 0:
        problems += check(project, salt, reference, committed, before)
    return {
        "participant": participant,
        "killed": True,
        "at": round(at, 2),
        "first_rc": proc.returncode,
        "first_tail": first_out.strip().splitlines()[-1:] if first_out.strip() else [],
        "problems": problems,
    }


def concurrent_round(project: Project, salt: int, reference: dict, runs: int = 3, load: int = 2) -> list[str]:
    """Start ``runs`` runs of one pipeline together while ``load`` busy processes take the cores:
    each step computed once, every run complete with the uninterrupted run's outputs."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    try:
        procs = [project.run(salt) for _ in range(runs)]
        results = [(p.communicate(timeout=600)[0], p.returncode) for p in procs]
    finally:
        for b in burners:
            b.kill()
            b.wait()
    problems = [f"run {i} failed ({rc}): {out[-800:]}" for i, (out, rc) in enumerate(results) if rc != 0]
    starts = Counter(w for e, w, _, _ in ledger(project, salt) if e == "start")
    if sorted(starts.values()) != [1] * len(reference["outputs"]):
        problems.append(f"steps computed other than once: {dict(starts)}")
    if (outs := outputs(project, salt)) != reference["outputs"]:
        problems.append(f"outputs differ: {outs} != {reference['outputs']}")
    summaries = [next((x for x in out.splitlines() if x.startswith("finished in")), "") for out, _ in results]
    done = sum(int(m) for line in summaries for m in _counts(line, "done"))
    cached = sum(int(m) for line in summaries for m in _counts(line, "cached"))
    if done != len(reference["outputs"]) or cached != (runs - 1) * len(reference["outputs"]):
        problems.append(f"expected {len(reference['outputs'])} done and the rest cached over the runs: {summaries}")
    if held := held_locks(project):
        problems.append(f"locks held: {held}")
    return problems


def _counts(line: str, word: str) -> list[str]:
    import re

    return re.findall(rf"(\d+) {word}", line)


def reference_run(project: Project) -> dict:
    """An uninterrupted run (salt 1, once salt 0 has started the warm services): its outputs, metrics
    and duration (the span kills are drawn in)."""
    rc, out, seconds = project.run_to_end(0)
    if rc != 0:
        raise RuntimeError(f"the uninterrupted run failed ({rc}):\n{out[-3000:]}")
    rc, out, seconds = project.run_to_end(1)
    if rc != 0:
        raise RuntimeError(f"the uninterrupted run failed ({rc}):\n{out[-3000:]}")
    values, running = metrics(project, 1)
    outs = outputs(project, 1)
    if len(outs) != 8 or sorted(values) != sorted(outs) or running:
        raise RuntimeError(f"the uninterrupted run left {len(outs)} records, metrics {values}, RUNNING {running}")
    return {"outputs": outs, "metrics": values, "seconds": seconds, "running": running}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=12, help="kills to make (spread over the participants)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default=",".join(PARTICIPANTS), help="participants, comma-separated")
    ap.add_argument("--concurrent", type=int, default=3, help="runs started together after the kills (0: none)")
    ap.add_argument("--load", type=int, default=2, help="busy processes during the concurrent runs")
    ap.add_argument("--keep", action="store_true", help="keep the project folders (printed) for a look")
    args = ap.parse_args(argv)
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(PARTICIPANTS))
    if unknown:
        ap.error(f"unknown participant(s) {', '.join(unknown)}; participants: {', '.join(PARTICIPANTS)}")
    rng = random.Random(args.seed)
    random.seed(args.seed)
    plan = [chosen[i % len(chosen)] for i in range(args.kills)]
    rng.shuffle(plan)
    root = Path(tempfile.mkdtemp(prefix="bn-chaos-"))
    projects: dict[str, Project] = {}
    results = []
    concurrent: list[str] | None = None
    try:
        for kind in ("embedded", "mlflow_server"):
            rounds = [p for p in plan if (p == "mlflow_server") == (kind == "mlflow_server")]
            if not rounds and not (kind == "embedded" and args.concurrent):
                continue
            project = Project(root, kind, args.workers, mlflow_server=kind == "mlflow_server")
            projects[kind] = project
            reference = reference_run(project)
            print(
                f"{kind}: uninterrupted run {reference['seconds']:.1f} s, {len(reference['outputs'])} steps", flush=True
            )
            for n, participant in enumerate(rounds, start=2):
                result = chaos_round(project, participant, n, reference, rng)
                results.append(result)
                verdict = "survived" if not result["problems"] else "NOT survived: " + "; ".join(result["problems"])
                where = f"at {result['at']:.1f} s" if result["killed"] else "(not found in time, no kill)"
                print(f"  kill {participant} {where}: {verdict}", flush=True)
            if kind == "embedded" and args.concurrent:
                started = time.monotonic()
                concurrent = concurrent_round(project, 10_000, reference, args.concurrent, args.load)
                verdict = "ok" if not concurrent else "FAILED: " + "; ".join(concurrent)
                print(
                    f"  {args.concurrent} runs started together with {args.load} busy processes: "
                    f"{time.monotonic() - started:.1f} s, {verdict}",
                    flush=True,
                )
    finally:
        for project in projects.values():
            project.stop()
        if args.keep:
            print(f"project folders kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    made = [r for r in results if r["killed"]]
    survived = [r for r in made if not r["problems"]]
    print(f"\nkills survived: {len(survived)} of {len(made)} (seed {args.seed}, {args.workers} workers)")
    for participant in chosen:
        mine = [r for r in made if r["participant"] == participant]
        print(f"  {participant:15s} {sum(not r['problems'] for r in mine)} of {len(mine)}")
    print("checked after each rerun: " + "; ".join(CHECKS))
    if concurrent is not None:
        print(
            f"concurrent runs: {args.concurrent} of one pipeline together, {args.load} busy processes: "
            + ("every step computed once, all complete with the same outputs" if not concurrent else "FAILED")
        )
    return 0 if len(survived) == len(made) and not concurrent else 1


if __name__ == "__main__":
    sys.exit(main())
