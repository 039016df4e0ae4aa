"""The `bottlenecks` command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from flows import settings

app = typer.Typer(help="Declarative pipelines for the four-bottleneck comparison of sequence models.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

PipelineArg = Annotated[Path, typer.Argument(help="pipeline YAML file", show_default=False)]
SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", "-s", help="override a param (KEY=VALUE) or a step parameter (STEP.PARAM=VALUE); repeatable")]
ProfileOpt = Annotated[Optional[str], typer.Option("--profile", "-p", help="named profile to overlay")]


def _plan(path: Path, profile: str | None, sets: list[str] | None):
    """Build a plan or print every error and exit 2."""
    from flows.errors import PipelineInvalid
    from flows.plan import build

    try:
        return build(path, profile=profile, sets=sets)
    except PipelineInvalid as e:
        for error in e.errors:
            err.print(escape(str(error)), highlight=False, soft_wrap=True)
        err.print(f"[red]{len(e.errors)} error(s); nothing was run.[/]")
        raise typer.Exit(2)


@app.command()
def run(
    pipeline: PipelineArg,
    set_: SetOpt = None,
    profile: ProfileOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="recompute every step")] = False,
    workers: Annotated[Optional[int], typer.Option(help="steps run at once (default: settings.workers)")] = None,
    executor: Annotated[Optional[str], typer.Option(
        help="where steps run: processes, threads or dask (default: settings.executor)")] = None,
    cluster: Annotated[Optional[str], typer.Option(
        help="Dask scheduler address for --executor dask, e.g. tcp://HOST:8786")] = None,
) -> None:
    """Validate PIPELINE, run it as a Prefect flow and record everything in MLflow.

    Unchanged steps are served from the cache. Exits 2 for an invalid pipeline (nothing runs),
    1 when a step failed (the others still ran and were recorded).
    """
    settings.configure()
    plan = _plan(pipeline, profile, set_)
    if workers is not None:
        plan.settings["workers"] = workers
    if executor is not None or cluster is not None:
        from flows.executors import EXECUTORS

        if executor is not None and executor not in EXECUTORS:
            err.print(f"[red]--executor must be one of {', '.join(EXECUTORS)}, got {escape(executor)!r}[/]")
            raise typer.Exit(2)
        plan.settings["executor"] = executor or ("dask" if cluster else plan.settings["executor"])
        if cluster:
            plan.settings["cluster"] = {**(plan.settings.get("cluster") or {}), "address": cluster}
    from flows import connect

    try:
        connect.check_servers()
    except connect.ServerUnreachable as e:
        err.print(f"[red]{escape(str(e))}[/]\nnothing was run.")
        raise typer.Exit(1)
    background = _use_background_prefect()
    _refresh_prefect_settings()
    from flows.runner import run as run_plan  # imports Prefect and MLflow while the server boots
    from flows.runner import start_executor
    from flows.view import StepView
    from flows.executors import ExecutorError

    _open_tracking_store()  # also while the server boots
    try:  # the workers the uncached steps need start importing now, also while the server boots
        executor = start_executor(plan, use_cache=not no_cache)
    except ExecutorError as e:
        err.print(f"[red]{escape(str(e))}[/]\nnothing was run.")
        raise typer.Exit(1)
    if background:
        try:
            _background_ready()
        except BaseException:
            executor.close()
            raise

    _component_logs_to(err)
    err.print(f"[bold]{escape(plan.name)}[/] profile={plan.profile or '-'} steps={len(plan.instances)} "
              f"workers={plan.settings['workers']} executor={plan.settings['executor']} "
              f"tracking={os.environ.get('MLFLOW_TRACKING_URI')}")
    try:
        result = run_plan(plan, use_cache=not no_cache, view=StepView(list(plan.instances), console=err),
                          executor=executor)
    except ExecutorError as e:
        executor.close()
        err.print(f"[red]{escape(str(e))}[/]\nnothing was run.")
        raise typer.Exit(1)
    if result.zombies:  # runs a dead process had left RUNNING, marked KILLED at the start
        from flows.zombies import summary
        err.print(f"[yellow]{escape(summary(result.zombies))}[/]")
    counts = {s: list(result.status.values()).count(s) for s in ("done", "cached", "failed", "skipped", "stopped")}
    err.print(f"finished in {result.seconds:.1f}s: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    err.print(f"MLflow parent run {result.parent_run_id} (experiment {escape(plan.name)}); "
              "browse with `bottlenecks ui`")
    if result.stopped_by is not None:
        import signal

        err.print(f"[yellow]stopped by {signal.Signals(result.stopped_by).name}:[/] workers ended, unfinished "
                  "runs marked KILLED; rerun to resume from the cache and the checkpoints")
        raise typer.Exit(result.exit_code)
    _print_reports(result)
    if not result.ok:
        for iid, message in result.errors.items():
            err.print(f"[red]step {escape(iid)} failed:[/] {escape(message)}")
        skipped = [i for i, s in result.status.items() if s == "skipped"]
        if skipped:
            err.print(f"[yellow]not run because an upstream step failed:[/] {escape(', '.join(skipped))}")
        err.print("fix the cause and rerun: finished steps come from the cache")
        raise typer.Exit(1)


def _use_background_prefect() -> bool:
    """Point Prefect at this folder's background server (spawned on first use) before it is imported."""
    from flows import prefect_server

    if not prefect_server.enabled():
        return False
    url = prefect_server.begin(settings.home())
    os.environ["PREFECT_API_URL"] = url
    err.print(f"Prefect UI {url.removesuffix('/api')} (a background server; `bottlenecks stop` stops it)",
              highlight=False)
    return True


def _open_tracking_store() -> None:
    """Give a new folder its MLflow store from a migrated template, and open it (the runner's
    client reuses the open store), so neither waits for the Prefect server's start."""
    from flows import mlflow_db

    mlflow_db.prepare(artifact_root=settings.artifact_root())
    from mlflow.tracking import MlflowClient

    MlflowClient().search_experiments(max_results=1)


def _refresh_prefect_settings() -> None:
    """In a zygote's child Prefect was imported before this command's settings (its API URL, its
    home) were in the environment: read them again."""
    if "prefect.context" in sys.modules:
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()


def _background_ready() -> None:
    """Wait for a background server this command spawned; exit 1 (nothing run) if it never answers."""
    from flows import prefect_server

    try:
        prefect_server.ready()
    except prefect_server.ServerError as e:
        err.print(f"[red]{escape(str(e))}[/]\nnothing was run; set BOTTLENECKS_PREFECT_SERVER=off to run with "
                  "a temporary Prefect server inside the command")
        raise typer.Exit(1)


def _component_logs_to(console: Console) -> None:
    """Show components' warnings (e.g. a diverged run) in the step view's console."""
    import logging

    from rich.logging import RichHandler

    logger = logging.getLogger("bottlenecks")
    logger.handlers = [RichHandler(console=console, show_path=False, show_time=False)]
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def _print_reports(result) -> None:
    """Print the scorecard table of any report step in the run."""
    for outputs in result.outputs.values():
        path = outputs.get("scorecard") if isinstance(outputs, dict) else None
        if isinstance(path, str) and path.endswith(".json") and Path(path).exists():
            from components.report import render_architectures, render_table

            card = json.loads(Path(path).read_text())
            out.print(render_table(card))
            out.print(render_architectures(card))


@app.command()
def check(
    pipelines: Annotated[list[Path], typer.Argument(help="pipeline YAML files", show_default=False)],
    profile: ProfileOpt = None,
    set_: SetOpt = None,
) -> None:
    """Validate pipeline files without running anything; report every error in every file."""
    from flows.errors import PipelineInvalid
    from flows.plan import build

    bad = 0
    for path in pipelines:
        try:
            plan = build(path, profile=profile, sets=set_)
        except PipelineInvalid as e:
            bad += 1
            for error in e.errors:
                err.print(escape(str(error)), highlight=False, soft_wrap=True)
            continue
        out.print(f"[green]ok[/] {escape(str(path))}: {len(plan.pipeline.steps)} steps, "
                  f"{len(plan.instances)} step runs")
    if bad:
        err.print(f"[red]{bad} of {len(pipelines)} file(s) invalid[/]")
        raise typer.Exit(2)


@app.command("plan")
def plan_cmd(pipeline: PipelineArg, set_: SetOpt = None, profile: ProfileOpt = None) -> None:
    """Show the expanded DAG: every step run, its inputs and whether it would come from the cache."""
    settings.configure()
    plan = _plan(pipeline, profile, set_)
    from flows.cache import StepCache

    cache = StepCache(settings.home())
    table = Table(title=f"{plan.name} (profile {plan.profile or '-'})")
    for col in ("step run", "component", "after", "cache", "key"):
        table.add_column(col)
    would_run: set[str] = set()
    for iid, inst in plan.instances.items():
        hit = inst.step.cache and cache.get(inst.key) is not None and not (set(inst.deps) & would_run)
        if not hit:
            would_run.add(iid)
        status = "[blue]cached" if hit else "[yellow]will run"
        table.add_row(escape(iid), inst.component.name, escape(", ".join(inst.deps)) or "-", status, inst.key[:12])
    out.print(table)


@app.command()
def components(name: Annotated[Optional[str], typer.Argument(help="show one component in full")] = None) -> None:
    """List registered components with their parameters, types, defaults and outputs."""
    from components.registry import get, registry

    from flows.plan import _type_name

    comps = [get(name)] if name else [c for _, c in sorted(registry().items())]
    for comp in comps:
        out.print(f"[bold cyan]{comp.name}[/]  {escape(comp.summary)}")
        if name:
            out.print(escape(comp.doc))
        for pname, (ann, default, required) in comp.parameters().items():
            default_text = "[red]required[/]" if required else f"= {escape(repr(default))}"
            out.print(f"    {pname}: {escape(_type_name(ann))} {default_text}")
        outputs = ", ".join(comp.outputs + ("run_id",))
        tag = f"  bottleneck: {comp.bottleneck}" if comp.bottleneck else ""
        out.print(f"    [dim]outputs: {outputs}{tag}[/]")


@app.command()
def schema(output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write to a file")] = None) -> None:
    """Print the JSON Schema of pipeline files (for editor completion and checking)."""
    from flows.schema import pipeline_schema

    text = json.dumps(pipeline_schema(), indent=2)
    if output:
        output.write_text(text + "\n")
        err.print(f"wrote {output}")
    else:
        print(text)


@app.command()
def stop() -> None:
    """Stop this folder's background Prefect server and the warm process runs are handed to (the next
    `bottlenecks run` starts them again)."""
    from flows import prefect_server

    from flows import daemon

    zygote = daemon.stop()
    if zygote:
        out.print(f"stopped the warm process runs were handed to (pid {zygote})")
    record = prefect_server.stop(settings.home())
    if record:
        out.print(f"stopped the background Prefect server at {record['url']} (pid {record['pid']})")
    else:
        out.print("no background Prefect server was running here")


@app.command()
def ui(port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 5000) -> None:
    """Open the MLflow UI on this project's store (or print where the configured server is)."""
    settings.configure()
    uri = os.environ["MLFLOW_TRACKING_URI"]
    if uri.startswith("http"):
        out.print(f"MLflow is a server here: open {uri}")
        return
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1"]
    root = settings.artifact_root()
    if root:
        cmd += ["--default-artifact-root", root]
    out.print(f"MLflow UI on http://127.0.0.1:{port} (Ctrl-C to stop)")
    from flows.tracking import experiment_links
    out.print("\n".join(experiment_links(f"http://127.0.0.1:{port}")), highlight=False)
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    raise typer.Exit(subprocess.call(cmd, env=env))


from flows.ops_cli import register as _register_ops; _register_ops(app)  # noqa: E402,E702


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        from flows import daemon

        rc = daemon.hand_over(sys.argv[1:])   # a warm process that has the engine imported
        if rc is not None:
            sys.exit(rc)
    app()


if __name__ == "__main__":
    main()
