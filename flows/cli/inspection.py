"""Commands that look without running: ``check``, ``plan``, ``components``, ``schema``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from flows import home
from flows.cli.app import (
    PipelineArg,
    ProfileOpt,
    SetOpt,
    app,
    close_dead_runs,
    err,
    fail,
    out,
    plan_or_exit,
    print_invalid,
    print_warnings,
)
from flows.cli.run import FreshOpt, apply_fresh


@app.command()
def check(
    pipelines: Annotated[list[Path], typer.Argument(help="pipeline YAML files", show_default=False)],
    profile: ProfileOpt = None,
    set_: SetOpt = None,
) -> None:
    """Validate pipeline files without running anything; report every error in every file."""
    from flows.language.errors import PipelineInvalid
    from flows.plan.build import build

    bad = 0
    for path in pipelines:
        try:
            plan = build(path, profile=profile, sets=set_, keys=False)
        except PipelineInvalid as e:
            bad += 1
            print_invalid(e)
            continue
        print_warnings(plan)
        out.print(
            f"[green]ok[/] {escape(str(path))}: {len(plan.pipeline.steps)} steps, {len(plan.instances)} step runs"
        )
    if bad:
        err.print(f"[red]{bad} of {len(pipelines)} file(s) invalid[/]")
        raise typer.Exit(2)


@app.command("plan")
def plan_cmd(
    pipeline: PipelineArg,
    only: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[STEP_RUN_OR_STEP]", help="only this step's runs (a step id) or one step run", show_default=False
        ),
    ] = None,
    set_: SetOpt = None,
    profile: ProfileOpt = None,
    params: Annotated[
        bool, typer.Option("--params", help="show each step run's parameters as resolved (profile, --set)")
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="print the step runs as JSON: id, step, component, after, gpu, cached, why, key, params"
        ),
    ] = False,
    fresh: FreshOpt = None,
) -> None:
    """Show the expanded DAG: every step run, its inputs, whether it would come from the cache, and
    why not (a library version, a data file, a parameter, its code or an input changed).

    `plan PIPELINE --params [STEP_RUN_OR_STEP]` shows the parameters each step run gets after the
    profile and --set (all step runs, one step's or one step run's); --json prints them for a program."""
    home.configure(create=False)  # reads only: leaves no folder behind
    plan = plan_or_exit(pipeline, profile, set_)
    close_dead_runs()  # a killed run's steps: closed, and the cache says which finished
    apply_fresh(plan, fresh)
    selected = _select(plan, only)
    why = _why(plan)
    if json_out:
        _print_json(plan, selected, why)
    elif params:
        _print_params(plan, selected, why)
    else:
        _print_table(plan, selected, why)


def _why(plan) -> dict[str, list[str]]:
    """Why each step run would be computed; empty for one served from the cache."""
    from flows.execute.cache import StepCache
    from flows.execute.why import reasons

    return reasons(plan, StepCache(home.home(), create=False))


def _print_json(plan, selected: set[str], why: dict[str, list[str]]) -> None:
    """Print the selected step runs as JSON: id, step, component, after, gpu, cached, why, key, params."""
    rows = [
        {
            "id": iid,
            "step": inst.step.id,
            "component": inst.component.name,
            "after": list(inst.deps),
            "gpu": inst.gpu,
            "cached": not why[iid],
            "why": why[iid],
            "key": inst.key,
            "params": _plain(inst.params),
        }
        for iid, inst in plan.instances.items()
        if iid in selected
    ]
    print(json.dumps(rows, indent=2, default=str))


def _print_params(plan, selected: set[str], why: dict[str, list[str]]) -> None:
    """Print each selected step run's line, then its parameters as resolved, one a line."""
    for iid, inst in plan.instances.items():
        if iid not in selected:
            continue
        after = ", ".join(inst.deps) or "-"
        status = f"will run ({escape('; '.join(why[iid]))})" if why[iid] else "cached"
        out.print(f"[bold]{escape(iid)}[/]  {inst.component.name}  after {escape(after)}  {status}")
        for name, value in _plain(inst.params).items():
            out.print(f"    {name}: {json.dumps(value, default=str)}", markup=False, highlight=False)


def _print_table(plan, selected: set[str], why: dict[str, list[str]]) -> None:
    """Print the selected step runs as a table (why each would run), then the profile's description."""
    console = _piped_wide()
    narrow = console.width < WIDE  # an 80-column terminal: the step run, its cache and why, wrapped
    table = Table(title=f"{plan.name} (profile {plan.profile or '-'})")
    gpus = any(inst.gpu for inst in plan.instances.values())  # a gpu column only where a step holds one
    columns = ("step run", "cache", "why") if narrow else ("step run", "component", "after", "cache", "why", "key")
    for col in columns:
        table.add_column(col, overflow="fold", ratio=2 if col == "why" else None)
        if col == "after" and gpus:
            table.add_column("gpu")
    for iid, inst in plan.instances.items():
        if iid not in selected:
            continue
        status = "[yellow]will run" if why[iid] else "[blue]cached"
        reason = escape("; ".join(why[iid]))
        if narrow:
            table.add_row(escape(iid), status, reason)
            continue
        after = escape(", ".join(inst.deps)) or "-"
        held = (str(inst.gpu or "-"),) if gpus else ()
        table.add_row(escape(iid), inst.component.name, after, *held, status, reason, inst.key[:12])
    console.print(table)
    if narrow:
        out.print(
            f"(under {WIDE} columns: components, inputs, keys left out; `plan --json` has them)",
            highlight=False,
        )
    about = (plan.pipeline.profiles or {}).get(plan.profile) if plan.profile else None
    if about and about.get("description"):  # e.g. the full profile's link to its deviations from the papers
        out.print(f"profile {plan.profile}: {about['description']}", markup=False, highlight=False)


WIDE = 120  # columns from which plan's table shows every column


def _piped_wide():
    """The output console; when piped, one as wide as ``COLUMNS`` asks (200 when unset) so that no
    column of the plan (its why) is cut at the 80 columns a pipe gets by default."""
    if out.is_terminal:
        return out
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() else 200, soft_wrap=True, emoji=False)


def _select(plan, only: str | None) -> set[str]:
    """The step runs ``only`` names (a step run id or a step id; all when None), or exit 2 with a suggestion."""
    if only is None:
        return set(plan.instances)
    if only in plan.instances:
        return {only}
    chosen = {iid for iid, inst in plan.instances.items() if inst.step.id == only}
    if chosen:
        return chosen
    import difflib

    steps = sorted({inst.step.id for inst in plan.instances.values()})
    close = difflib.get_close_matches(only, steps, n=3, cutoff=0.5) or difflib.get_close_matches(
        only, list(plan.instances), n=3, cutoff=0.5
    )
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    steps = ", ".join(steps)
    fail(f"no step or step run {only!r} in {plan.name}{hint}", code=2, after=f"steps: {steps}")


def _plain(value):
    """Parameters as JSON values: a reference to another step's output as ``${STEP_RUN.OUTPUT}``."""
    from flows.language.refs import Ref

    if isinstance(value, Ref):
        if None in value.sources:
            return f"${{{value.sources[None]}.{value.output}}}"
        return {str(label): f"${{{iid}.{value.output}}}" for label, iid in value.sources.items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


@app.command()
def components(name: Annotated[Optional[str], typer.Argument(help="show one component in full")] = None) -> None:
    """List registered components with their parameters, types, defaults and outputs."""
    from components.registry import ComponentError, get, registry
    from flows.plan.build import type_name

    try:
        comps = [get(name)] if name else [c for _, c in sorted(registry().items())]
    except ComponentError as e:  # an unknown name, a module that does not import, a broken plugin
        fail(str(e), code=2)
    for comp in comps:
        out.print(f"[bold cyan]{comp.name}[/]  {escape(comp.summary)}")
        if name:
            out.print(escape(comp.doc))
        for pname, (ann, default, required) in comp.parameters().items():
            default_text = "[red]required[/]" if required else f"= {escape(repr(default))}"
            out.print(f"    {pname}: {escape(type_name(ann))} {default_text}")
        outputs = ", ".join(comp.outputs + ("run_id",))
        tag = f"  bottleneck: {comp.bottleneck}" if comp.bottleneck else ""
        out.print(f"    [dim]outputs: {outputs}{tag}[/]")
        if name:  # what its summary holds, as claims reference it (docs/contracts.md)
            keys = ", ".join(comp.summary_keys) if comp.summary_keys is not None else "not declared"
            out.print(f"    [dim]summary keys: {escape(keys)}[/]")


@app.command()
def schema(output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write to a file")] = None) -> None:
    """Print the JSON Schema of pipeline files (for editor completion and checking)."""
    from flows.language.schema import pipeline_schema

    text = json.dumps(pipeline_schema(), indent=2)
    if output:
        output.write_text(text + "\n")
        err.print(f"wrote {output}")
    else:
        print(text)
