"""Commands for nightly runs: ``schedule``, ``serve``, ``deploy`` and ``history``."""

from __future__ import annotations

import os
import tempfile
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from flows import home
from flows.cli.app import app, err, fail, out, print_invalid, require_servers

ProfileOpt = Annotated[Optional[str], typer.Option("--profile", "-p", help="named profile to run")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="override a param (KEY=VALUE) for the scheduled runs; repeatable"),
]


def _spec(path: Path, **kwargs):
    from flows.language.errors import PipelineInvalid
    from flows.ops.schedule import ScheduleError, spec_from_file

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
    list_: Annotated[bool, typer.Option("--list", help="list the schedules")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="remove the schedule of PIPELINE (and --profile)")] = False,
) -> None:
    """Create or update the nightly schedule of PIPELINE as a Prefect deployment.

    One deployment per pipeline and profile; a run that would overlap the previous run of the
    same deployment is cancelled. Run them with `bottlenecks serve` or `bottlenecks deploy`.
    """
    home.configure()
    require_servers()
    from flows.ops import schedule as sched

    if list_:
        _list()
        return
    if pipeline is None:
        fail("give a PIPELINE file (or --list)", 2)
    if remove:
        from flows.language.errors import PipelineInvalid

        try:
            name = sched.remove(pipeline, profile)
        except PipelineInvalid as e:  # a .yaml path that is no pipeline file
            fail(f"{print_invalid(e)} error(s); nothing was removed.", 2)
        except sched.ScheduleError as e:
            fail(str(e))
        out.print(f"removed schedule {escape(name)}")
        return
    spec = _spec(Path(pipeline), cron=cron, timezone=timezone, profile=profile, sets=set_)
    dep_id = sched.apply(spec)
    out.print(
        f"scheduled [bold]{escape(spec.deployment)}[/] ({escape(spec.file)}) at '{escape(spec.cron)}' "
        f"{escape(spec.timezone)}; deployment {dep_id}"
    )
    if not os.environ.get("PREFECT_API_URL"):
        err.print("runs start only while `bottlenecks serve` is running (it starts a local Prefect server)")


def _list() -> None:
    from flows.ops import schedule as sched

    deps = sched.deployments()
    if not deps:
        out.print(f"no schedules in {escape(sched.api_url())}")
        return
    table = Table(title=f"schedules ({sched.api_url()})")
    for col in ("schedule", "pipeline file", "profile", "cron", "timezone", "runs on", "next run"):
        table.add_column(col)
    for dep in deps:
        spec = sched.spec_from_deployment(dep)
        upcoming = sched.next_runs(dep.id)
        when = f"{upcoming[0].expected_start_time:%Y-%m-%d %H:%M %Z}" if upcoming else "-"
        table.add_row(
            escape(dep.name),
            escape(str((dep.parameters or {}).get("pipeline", "?"))),
            escape(str((dep.parameters or {}).get("profile") or "-")),
            escape(spec.cron if spec else "-"),
            escape(spec.timezone if spec else "-"),
            escape(f"work pool {dep.work_pool_name}" if dep.work_pool_name else "bottlenecks serve"),
            "paused" if dep.paused else when,
        )
    out.print(table)


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
) -> None:
    """Run the scheduled pipelines on this machine until Ctrl-C.

    Uses the Prefect server of PREFECT_API_URL, or starts a local one on 127.0.0.1 over the
    project's store when it is unset.
    """
    home.configure()
    require_servers()
    from flows.ops import schedule as sched

    if os.environ.get("PREFECT_API_URL"):
        _serve(pipelines or [], limit, wait)
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.services.scheduler_server import local_prefect_server

    err.print("starting a local Prefect server for the scheduler ...")
    try:
        with local_prefect_server() as url:
            os.environ["PREFECT_API_URL"] = url  # flow-run subprocesses inherit it
            with temporary_settings({PREFECT_API_URL: url}):
                err.print(f"Prefect API at {url}")
                _serve(pipelines or [], limit, wait)
    except typer.Exit:  # a click Exit is a RuntimeError too; it has printed its reason already
        raise
    except (RuntimeError, sched.ScheduleError) as e:
        fail(str(e))


def _serve(files: list[Path], limit: int | None, wait: bool = False, poll: float = 30.0) -> None:
    from flows.ops import schedule as sched

    if files:
        specs = [_spec(f) for f in files]
    else:
        told = False
        while True:
            try:
                specs = sched.served_specs()
                break
            except sched.ScheduleError as e:
                if not wait:
                    fail(str(e))
                if not told:
                    err.print(f"{escape(str(e))}\nwaiting for a schedule (checking every {poll:.0f}s) ...")
                    told = True
                time.sleep(poll)
    for spec in specs:
        err.print(f"serving {escape(spec.deployment)} at '{escape(spec.cron)}' {escape(spec.timezone)}")
    err.print("Ctrl-C to stop")
    sched.serve(specs, limit=limit)


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
    from prefect.exceptions import ObjectNotFound

    from flows.ops import schedule as sched

    with sched.prefect_client() as client:
        try:
            client.read_work_pool(work_pool)
        except ObjectNotFound:
            fail(
                f"work pool {work_pool!r} does not exist at {os.environ['PREFECT_API_URL']}; create it with "
                f"`prefect work-pool create {work_pool} --type process` or start a worker with "
                f"`prefect worker start --pool {work_pool} --type process`"
            )
    if pipelines:
        specs = [_spec(p, cron=cron, timezone=timezone, profile=profile) for p in pipelines]
    else:
        specs = [s for s in map(sched.spec_from_deployment, sched.deployments()) if s is not None]
        if not specs:
            fail("no schedules to deploy: pass pipeline files or create schedules with `bottlenecks schedule`")
    variables = {"working_dir": working_dir} if working_dir else None
    for spec in specs:
        dep_id = sched.apply(spec, work_pool=work_pool, job_variables=variables)
        out.print(
            f"deployed {escape(spec.deployment)} to work pool {escape(work_pool)} at '{escape(spec.cron)}' "
            f"{escape(spec.timezone)}; deployment {dep_id}"
        )


class NotifyOn(str, Enum):
    regression = "regression"
    change = "change"
    always = "always"


@app.command()
def history(
    pipeline: Annotated[
        str, typer.Argument(help="pipeline name (its MLflow experiment) or YAML file", show_default=False)
    ],
    last: Annotated[
        int, typer.Option("--last", "-n", min=2, help="runs shown; the newest finished one is judged")
    ] = 10,
    threshold: Annotated[
        Optional[list[str]],
        typer.Option(
            help="for metrics with one value a run (no seeds): relative change vs the median that counts, "
            "0.25 or METRIC_GLOB=0.5; repeatable"
        ),
    ] = None,
    metric: Annotated[
        Optional[list[str]],
        typer.Option(
            "--metric", "-m", help="metrics matching this glob, step runs' too, e.g. 'train*/test_acc'; repeatable"
        ),
    ] = None,
    higher: Annotated[
        Optional[list[str]], typer.Option("--higher", help="metrics matching this glob are better higher; repeatable")
    ] = None,
    lower: Annotated[
        Optional[list[str]], typer.Option("--lower", help="metrics matching this glob are better lower; repeatable")
    ] = None,
    plot: Annotated[bool, typer.Option(help="log a trend plot to the judged run")] = True,
    notify: Annotated[
        Optional[str],
        typer.Option(
            help="tell someone: an http(s) URL (JSON POST), cmd:COMMAND (message on stdin) or block:TYPE/NAME"
        ),
    ] = None,
    notify_on: Annotated[NotifyOn, typer.Option(help="which verdicts --notify sends")] = NotifyOn.regression,
) -> None:
    """Show PIPELINE's results over its last runs and judge the newest finished one; exit 1 on a regression.

    A metric counts as changed when it leaves its noise: the seed-to-seed spread within the newest and
    the previous run (Welch t, Holm over the night's tests), or, with one value a run, the relative
    threshold against the median. Better is known by name (loss, time, seconds, memory, error lower;
    acc, bleu, recall, claims/holds higher) or --higher/--lower; a regression is a metric worse beyond
    its noise, a claim gone from holds to fails, or a failed newest run. Improvements, moves of unknown
    direction, and changes that came with a changed pipeline or another environment exit 0. Exit 3: no
    regression, but --notify could not deliver (a regression exits 1 whether or not it was delivered).
    """
    home.configure()
    from flows.language.errors import PipelineInvalid
    from flows.ops import history as hist
    from flows.ops import notify as tell
    from flows.ops.schedule import pipeline_name

    try:
        target = tell.parse_target(notify) if notify else None
    except tell.NotifyError as e:
        fail(str(e), 2)
    require_servers(2)
    try:
        name = pipeline_name(pipeline)
    except PipelineInvalid as e:
        fail(f"{print_invalid(e)} error(s); no history shown.", 2)
    try:
        thresholds = hist.parse_thresholds(threshold)
        frame = hist.table(name, last, metric)
    except hist.HistoryError as e:
        fail(str(e), 2)
    found = hist.judge(frame, thresholds, hist.directions(higher, lower))
    print(hist.render(frame, found.flags))
    for note in found.notes:
        err.print(escape(note), highlight=False, soft_wrap=True)
    if plot:
        with tempfile.TemporaryDirectory() as tmp:
            png = hist.trend_plot(frame, found.flags, Path(tmp) / "trend.png")
            hist.log_trend(found.newest, png, frame)
        err.print(f"trend plot logged to run {found.newest} as history/trend.png")
    _print_flags(found.flags)
    told = target is None or _notify(tell, target, notify_on.value, name, found, frame)
    if found.regressed:
        raise typer.Exit(1)
    better = sum(f.kind == "improvement" for f in found.flags)
    err.print(
        f"[green]no regression[/] in the newest of {len(frame)} run(s){f'; {better} improvement(s)' if better else ''}"
    )
    if not told:
        raise typer.Exit(3)


LABELS = {
    "improvement": "[green]IMPROVEMENT[/]",
    "change": "[yellow]CHANGE[/]",
    "environment": "[magenta]CHANGED WITH THE ENVIRONMENT[/]",
    "pipeline": "[cyan]PIPELINE CHANGED[/]",
}


def _print_flags(flags) -> None:
    for flag in flags:
        label = LABELS.get(flag.kind, "[red]REGRESSION[/]")
        err.print(f"{label} {escape(flag.message)}", highlight=False, soft_wrap=True)


def _notify(tell, target, when: str, name: str, found, frame) -> bool:
    """Send the verdict when ``when`` asks for it; False when the delivery failed (reported here)."""
    from flows.track.links import mlflow_run

    verdict = tell.verdict(found.flags)
    if not tell.due(when, verdict):
        err.print(f"not notified: the verdict is {verdict} (--notify-on {when})")
        return True
    experiment = frame.attrs.get("experiment", "0")
    links = {"newest": mlflow_run(experiment, found.newest)}
    if found.previous:
        links["previous"] = mlflow_run(experiment, found.previous)
    try:
        done = tell.send(target, tell.message(name, found.flags, links, found.notes))
    except tell.NotifyError as e:
        err.print(f"[red]notification failed[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return False
    err.print(f"notified {escape(str(target))} ({escape(done)}): {verdict}", highlight=False, soft_wrap=True)
    return True
