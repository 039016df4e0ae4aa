"""Commands that look without running: ``check``, ``plan``, ``components``, ``schema``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from flows import home
from flows.cli.app import PipelineArg, ProfileOpt, SetOpt, app, err, out, plan_or_exit, print_invalid


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
            plan = build(path, profile=profile, sets=set_)
        except PipelineInvalid as e:
            bad += 1
            print_invalid(e)
            continue
        out.print(f"[green]ok[/] {escape(str(path))}: {len(plan.pipeline.steps)} steps, "
                  f"{len(plan.instances)} step runs")
    if bad:
        err.print(f"[red]{bad} of {len(pipelines)} file(s) invalid[/]")
        raise typer.Exit(2)


@app.command("plan")
def plan_cmd(pipeline: PipelineArg, set_: SetOpt = None, profile: ProfileOpt = None) -> None:
    """Show the expanded DAG: every step run, its inputs and whether it would come from the cache."""
    home.configure()
    plan = plan_or_exit(pipeline, profile, set_)
    from flows.execute.cache import StepCache

    cache = StepCache(home.home())
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

    from flows.plan.build import type_name

    comps = [get(name)] if name else [c for _, c in sorted(registry().items())]
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


