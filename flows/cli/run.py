"""``bottlenecks run``: validate, start what the run needs while Prefect boots, run, report."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from flows import home
from flows.cli.app import PipelineArg, ProfileOpt, SetOpt, app, err, fail, out, plan_or_exit, require_servers
from flows.settings import EXECUTORS

FreshOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--fresh",
        metavar="PATTERN",
        help="compute these steps again even when cached: a step id, step run or component, * wildcards "
        "(repeatable; adds to settings.fresh); the other steps are served from the cache",
        show_default=False,
    ),
]


MaxSeedsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--max-seeds",
        help="with --until-decided: the most seeds a claim gets, the design's last look (default: "
        "settings.until_decided.max_seeds, else 10); implies --until-decided",
        show_default=False,
    ),
]
BudgetOpt = Annotated[
    Optional[str],
    typer.Option(
        "--budget",
        metavar="DURATION",
        help="with --until-decided: start no look that would end past this time (45m, 2h, 1h30m); "
        "implies --until-decided",
        show_default=False,
    ),
]


@app.command()
def run(
    pipeline: PipelineArg,
    set_: SetOpt = None,
    profile: ProfileOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="recompute every step")] = False,
    fresh: FreshOpt = None,
    workers: Annotated[Optional[int], typer.Option(help="steps run at once (default: settings.workers)")] = None,
    executor: Annotated[
        Optional[str], typer.Option(help="where steps run: processes, threads or dask (default: settings.executor)")
    ] = None,
    cluster: Annotated[
        Optional[str], typer.Option(help="Dask scheduler address for --executor dask, e.g. tcp://HOST:8786")
    ] = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="add seeds to the claims still undecided, look by look under a planned sequential design, "
            "until each is decided (or --max-seeds, --budget); only the steps that feed them run again",
        ),
    ] = False,
    max_seeds: MaxSeedsOpt = None,
    budget: BudgetOpt = None,
) -> None:
    """Validate PIPELINE, run it as a Prefect flow and record everything in MLflow.

    Unchanged steps are served from the cache (`bottlenecks plan` says why a step would not be);
    `--fresh 'train*'` computes matching steps again. Exits 2 for an invalid pipeline (nothing
    runs), 1 when a step failed (the others still ran and were recorded).
    """
    home.configure()
    plan = plan_or_exit(pipeline, profile, set_)
    design = _design(plan, until_decided, max_seeds, budget)
    options = (fresh, workers, executor, cluster)
    _with_options(plan, *options)  # a bad option is refused before anything starts
    require_servers(after="nothing was run.")
    _warm_for_next()
    _component_logs_to(err)
    if design is None:
        result = _run_once(plan, no_cache)
    else:
        plan, result = _run_looks(pipeline, profile, list(set_ or []), design, options, no_cache)
    _summarise(plan, result)


def _warm_for_next() -> None:
    """Start the warm process the next run here is handed to, now that this one does work (a run
    refused above, invalid or without its servers, starts none)."""
    from flows.services import daemon

    daemon.start_wanted()


def _with_options(plan, fresh, workers, executor, cluster):
    apply_fresh(plan, fresh)
    _apply_options(plan, workers, executor, cluster)
    return plan


def _run_once(plan, no_cache: bool):
    executor = _start(plan, use_cache=not no_cache)
    err.print(
        f"[bold]{escape(plan.name)}[/] profile={plan.profile or '-'} steps={len(plan.instances)} "
        f"workers={plan.settings.workers} executor={plan.settings.executor} "
        f"tracking={os.environ.get('MLFLOW_TRACKING_URI')}"
    )
    return _execute(plan, executor, use_cache=not no_cache)


def _design(plan, flag: bool, max_seeds: int | None, budget: str | None) -> dict | None:
    """``{max_seeds, budget}`` from the options over ``settings.until_decided``; None when off (exit 2 if bad)."""
    from flows.settings import DEFAULT_MAX_SEEDS, parse_duration
    from flows.settings import until_decided as from_settings

    written = from_settings(plan.settings.until_decided)
    if not (flag or max_seeds is not None or budget is not None or written):
        return None
    design = written or {"max_seeds": DEFAULT_MAX_SEEDS, "budget": None, "spending": "pocock"}
    if max_seeds is not None:
        if max_seeds < 2:
            fail(f"--max-seeds must be at least 2, got {max_seeds}", 2, after="nothing was run.")
        design["max_seeds"] = max_seeds
    if budget is not None:
        seconds = parse_duration(budget.strip())
        if seconds is None:
            fail(f"--budget must be a duration such as 45m, 2h or 1h30m, got {budget!r}", 2, after="nothing was run.")
        design["budget"] = seconds
    return design


def _run_looks(pipeline: Path, profile, sets: list[str], design: dict, options, no_cache: bool):
    """The looks of ``--until-decided`` (``flows/ops/looks.py`` takes them), each run and shown here.
    Returns the last plan and its result."""
    from flows.cli.app import print_invalid
    from flows.language.errors import PipelineInvalid
    from flows.ops.decide import NothingToDecide
    from flows.ops.looks import run_looks

    fresh, *rest = options

    parents: list[str] = []  # each look's parent run, to name those that ran when a later look is refused

    def run_look(plan, first: bool):  # --no-cache and --fresh apply to the first look
        result = _run_once(_with_options(plan, fresh if first else None, *rest), no_cache and first)
        parents.append(result.parent_run_id)
        return result

    try:
        done = run_looks(
            pipeline,
            profile=profile,
            sets=sets,
            design=design,
            run=run_look,
            say=lambda line: err.print(f"[bold cyan]until decided:[/] {escape(line)}"),
        )
    except NothingToDecide as e:
        fail(str(e), 2, after="nothing was run.")
    except PipelineInvalid as e:  # the first build passed: only what the looks add can be refused
        ran = (
            f"look {len(parents) + 1} was refused; looks 1-{len(parents)} ran and are recorded "
            f"(MLflow parent runs {', '.join(parents)})"
            if parents
            else "nothing was run"
        )
        fail(f"{print_invalid(e)} error(s); {ran}.", 2)
    return done.plan, done.result


def apply_fresh(plan, patterns: list[str] | None) -> None:
    """Mark the steps ``--fresh`` names to be computed again; exit 2 for a pattern that names none."""
    from flows.plan.build import mark_fresh, no_match

    for pattern in mark_fresh(plan.instances, list(patterns or []), "--fresh"):
        fail(no_match(pattern, plan.instances), 2, after="nothing was run.")


def _apply_options(plan, workers: int | None, executor: str | None, cluster: str | None) -> None:
    """``--workers``, ``--executor`` and ``--cluster`` over the pipeline's settings (exit 2 if invalid)."""
    if workers is not None:
        if workers < 1:
            fail(f"--workers must be at least 1, got {workers}", 2)
        plan.settings.workers = workers
    if executor is not None or cluster is not None:
        if executor is not None and executor not in EXECUTORS:
            fail(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}", 2)
        plan.settings.executor = executor or ("dask" if cluster else plan.settings.executor)
        if cluster is not None and "://" not in cluster:
            fail(f"--cluster must be a scheduler address such as tcp://HOST:8786, got {cluster!r}", 2)
        if cluster:
            plan.settings.cluster = {**(plan.settings.cluster or {}), "address": cluster}


def _start(plan, use_cache: bool):
    """While Prefect's server boots: import the engine, open the tracking store, start the workers
    the uncached steps need; then wait for the server. Returns the executor."""
    background = _use_background_prefect()
    _refresh_prefect_settings()
    from flows.execute import runner
    from flows.execute.executors import ExecutorError

    runner.load()  # Prefect and MLflow imported while the server boots
    _open_tracking_store()
    try:
        executor = runner.start_executor(plan, use_cache=use_cache)
    except ExecutorError as e:
        fail(str(e), after="nothing was run.")
    if background:
        try:
            _background_ready()
        except BaseException:
            executor.close()
            raise
    return executor


def _execute(plan, executor, use_cache: bool):
    """Run the plan; an executor that cannot start or a full disk ends the command with a message."""
    from flows.execute.cache import no_room_behind
    from flows.execute.executors import ExecutorError
    from flows.execute.runner import run as run_plan
    from flows.execute.view import StepView

    try:
        return run_plan(plan, use_cache=use_cache, view=StepView(list(plan.instances), console=err), executor=executor)
    except ExecutorError as e:
        executor.close()
        fail(str(e), after="nothing was run.")
    except Exception as e:  # a full disk under the tracking store or the state folder: say where
        message = no_room_behind(e, _store_folder())
        if message is None:
            raise
        executor.close()
        fail(message, after="steps that finished are in the cache; a rerun reuses them.")


def _summarise(plan, result) -> None:
    """What ran, where to look, what the reports show, and what failed; exit 1 if a step failed."""
    if result.zombies:  # runs a dead process had left RUNNING, marked KILLED at the start
        from flows.track.zombies import summary

        err.print(f"[yellow]{escape(summary(result.zombies))}[/]")
    counts = {s: list(result.status.values()).count(s) for s in ("done", "cached", "failed", "skipped", "stopped")}
    err.print(f"finished in {result.seconds:.1f}s: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    err.print(
        f"MLflow parent run {result.parent_run_id} (experiment {escape(plan.name)}); browse with `bottlenecks ui`"
    )
    for metric, link in result.comparisons.items():  # the trainings side by side (flows/track/compare.py)
        err.print(f"compare: {metric} by architecture {link}", highlight=False, soft_wrap=True)
    if result.stopped_by is not None:
        import signal

        err.print(
            f"[yellow]stopped by {signal.Signals(result.stopped_by).name}:[/] workers ended, unfinished "
            "runs marked KILLED; rerun to resume from the cache and the checkpoints"
        )
        raise typer.Exit(result.exit_code)
    _print_reports(plan, result)
    if not result.ok:
        for iid, message in result.errors.items():
            err.print(f"[red]step {escape(iid)} failed:[/] {escape(message)}")
        skipped = [i for i, s in result.status.items() if s == "skipped"]
        if skipped:
            err.print(f"[yellow]not run because an upstream step failed:[/] {escape(', '.join(skipped))}")
        err.print("fix the cause and rerun: finished steps come from the cache")
        if result.prefect_gone:
            _leave_without_prefect(1)
        raise typer.Exit(1)


def _leave_without_prefect(code: int) -> None:
    """Exit now, without the delivery Prefect makes at interpreter exit of its queued logs and
    events: with its server gone each one would wait out the client's retries (tens of seconds
    each), after the run has already said what happened. In a warm process's child that delivery
    never runs, and the child must still report its status: it exits as usual there."""
    from flows.services import daemon

    if daemon.in_child():
        raise typer.Exit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _use_background_prefect() -> bool:
    """Point Prefect at this folder's background server (spawned on first use) before it is imported."""
    from flows.services import prefect_server

    if not prefect_server.enabled():
        return False
    url = prefect_server.begin(home.home())
    os.environ["PREFECT_API_URL"] = url
    err.print(
        f"Prefect UI {url.removesuffix('/api')} (a background server; `bottlenecks stop` stops it)", highlight=False
    )
    return True


def _store_folder() -> Path:
    """The folder of the local tracking store (``sqlite:///PATH``), else the project's state folder."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    return Path(uri[len("sqlite:///") :]).parent if uri.startswith("sqlite:///") else home.home()


def _open_tracking_store() -> None:
    """Give a new folder its MLflow store from a migrated template, and open it (the runner's
    client reuses the open store), so neither waits for the Prefect server's start."""
    from flows.services import mlflow_db

    mlflow_db.prepare(artifact_root=home.artifact_root())
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
    from flows.services import prefect_server

    try:
        prefect_server.ready()
    except prefect_server.ServerError as e:
        fail(
            str(e),
            after="nothing was run; set BOTTLENECKS_PREFECT_SERVER=off to run with "
            "a temporary Prefect server inside the command",
        )


def _component_logs_to(console: Console) -> None:
    """Show components' warnings (e.g. a diverged run) in the step view's console."""
    import logging

    from rich.logging import RichHandler

    logger = logging.getLogger("bottlenecks")
    logger.handlers = [RichHandler(console=console, show_path=False, show_time=False)]
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def _print_reports(plan, result) -> None:
    """What the run's reports declare they show: each headline on stderr with the status lines,
    each console value on stdout (rendered on a terminal, as text when piped or redirected)."""
    from flows.track import reports

    for shown in reports.shown(plan, result, "headline"):
        err.print(f"[bold]{escape(shown.step)}:[/] {escape(str(shown.value))}")
    for shown in reports.shown(plan, result, "console"):
        show_on_console(shown.value, reports.renderer(shown.component))


def show_on_console(value, renderer: str | None = None) -> None:
    """Print one report's console value to stdout: through its ``module:function`` renderer
    (``fn(value, terminal)`` -> texts and Rich renderables), else as Markdown (a .md file or text),
    rendered on a terminal."""
    from flows.track import reports

    terminal = out.is_terminal
    if renderer is not None:
        from components.imports import import_function

        parts = import_function(renderer)(value, terminal)
    else:
        text = reports.markdown(value)
        if text is None:
            return
        from rich.markdown import Markdown

        parts = [Markdown(text) if terminal else text]
    for part in parts:
        if isinstance(part, str):
            out.print(part, markup=False, highlight=False, soft_wrap=True, end="" if part.endswith("\n") else "\n")
        else:
            out.print(part)
