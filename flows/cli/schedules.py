"""``schedule``, ``serve`` and ``deploy``: nightly runs as Prefect deployments.

Each talks to a Prefect server: ``PREFECT_API_URL``, else the folder's background server (started
when needed, and said so with the time it took), else (``BOTTLENECKS_PREFECT_SERVER=off``) a
temporary one for the command. ``schedule`` imports no Prefect, so with the server up it takes
about a second.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from rich.markup import escape

from flows import home
from flows.cli.app import app, err, fail, out, print_invalid, require_servers
from flows.cli.ops import NOTIFY_ON_HELP, NotifyOn

ProfileOpt = Annotated[Optional[str], typer.Option("--profile", "-p", help="named profile to run")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="override a param (KEY=VALUE) for the scheduled runs; repeatable"),
]
COLUMNS = ("schedule", "pipeline file", "profile", "cron", "timezone", "runs on", "next run", "tells", "fresh")


@contextmanager
def prefect_server() -> Iterator[str]:
    """The Prefect API URL this command talks to, in ``PREFECT_API_URL`` while it runs."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        yield url
        return
    from flows.services import prefect_server as background

    try:
        with _background() if background.enabled() else _temporary() as url:
            os.environ["PREFECT_API_URL"] = url
            _refresh_prefect_settings()
            try:
                yield url
            finally:
                os.environ.pop("PREFECT_API_URL", None)
                _refresh_prefect_settings()
    except background.ServerError as e:
        fail(str(e), after="set BOTTLENECKS_PREFECT_SERVER=off to start a temporary server in the command")


@contextmanager
def _background() -> Iterator[str]:
    """The folder's background server; its cold start said and timed."""
    from flows.services import prefect_server as background

    before = background.read_record(home.home())
    url = background.begin(home.home())
    after = background.read_record(home.home())
    if not before or not after or before.get("pid") != after.get("pid"):
        err.print("starting the Prefect server ...", highlight=False)
        started = time.monotonic()
        background.ready()
        err.print(
            f"Prefect server up in {time.monotonic() - started:.1f}s at {url.removesuffix('/api')} "
            "(a background server; `bottlenecks stop` stops it)",
            highlight=False,
        )
    else:
        background.ready()
    yield url


@contextmanager
def _temporary() -> Iterator[str]:
    from flows.services.scheduler_server import local_prefect_server

    err.print("starting a temporary Prefect server for this command ...", highlight=False)
    started = time.monotonic()
    try:
        with local_prefect_server() as url:
            err.print(f"Prefect server up in {time.monotonic() - started:.1f}s at {url}", highlight=False)
            yield url
    except RuntimeError as e:
        if isinstance(e, typer.Exit):  # a click Exit is a RuntimeError too; it has printed its reason
            raise
        fail(str(e))


def _refresh_prefect_settings() -> None:
    """Prefect imported before the URL was set (a test, a warm process) reads its settings again."""
    if "prefect.context" in sys.modules:
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()


def _spec(path: Path, **kwargs):
    from flows.language.errors import PipelineInvalid
    from flows.ops.deployments import ScheduleError, spec_from_file

    try:
        return spec_from_file(path, **kwargs)
    except PipelineInvalid as e:
        fail(f"{print_invalid(e)} error(s); nothing was scheduled.", 2)
    except ScheduleError as e:
        fail(str(e), 2)


@app.command()
def schedule(
    pipeline: Annotated[
        Optional[str],
        typer.Argument(help="pipeline YAML file (with --remove: the file or the pipeline's name)", show_default=False),
    ] = None,
    cron: Annotated[
        Optional[str], typer.Option(help='cron expression, e.g. "0 2 * * *" (default: the file\'s schedule: key)')
    ] = None,
    timezone: Annotated[Optional[str], typer.Option(help="IANA timezone of the cron (default UTC)")] = None,
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    notify: Annotated[
        Optional[str],
        typer.Option(
            help="after each run, `bottlenecks history --notify TARGET` (a URL, cmd:COMMAND, block:TYPE/NAME, "
            "an Apprise URL)"
        ),
    ] = None,
    notify_on: Annotated[NotifyOn, typer.Option(help=NOTIFY_ON_HELP)] = NotifyOn.regression,
    fresh: Annotated[bool, typer.Option("--fresh", help="recompute every step each run (run --no-cache)")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list the schedules")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="remove the schedule of PIPELINE (and --profile)")] = False,
) -> None:
    """Create or update the nightly schedule of PIPELINE as a Prefect deployment.

    One deployment per pipeline and profile; a run that would overlap the previous run of the
    same deployment is skipped (and recorded). Run them with `bottlenecks serve` or `bottlenecks deploy`.
    """
    if not list_ and pipeline is None:
        fail("give a PIPELINE file (or --list)", 2)
    if notify and not list_ and not remove:  # refused as `history --notify` refuses it, before anything starts
        from flows.ops import notify as tell

        try:
            tell.parse_target(notify)
        except tell.NotifyError as e:
            fail(str(e), 2)
    home.configure()
    require_servers()
    if remove:
        _remove(pipeline, profile)
        return
    spec = None
    if not list_:
        options = {"notify": notify, "notify_on": notify_on.value, "fresh": fresh}
        spec = _spec(Path(pipeline), cron=cron, timezone=timezone, profile=profile, sets=set_, **options)
    embedded = not os.environ.get("PREFECT_API_URL")
    from flows.ops import deployments as deps

    with prefect_server():
        if spec is None:
            _list()
            return
        try:
            dep_id = deps.apply(spec)
        except deps.ScheduleError as e:
            fail(str(e), 2 if "invalid schedule" in str(e) else 1)
    out.print(
        f"scheduled [bold]{escape(spec.deployment)}[/] ({escape(spec.file)}) at '{escape(spec.cron)}' "
        f"{escape(spec.timezone)}; deployment {dep_id}"
    )
    if embedded:
        err.print("runs start only while `bottlenecks serve` is running (it uses this folder's Prefect server)")


def _remove(pipeline: str, profile: str | None) -> None:
    from flows.language.errors import PipelineInvalid
    from flows.ops import deployments as deps

    try:
        name = deps.pipeline_name(pipeline)
    except PipelineInvalid as e:  # a .yaml path that is no pipeline file
        fail(f"{print_invalid(e)} error(s); nothing was removed.", 2)
    with prefect_server():
        try:
            removed = deps.remove(name, profile)
        except deps.ScheduleError as e:
            fail(str(e))
    out.print(f"removed schedule {escape(removed)}")


def _list() -> None:
    """The schedules as a table on a terminal, as tab-separated lines (a header first) otherwise."""
    from flows.ops import deployments as deps

    try:
        found = deps.deployments()
        upcoming = deps.next_runs([d["id"] for d in found])
    except deps.ScheduleError as e:
        fail(str(e))
    if not found:
        out.print(f"no schedules in the Prefect API at {escape(deps.api_url())}")
        return
    rows = [_row(dep, deps.spec_from_deployment(dep), upcoming.get(dep["id"])) for dep in found]
    if not out.is_terminal:
        for row in [COLUMNS, *rows]:
            print("\t".join(row))
        return
    widest = max(len(r[0]) for r in rows)
    if widest + 40 > out.width:  # a table this narrow would cut the name (what --remove takes): one block each
        out.print(f"schedules ({escape(deps.api_url())})", highlight=False)
        for row in rows:
            out.print(f"\n[bold]{escape(row[0])}[/]", soft_wrap=True, highlight=False)
            for col, value in zip(COLUMNS[1:], row[1:]):
                out.print(f"  {col}: {escape(value)}", soft_wrap=True, highlight=False)
        return
    from rich.table import Table

    table = Table(title=f"schedules ({deps.api_url()})")
    for i, col in enumerate(COLUMNS):  # the name stays whole; the other columns fold
        table.add_column(col, no_wrap=True, min_width=widest) if i == 0 else table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*map(escape, row))
    out.print(table)


def _row(dep: dict, spec, upcoming: str | None) -> tuple[str, ...]:
    from datetime import datetime

    params = dep.get("parameters") or {}
    when = f"{datetime.fromisoformat(upcoming.replace('Z', '+00:00')):%Y-%m-%d %H:%M} UTC" if upcoming else "-"
    return (
        dep["name"],
        str(params.get("pipeline", "?")),
        str(params.get("profile") or "-"),
        spec.cron if spec else "-",
        spec.timezone if spec else "-",
        f"work pool {dep['work_pool_name']}" if dep.get("work_pool_name") else "bottlenecks serve",
        "paused" if dep.get("paused") else when,
        f"{spec.notify} on {spec.notify_on}" if spec and spec.notify else "-",
        "yes" if spec and spec.fresh else "-",
    )


@app.command()
def serve(
    pipelines: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="pipeline files with a schedule: key (default: every schedule made with `bottlenecks schedule`)",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[Optional[int], typer.Option(help="pipeline runs at once across schedules")] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="wait for a schedule to appear instead of exiting (for a service started before any schedule)",
        ),
    ] = False,
    catch_up: Annotated[
        bool,
        typer.Option(help="run the newest slot missed while serve was down once, now (the others are recorded)"),
    ] = True,
) -> None:
    """Run the scheduled pipelines on this machine until Ctrl-C or SIGTERM.

    Uses the Prefect server of PREFECT_API_URL, else this folder's background server (started if
    needed). Slots missed while it was down and slots skipped because the previous run still ran
    are recorded in MLflow (rows of `bottlenecks history`).
    """
    home.configure()
    require_servers()
    specs = [_spec(f) for f in pipelines or []]
    from flows.ops import deployments as deps

    with prefect_server() as url:
        err.print(f"Prefect API at {url}", highlight=False)
        served = [(s, deps.find(s.deployment)) for s in specs] if specs else _wait_for_schedules(wait)
        for spec, _ in served:
            err.print(f"serving {escape(spec.deployment)} at '{escape(spec.cron)}' {escape(spec.timezone)}")
        err.print("Ctrl-C to stop")
        from flows.ops.serve import serve as run_schedules
        from flows.services import mlflow_db

        mlflow_db.prepare(artifact_root=home.artifact_root())  # a new folder's store, for the slots' rows
        _close_dead_runs()

        try:
            said = run_schedules(served, limit=limit, catch_up=catch_up, say=lambda line: err.print(escape(line)))
        except deps.ScheduleError as e:
            fail(str(e))
    err.print(escape(said), highlight=False)


def _close_dead_runs() -> None:
    """Close what a killed run left open before serving, as every command does (``flows/execute/sweep.py``:
    this folder's open-run notes), then every flow run of this Prefect API left running whose MLflow run
    is closed or whose process is gone: steps whose result the cache holds end FINISHED (Completed), the
    others KILLED (Crashed)."""
    import mlflow

    from flows import home
    from flows.cli.app import close_dead_runs
    from flows.execute.cache import StepCache
    from flows.execute.sweep import recorded
    from flows.track import zombies

    close_dead_runs()
    finished = recorded(StepCache(home.home(), create=False))
    closed = zombies.close_flow_runs(mlflow.MlflowClient(), finished=finished)
    if closed:
        err.print(
            f"closed {len(closed)} Prefect flow run(s) a dead process had left running, e.g. {closed[0]} (Crashed)"
        )


def _wait_for_schedules(wait: bool, poll: float = 30.0) -> list:
    from flows.ops import deployments as deps

    told = False
    while True:
        try:
            return deps.served_specs()
        except deps.ScheduleError as e:
            if not wait or not str(e).startswith("nothing to serve"):
                fail(str(e))
            if not told:
                err.print(f"{escape(str(e))}\nwaiting for a schedule (checking every {poll:.0f}s) ...")
                told = True
            time.sleep(poll)


@app.command()
def deploy(
    pipelines: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="pipeline files with a schedule: key (default: every existing schedule)", show_default=False
        ),
    ] = None,
    work_pool: Annotated[
        str, typer.Option("--work-pool", help="Prefect work pool whose workers run the pipelines")
    ] = ...,
    working_dir: Annotated[
        Optional[str],
        typer.Option(help="project folder on the worker hosts (process pools; pipeline paths are relative to it)"),
    ] = None,
    profile: ProfileOpt = None,
    cron: Annotated[Optional[str], typer.Option(help="cron for the given files (default: their schedule: key)")] = None,
    timezone: Annotated[Optional[str], typer.Option(help="IANA timezone of the cron")] = None,
) -> None:
    """Point schedules at a work pool so Prefect workers on other hosts (e.g. GPU boxes) run them."""
    home.configure()
    require_servers()
    if not os.environ.get("PREFECT_API_URL"):
        fail(
            "deploying to a work pool needs a shared Prefect server: set PREFECT_API_URL "
            "(e.g. http://127.0.0.1:4200/api for the docker compose deployment)"
        )
    from flows.ops import deployments as deps

    _check_work_pool(work_pool)
    if pipelines:
        specs = [_spec(p, cron=cron, timezone=timezone, profile=profile) for p in pipelines]
    else:
        specs = [s for s in map(deps.spec_from_deployment, deps.deployments()) if s is not None]
        if not specs:
            fail("no schedules to deploy: pass pipeline files or create schedules with `bottlenecks schedule`")
    variables = {"working_dir": working_dir} if working_dir else None
    for spec in specs:
        try:
            dep_id = deps.apply(spec, work_pool=work_pool, job_variables=variables)
        except deps.ScheduleError as e:
            fail(str(e))
        out.print(
            f"deployed {escape(spec.deployment)} to work pool {escape(work_pool)} at '{escape(spec.cron)}' "
            f"{escape(spec.timezone)}; deployment {dep_id}"
        )


def _check_work_pool(name: str) -> None:
    from flows.ops import prefect_api

    url = os.environ["PREFECT_API_URL"]
    try:
        prefect_api.call(url, "GET", f"/work_pools/{prefect_api.quote(name)}")
    except prefect_api.PrefectAPIError as e:
        if e.status != 404:
            fail(str(e))
        fail(
            f"work pool {name!r} does not exist at {url}; create it with "
            f"`prefect work-pool create {name} --type process` or start a worker with "
            f"`prefect worker start --pool {name} --type process`"
        )
