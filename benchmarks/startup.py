"""Start-up: where the time of `check`, `plan` and a cached rerun goes, so the next regression is seen.

Three parts, each printed with the machine's load average (wall times on a loaded machine are
mostly waiting for a core; CPU seconds are what a command costs):

    python benchmarks/startup.py --only check     # check's CPU per shipped pipeline (about a minute)
    python benchmarks/startup.py --only phases    # check, plan and a cached rerun cut into phases
    python benchmarks/startup.py --only rerun     # a cached rerun end to end with the warm process up
    python benchmarks/startup.py --only user      # the same for a user's pipeline with its own model and step
    python benchmarks/startup.py                  # all four (about 4 minutes on 2 cores)

``check`` runs `bottlenecks check FILE` in a fresh process per pipeline of ``pipelines/``, first
with an empty user cache folder (each component's module read in full, its declaration's skeleton
kept) and then again (the skeletons read).
``phases`` runs each command in a process of its own with the engine's functions timed: a fresh
process for check and plan (the import is a phase), and for the rerun a process that first imports
what the warm process imports, as the zygote does, so the figures are the forked command's.
``rerun`` is what a user sees: a 6-step pipeline of trivial steps in a new folder, run once, then
rerun with every step cached through the warm process (the command's wall and CPU, the Prefect
server's CPU); each repeat also times `plan` and `check` of that file. ``user`` is the same for a
6-step pipeline of a user's own: a module next to the pipeline holds a torch model factory that
`train.model` builds and a component of its own that reads the trained models, and the bare
`import torch` of a fresh interpreter is timed alternately with the reruns (the ratio is the target).
"""

from __future__ import annotations

import argparse
import json
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

# (group, module, attribute, label): the functions the phases are timed by, in the order they run
PHASES = [
    ("planning", "flows.plan.build", "build", "plan (all of it)"),
    ("planning", "flows.plan.build", "load", "YAML loaded"),
    ("validation", "flows.plan.build", "parse", "the pipeline's shape"),
    ("validation", "flows.plan.build", "components", "components"),
    ("validation", "flows.plan.build", "expand", "parameters, expand"),
    ("planning", "flows.plan.build", "assign_keys", "cache keys"),
    ("server contact", "flows.cli.run", "_use_background_prefect", "Prefect server found"),
    ("server contact", "flows.cli.run", "_refresh_prefect_settings", "Prefect settings"),
    ("tracking", "flows.cli.run", "_open_tracking_store", "MLflow store opened"),
    ("server contact", "flows.cli.run", "_background_ready", "Prefect server ready"),
    ("tracking", "flows.execute._run", "Tracker", "experiment"),
    ("tracking", "flows.track.runs", "Tracker.sweep_zombies", "zombie sweep"),
    ("tracking", "flows.execute._run", "open_parent", "parent run opened"),
    ("the flow", "flows.execute._run", "call_flow", "flow (all of it)"),
    ("the flow", "flows.execute._flow", "_announce", "flow run announced"),
    ("the flow", "flows.execute._flow", "_settle", "task runs"),
    ("tracking", "flows.execute._step_runs", "StepRuns.reused", "cached steps' runs"),
    ("the flow", "flows.execute._flow", "_report", "results published"),
    ("the flow", "flows.execute.prefect_view", "flush", "logs flushed"),
    ("tracking", "flows.execute._run", "close_parent", "parent run closed"),
]


COLD_CPU = 1.0  # a `run` command using more CPU than this imported the engine itself: no warm process


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fresh_env(tmp: Path) -> dict[str, str]:
    """A user's environment with nothing configured: own state, cache and warm-process folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_", "BOTTLENECKS_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env["BOTTLENECKS_CACHE"] = str(tmp / "cache")
    env["XDG_RUNTIME_DIR"] = str(tmp / "runtime")  # this benchmark's own zygote; `stop` stops only it
    (tmp / "runtime").mkdir(exist_ok=True)
    if "BOTTLENECKS_DATA" in os.environ:
        env["BOTTLENECKS_DATA"] = os.environ["BOTTLENECKS_DATA"]
    return env


def command(args: list[str], env: dict, cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``bottlenecks ARGS`` in a fresh process: (wall seconds, CPU seconds, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


# -- check's CPU per shipped pipeline -----------------------------------------------------------------


def check_each(repeats: int) -> None:
    """`check` of every shipped pipeline: its first (empty user cache) and later CPU and wall."""
    print(f"\n[check per shipped pipeline] load average {load()}")
    print(f"{'pipeline':34s} {'first CPU':>10s} {'CPU':>7s} {'wall':>7s}   (later: median of {repeats})")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        env = fresh_env(Path(tmp))
        for path in sorted((REPO / "pipelines").glob("*.yaml")):
            _, first, proc = command(["check", str(path)], env, REPO)
            if proc.returncode != 0:
                print(f"{path.name:34s} check failed: {proc.stderr.strip()[-300:]}")
                continue
            later = [command(["check", str(path)], env, REPO)[:2] for _ in range(repeats)]
            cpu = statistics.median(c for _, c in later)
            wall = statistics.median(w for w, _ in later)
            worst = max(worst, cpu)
            print(f"{path.name:34s} {first:9.2f}s {cpu:6.2f}s {wall:6.2f}s")
    print(f"the most CPU a check took: {worst:.2f} s; load average after {load()}")


# -- phases, timed inside the command's process --------------------------------------------------------


def _wrap(records: list, group: str, module: str, attr: str, label: str) -> None:
    """Replace ``module.attr`` by a function that records its wall time and its thread's CPU time
    (a step's phases run in Prefect's worker threads)."""
    import functools
    import importlib

    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    fn = getattr(owner, name, None)
    if fn is None:
        return

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            records.append((group, label, time.perf_counter() - start, time.thread_time() - cpu))

    setattr(owner, name, timed)


def inside(argv: list[str], warm: bool) -> None:
    """Run ``bottlenecks ARGV`` in this process with its phases timed; print them as JSON."""
    start, cpu = time.perf_counter(), time.process_time()
    import flows.cli as cli
    from flows.services import daemon

    daemon._in_child = True  # as the zygote's forked command: run here, hand nothing over
    if warm:  # as the zygote: the engine and its libraries imported before the command
        saved = dict(os.environ)
        daemon.preload(list(cli.PRELOAD))
        os.environ.clear()
        os.environ.update(saved)
    records: list = [("import", "import flows.cli" + (" and preload" if warm else ""), 0.0, 0.0)]
    records[0] = (*records[0][:2], time.perf_counter() - start, time.process_time() - cpu)
    import flows.cli.run  # noqa: F401
    from flows.execute import runner

    runner.load()  # configured and the engine imported, as the command is about to: its functions are timed

    for phase in PHASES:
        _wrap(records, *phase)
    sys.argv = ["bottlenecks", *argv]
    start, cpu = time.perf_counter(), time.process_time()
    try:
        cli.main()
    except SystemExit:
        pass
    total = ("total", "the command", time.perf_counter() - start, time.process_time() - cpu)
    print("PHASES " + json.dumps([*records, total]), file=sys.__stderr__, flush=True)


def phases_of(argv: list[str], env: dict, cwd: Path, warm: bool) -> list:
    flags = ["--_inside", "--_warm"] if warm else ["--_inside"]
    proc = subprocess.run(
        [sys.executable, __file__, *flags, "--", *argv], cwd=cwd, env=env, capture_output=True, text=True
    )
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("PHASES ")), None)
    if line is None:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    return json.loads(line[len("PHASES ") :])


def print_phases(title: str, runs: list[list]) -> None:
    """The median wall and CPU of each phase over ``runs`` (phases that ran more than once are summed)."""
    print(f"\n{title}")
    print(f"  {'group':15s} {'phase':34s} {'wall':>7s} {'CPU':>7s}")
    order: list[tuple[str, str]] = []
    sums: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for records in runs:
        totals: dict[tuple[str, str], list[float]] = {}
        for group, label, wall, cpu in records:
            key = (group, label)
            if key not in order:
                order.append(key)
            totals.setdefault(key, [0.0, 0.0])
            totals[key][0] += wall
            totals[key][1] += cpu
        for key, (wall, cpu) in totals.items():
            sums.setdefault(key, []).append((wall, cpu))
    for key in order:
        walls, cpus = zip(*sums[key])
        print(f"  {key[0]:15s} {key[1]:34s} {statistics.median(walls):6.3f}s {statistics.median(cpus):6.3f}s")


# -- a small pipeline in a new folder: first run, then cached reruns ----------------------------------


def small_project(tmp: Path) -> tuple[Path, Path, dict]:
    """A new folder with a 6-step pipeline of trivial steps, run once (servers and zygote started)."""
    from benchmarks.overhead import pipeline

    folder = tmp / "project"
    folder.mkdir()
    env = fresh_env(tmp)
    small = pipeline(folder / "small.yaml", 6)
    _, _, proc = command(["run", str(small)], env, folder)
    if proc.returncode != 0:
        raise SystemExit(f"the first run failed:\n{proc.stderr[-2000:]}")
    _wait_for_zygote(env, folder)
    return folder, small, env


def _wait_for_zygote(env: dict, folder: Path, timeout: float = 120.0) -> None:
    """Until the warm process the first run started answers (it imports the engine in the background)."""
    code = "from flows.services import daemon; import sys; sys.exit(0 if daemon.zygotes() else 1)"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run([sys.executable, "-c", code], cwd=folder, env=env).returncode == 0:
            return
        time.sleep(2.0)
    print("the warm process did not come up: reruns below ran without it")


def server_cpu(folder: Path) -> float | None:
    """CPU seconds the folder's background Prefect server has used so far (Linux), or None."""
    try:
        pid = json.loads((folder / ".bottlenecks" / "prefect-server.json").read_text())["pid"]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, KeyError, ValueError, IndexError):
        return None


USER_MODULE = """\
import torch
from torch import nn

from components import Context, component


class Tagger(nn.Module):
    def __init__(self, vocab_size: int = 8, num_classes: int = 8, hidden: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x, lengths=None):
        out, _ = self.rnn(self.embed(x))
        return self.head(out[:, -1])


def build(vocab_size: int = 8, num_classes: int = 8, hidden: int = 16) -> nn.Module:
    return Tagger(vocab_size, num_classes, hidden)


@component("mylab.size", outputs=["report"])
def size(ctx: Context, *, checkpoint: str, scale: int = 1) -> dict:
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)["state_dict"]
    count = sum(v.numel() for v in state.values()) * scale
    ctx.log_metrics({"parameters": count})
    return {"report": str(count)}
"""

USER_PIPELINE = """\
name: mylab-startup
settings: {workers: 1}
steps:
  data: {uses: data.delayed_recall, with: {lag: 3, vocab: 8, n_train: 64, n_valid: 32, n_test: 32}}
  fit:
    uses: train.model
    with: {data: "${data.dataset}", model: "mylab_bench:build", steps: 5, batch_size: 16, seed: "${matrix.seed}"}
    matrix: {seed: [0, 1, 2]}
  size:
    uses: mylab_bench:size
    with: {checkpoint: "${fit.checkpoint}", scale: 2}
    matrix: {seed: [0, 1]}
"""


def _counted(figures: dict, wall: float, cpu: float, env: dict, folder: Path) -> bool:
    """Record a cached rerun's wall and CPU; one that ran without the warm process (it stepped aside:
    a source file changed) is recorded apart, not counted, and the warm process awaited again."""
    if cpu > COLD_CPU:
        figures.setdefault("reruns without the warm process", []).append(wall)
        _wait_for_zygote(env, folder)
        return False
    figures.setdefault("rerun wall", []).append(wall)
    figures.setdefault("rerun command CPU", []).append(cpu)
    return True


def _inspections(figures: dict, path: Path, env: dict, folder: Path) -> None:
    """`plan` and `check` of ``path``, each in a fresh process: wall and CPU."""
    for name in ("plan", "check"):
        wall, cpu, _ = command([name, str(path)], env, folder)
        figures.setdefault(f"{name} wall", []).append(wall)
        figures.setdefault(f"{name} CPU", []).append(cpu)


def _report(figures: dict) -> None:
    for name, values in figures.items():
        print(f"  {name:32s} {statistics.median(values):6.2f} s   (all: {', '.join(f'{v:.2f}' for v in values)})")


def bare_torch(env: dict, cwd: Path) -> float:
    """Wall seconds of a fresh interpreter that imports torch and exits."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], env=env, cwd=cwd, check=True)
    return time.perf_counter() - start


def user(repeats: int) -> None:
    """A cached rerun of a user's 6-step pipeline (own model, own step), alternated with `import torch`."""
    print(f"\n[cached rerun of a user's pipeline: own model and step, warm process up] load average {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "project"
        folder.mkdir()
        (folder / "mylab_bench.py").write_text(USER_MODULE)
        path = folder / "mylab.yaml"
        path.write_text(USER_PIPELINE)
        env = fresh_env(Path(tmp))
        _, _, proc = command(["run", str(path)], env, folder)
        if proc.returncode != 0:
            raise SystemExit(f"the first run failed:\n{proc.stderr[-2000:]}")
        _wait_for_zygote(env, folder)
        figures: dict[str, list[float]] = {}
        try:
            for _ in range(repeats):
                figures.setdefault("bare import torch wall", []).append(bare_torch(env, folder))
                wall, cpu, proc = command(["run", str(path)], env, folder)
                if proc.returncode != 0 or "6 cached" not in proc.stderr:
                    raise SystemExit(f"the rerun did not serve 6 cached steps:\n{proc.stderr[-2000:]}")
                if _counted(figures, wall, cpu, env, folder):
                    _inspections(figures, path, env, folder)
        finally:
            subprocess.run([sys.executable, "-m", "flows.cli", "stop"], cwd=folder, env=env, capture_output=True)
    _report(figures)
    if figures.get("rerun wall"):
        ratio = statistics.median(figures["rerun wall"]) / statistics.median(figures["bare import torch wall"])
        print(f"  rerun / bare import torch        {ratio:6.2f}x  (medians, measured alternately)")
    print(f"load average after {load()}")


def rerun(repeats: int) -> None:
    """A cached rerun through the warm process, ``plan`` and ``check`` of the same small file."""
    print(f"\n[cached rerun, 6 steps, warm process up] load average {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder, small, env = small_project(Path(tmp))
        figures: dict[str, list[float]] = {}
        try:
            for _ in range(repeats):
                before = server_cpu(folder)
                wall, cpu, proc = command(["run", str(small)], env, folder)
                after = server_cpu(folder)
                if proc.returncode != 0 or "6 cached" not in proc.stderr:
                    raise SystemExit(f"the rerun did not serve 6 cached steps:\n{proc.stderr[-2000:]}")
                if not _counted(figures, wall, cpu, env, folder):
                    continue
                if before is not None and after is not None:
                    figures.setdefault("rerun Prefect server CPU", []).append(after - before)
                _inspections(figures, small, env, folder)
        finally:
            subprocess.run([sys.executable, "-m", "flows.cli", "stop"], cwd=folder, env=env, capture_output=True)
    _report(figures)
    print("  (the rerun's command CPU is the hand-over only; the forked command's is under phases)")
    print(f"load average after {load()}")


def phases(repeats: int) -> None:
    """check and plan of the largest shipped pipeline and the small one, and a warm cached rerun."""
    print(f"\n[phases: median of {repeats}] load average {load()}")
    largest = REPO / "pipelines" / "four_bottlenecks.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        folder, small, env = small_project(Path(tmp))
        try:
            for name, argv, warm in (
                ("check pipelines/four_bottlenecks.yaml (fresh process)", ["check", str(largest)], False),
                ("check of the 6-step file (fresh process)", ["check", str(small)], False),
                ("plan of the 6-step file (fresh process)", ["plan", str(small)], False),
                ("cached rerun of the 6-step file (the warm process's forked command)", ["run", str(small)], True),
            ):
                print_phases(name, [phases_of(argv, env, folder, warm) for _ in range(repeats)])
        finally:
            subprocess.run([sys.executable, "-m", "flows.cli", "stop"], cwd=folder, env=env, capture_output=True)
    print(f"load average after {load()}")


def main() -> None:
    if "--_inside" in sys.argv:  # one command timed from inside (see ``phases``)
        inside(sys.argv[sys.argv.index("--") + 1 :], warm="--_warm" in sys.argv)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["check", "phases", "rerun", "user"], help="measure one part only")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (medians are printed)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; load average {load()}")
    if args.only in (None, "check"):
        check_each(args.repeats)
    if args.only in (None, "phases"):
        phases(args.repeats)
    if args.only in (None, "rerun"):
        rerun(args.repeats)
    if args.only in (None, "user"):
        user(args.repeats)


if __name__ == "__main__":
    main()
