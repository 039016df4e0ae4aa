"""``bottlenecks stop`` and ``bottlenecks ui``: the processes that serve a folder."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Annotated

import typer

from flows import home
from flows.cli.app import app, out


@app.command()
def stop() -> None:
    """Stop this folder's background Prefect server and the warm process runs are handed to (the next
    `bottlenecks run` starts them again)."""
    from flows.services import prefect_server

    from flows.services import daemon

    zygote = daemon.stop()
    if zygote:
        out.print(f"stopped the warm process runs were handed to (pid {zygote})")
    record = prefect_server.stop(home.home())
    if record:
        out.print(f"stopped the background Prefect server at {record['url']} (pid {record['pid']})")
    else:
        out.print("no background Prefect server was running here")


@app.command()
def ui(port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 5000) -> None:
    """Open the MLflow UI on this project's store (or print where the configured server is)."""
    home.configure()
    uri = os.environ["MLFLOW_TRACKING_URI"]
    if uri.startswith("http"):
        out.print(f"MLflow is a server here: open {uri}")
        return
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1"]
    root = home.artifact_root()
    if root:
        cmd += ["--default-artifact-root", root]
    out.print(f"MLflow UI on http://127.0.0.1:{port} (Ctrl-C to stop)")
    from flows.track.runs import experiment_links
    out.print("\n".join(experiment_links(f"http://127.0.0.1:{port}")), highlight=False)
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    raise typer.Exit(subprocess.call(cmd, env=env))
