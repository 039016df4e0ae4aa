"""The ``bottlenecks`` app and what every command shares: its consoles, options and errors.

Text from the user or from a location (``FILE:100:COL``) is printed literally: the consoles
interpret no emoji shortcodes, and messages are escaped before Rich sees them.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape

app = typer.Typer(
    help="Declarative pipelines for the four-bottleneck comparison of sequence models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True, emoji=False)
err = Console(stderr=True, soft_wrap=True, emoji=False)

PipelineArg = Annotated[Path, typer.Argument(help="pipeline YAML file", show_default=False)]
ProfileOpt = Annotated[Optional[str], typer.Option("--profile", "-p", help="named profile to overlay")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="override a param (KEY=VALUE) or a step parameter (STEP.PARAM=VALUE); repeatable"),
]


class NotifyOn(str, Enum):
    """The verdicts ``--notify`` tells of (``flows.ops.notify.WHEN``): ``history`` and ``schedule``."""

    regression = "regression"
    change = "change"
    always = "always"


def fail(message: str, code: int = 1, after: str = "") -> NoReturn:
    """Print ``message`` in red (and ``after`` plain) and exit with ``code``."""
    err.print(f"[red]{escape(message)}[/]" + (f"\n{escape(after)}" if after else ""), highlight=False)
    raise typer.Exit(code)


def print_invalid(error) -> int:
    """Print every ``FILE:LINE:COL: message`` of a ``PipelineInvalid``; return how many."""
    for located in error.errors:
        err.print(escape(str(located)), highlight=False)
    return len(error.errors)


def require_servers(code: int = 1, after: str = "") -> None:
    """Exit with ``code`` when a configured tracking or Prefect server does not answer."""
    from flows.services import connect

    try:
        connect.check_servers()
    except connect.ServerUnreachable as e:
        fail(str(e), code, after)


def close_dead_runs() -> None:
    """Before a command reads this folder's stores: close the runs a killed process left open, in MLflow
    and Prefect (``flows/execute/sweep.py``), and say so. A directory listing when none was left."""
    from flows.track import open_runs

    if not open_runs.dead():
        return
    from flows.execute.sweep import close_dead_runs as close
    from flows.track.zombies import summary

    try:
        closed = close()
    except Exception as e:  # a store that does not answer: the next command tries again
        err.print(f"[yellow]could not close the runs a killed process left open: {escape(str(e))}[/]")
        return
    if closed:
        err.print(f"[yellow]{escape(summary(closed))}[/]", highlight=False)


def print_warnings(plan) -> None:
    """Print the plan's warnings, ``FILE:LINE:COL: warning: ...`` (nothing stops for them)."""
    for located in plan.warnings:
        err.print(f"[yellow]{escape(str(located))}[/]", highlight=False)


def plan_or_exit(path: Path, profile: str | None, sets: list[str] | None, what: str = "run"):
    """Build a plan and print its warnings, or print every error and exit 2."""
    from flows.language.errors import PipelineInvalid
    from flows.plan.build import build

    try:
        plan = build(path, profile=profile, sets=sets)
    except PipelineInvalid as e:
        n = print_invalid(e)
        err.print(f"[red]{n} error(s); nothing was {what}.[/]")
        raise typer.Exit(2) from None
    print_warnings(plan)
    return plan
