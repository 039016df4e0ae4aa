"""The folder's pipeline runs whose process may still be at work: one small file per run under
``<state folder>/open-runs/``, written as its MLflow parent run opens and removed once the run has
closed it (normally, on an error or on Ctrl-C/SIGTERM). A file left behind whose process is gone is
what a SIGKILL, a crash or a reboot left: a command that opens the folder's stores lists this folder
(no import, no store opened) and closes runs only when it finds one (``flows/execute/sweep.py``).

Standard library only: ``plan`` and ``history`` read it on every call.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from flows import home
from flows.track import zombies

FOLDER = "open-runs"


def record(parent_run_id: str, experiment_id: str) -> Path | None:
    """Note that this process runs ``parent_run_id``; the note's path (None when it cannot be written:
    the sweep of the experiment at the next `run` still finds the run)."""
    folder = home.home() / FOLDER
    note = {
        "parent_run_id": parent_run_id,
        "experiment_id": experiment_id,
        "tracking_uri": os.environ.get("MLFLOW_TRACKING_URI", ""),
        **zombies.owner_tags(),
    }
    path = folder / f"{os.getpid()}-{parent_run_id}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(note))
        tmp.replace(path)
    except OSError:
        return None
    return path


def remove(path: Path | None) -> None:
    """The run is closed: forget it."""
    if path is not None:
        path.unlink(missing_ok=True)


def dead(folder: Path | None = None) -> list[dict]:
    """The notes of runs whose process on this host is gone (or whose pid another process now has),
    each with its ``path``; notes of live processes and of other hosts are left alone (the next `run`'s
    sweep judges those by age)."""
    folder = (folder or home.home()) / FOLDER
    try:
        names = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return []
    found = []
    for path in names:
        try:
            note = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid, started = str(note.get(zombies.PID, "")), note.get(zombies.STARTED, "")
        if note.get(zombies.HOST) != socket.gethostname() or not pid.isdigit():
            continue
        if zombies.alive(int(pid), started):
            continue
        found.append({**note, "path": str(path)})
    return found
