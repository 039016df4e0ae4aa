"""``history``: a pipeline's runs night by night (``schedule``, ``serve`` and ``deploy`` are in schedules.py)."""

from __future__ import annotations

import tempfile
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from flows import home
from flows.cli.app import app, close_dead_runs, err, fail, print_invalid, require_servers


class NotifyOn(str, Enum):
    """The verdicts ``--notify`` tells of (``flows.ops.notify.WHEN``): ``history`` and ``schedule``."""

    regression = "regression"
    pipeline = "pipeline"
    change = "change"
    always = "always"


NOTIFY_ON_HELP = (
    "which verdicts --notify sends: regression; pipeline (a regression, or a changed pipeline that moved a "
    "judged metric or claim beyond its noise); change (any finding); always"
)


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
            "--metric", "-m", help="metrics matching this glob, step runs' too, e.g. 'train*/test/acc'; repeatable"
        ),
    ] = None,
    higher: Annotated[
        Optional[list[str]], typer.Option("--higher", help="metrics matching this glob are better higher; repeatable")
    ] = None,
    lower: Annotated[
        Optional[list[str]], typer.Option("--lower", help="metrics matching this glob are better lower; repeatable")
    ] = None,
    plot: Annotated[
        bool, typer.Option(help="log a trend plot to the judged run (a write to MLflow: off unless asked)")
    ] = False,
    notify: Annotated[
        Optional[str],
        typer.Option(
            help="tell someone: an http(s) URL (JSON POST), cmd:COMMAND (message on stdin), block:TYPE/NAME or an "
            "Apprise URL (slack://, msteams://, mailto://, ...)"
        ),
    ] = None,
    notify_on: Annotated[NotifyOn, typer.Option(help=NOTIFY_ON_HELP)] = NotifyOn.regression,
) -> None:
    """Show PIPELINE's results over its last runs and judge the newest finished one; exit 1 on a regression.

    A metric counts as changed when it leaves its noise: the seed-to-seed spread within the newest and
    the previous run (Welch t, Holm over the night's tests), or, with one value a run, the relative
    threshold against the median. Better is known by name (loss, time, seconds, memory, error lower;
    acc, bleu, recall, claims/holds higher) or --higher/--lower; a regression is a metric worse beyond
    its noise, a claim gone from holds to fails, or a failed, crashed or dead newest run (one an operator
    stopped is named and left out, never a regression). Improvements,
    moves of unknown direction, and changes that came with a changed pipeline or another environment
    exit 0. Exit 3: no regression, but --notify could not deliver (a regression exits 1 either way).
    """
    home.configure(create=False)  # reads only: leaves no folder behind
    close_dead_runs()  # a run a kill left RUNNING is judged KILLED, as it is in both stores
    from flows.ops import history as hist
    from flows.ops import notify as tell

    try:
        target = tell.parse_target(notify) if notify else None
    except tell.NotifyError as e:
        fail(str(e), 2)
    name, frame, thresholds = _read(pipeline, last, threshold, metric)
    shared = frame.attrs.get("files") or {}
    if shared:  # one name, several files: runs of another file are not this pipeline's history
        listed = ", ".join(f"{f} ({n} run{'s' if n != 1 else ''})" for f, n in shared.items())
        err.print(
            f"[yellow]warning:[/] {len(shared)} pipeline files share the name {name!r}: {listed}; pass the "
            "file (`bottlenecks history FILE.yaml`) to follow one",
            highlight=False,
            soft_wrap=True,
        )
    found = hist.judge(frame, thresholds, hist.directions(higher, lower))
    _show(frame, found, plot)
    told = target is None or _notify(tell, target, notify_on.value, name, found, frame)
    if found.regressed:
        raise typer.Exit(1)
    better = sum(f.kind == "improvement" for f in found.flags)
    err.print(
        f"[green]no regression[/] in the newest of {len(frame)} run(s){f'; {better} improvement(s)' if better else ''}"
    )
    if not told:
        raise typer.Exit(3)


def _read(pipeline: str, last: int, threshold: list[str] | None, metric: list[str] | None):
    """(the pipeline's name, its runs' table, the thresholds), or exit 2 naming what is wrong."""
    from flows.language.errors import PipelineInvalid
    from flows.ops import history as hist
    from flows.ops.deployments import pipeline_name  # without importing Prefect

    require_servers(2)
    try:
        name = pipeline_name(pipeline)
    except PipelineInvalid as e:
        fail(f"{print_invalid(e)} error(s); no history shown.", 2)
    try:
        thresholds = hist.parse_thresholds(threshold)  # a bad option is told before the store is read
        path = str(Path(pipeline).resolve()) if Path(pipeline).suffix in (".yaml", ".yml") else None
        return name, hist.table(name, last, metric, path), thresholds
    except hist.HistoryError as e:
        fail(str(e), 2)


def _show(frame, found, plot: bool) -> None:
    """Print the table, the notes and the findings; log the trend plot to the judged run."""
    from flows.ops import history as hist

    print(hist.render(frame, found.flags))
    for note in found.notes:
        err.print(escape(note), highlight=False, soft_wrap=True)
    if plot:
        with tempfile.TemporaryDirectory() as tmp:
            png = hist.trend_plot(frame, found.flags, Path(tmp) / "trend.png")
            try:
                hist.log_trend(found.newest, png, frame)
                err.print(f"trend plot logged to run {found.newest} as history/trend.png")
            except Exception as e:
                if not _forbidden(e):
                    raise
                # a reader's login (docs/deployment.md): the table and the verdict are what it came for
                err.print(f"trend plot not logged: this MLflow login may only read run {found.newest} (--no-plot)")
    _print_flags(found.flags)


def _forbidden(error: Exception) -> bool:
    """Whether MLflow refused a write for want of permission: a tracking call's error, or an artifact
    upload's (an HTTP error with the 403 response)."""
    response = getattr(error, "response", None)
    return getattr(error, "error_code", None) == "PERMISSION_DENIED" or getattr(response, "status_code", None) == 403


def _links(frame, newest: str, previous: str | None) -> tuple[dict[str, str], list[str]]:
    """The MLflow pages of the judged and the previous run and their Prefect flow runs' (the folder's own
    server included) where a server keeps them; and what to say where no UI serves a link."""
    from flows.track.links import mlflow_run, prefect_flow_run, unserved

    folder = home.home()
    links = {}
    for name, rid in (("newest", newest), ("previous", previous)):
        if rid:
            links[name] = mlflow_run(frame.attrs.get("experiment", "0"), rid)
            flow = prefect_flow_run(frame.attrs.get("flow_run", {}).get(rid), folder)
            if flow:
                links[f"{name} (Prefect)"] = flow
    return links, unserved(frame.attrs.get("flow_run", {}).get(newest), folder)


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
    verdict = tell.verdict(found.flags)
    if not tell.due(when, verdict, found.flags):
        err.print(f"not notified: the verdict is {verdict} (--notify-on {when})")
        return True
    links, unserved = _links(frame, found.newest, found.previous)
    try:
        done = tell.send(target, tell.message(name, found.flags, links, [*found.notes, *unserved]))
    except tell.NotifyError as e:
        err.print(f"[red]notification failed[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return False
    err.print(f"notified {escape(str(target))} ({escape(done)}): {verdict}", highlight=False, soft_wrap=True)
    return True
