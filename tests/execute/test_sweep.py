"""The sweep of runs a killed process left open: which open-run notes it keeps for the next command,
and which step runs it counts as finished."""

import json
import socket
import subprocess
import sys
from types import SimpleNamespace

import mlflow
import pytest
from mlflow.exceptions import MlflowException

from flows.execute import sweep
from flows.track import open_runs, zombies


def _dead_note(home, parent_run_id: str, tracking_uri: str):
    """A note as a run writes it, of a process that has exited."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    note = {
        "parent_run_id": parent_run_id,
        "experiment_id": "0",
        "tracking_uri": tracking_uri,
        zombies.HOST: socket.gethostname(),
        zombies.PID: gone.stdout.strip(),
        zombies.STARTED: "gone",
    }
    folder = home / open_runs.FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{note[zombies.PID]}-{parent_run_id}.json"
    path.write_text(json.dumps(note))
    assert open_runs.dead(home), "the note does not read as a dead process's"
    return path


def test_a_note_whose_run_was_deleted_is_dropped(home, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    path = _dead_note(home, "0" * 32, uri)
    assert sweep.close_dead_runs(prefect_url=lambda: None) == []
    assert not path.exists()


@pytest.mark.parametrize("error", [MlflowException("busy", error_code="TEMPORARILY_UNAVAILABLE"), ConnectionError()])
def test_a_note_whose_store_does_not_answer_is_kept_for_the_next_command(home, tmp_path, monkeypatch, error):
    path = _dead_note(home, "1" * 32, f"sqlite:///{tmp_path / 'mlflow.db'}")

    def refuse(self, run_id):
        raise error

    monkeypatch.setattr(mlflow.tracking.MlflowClient, "get_run", refuse)
    assert sweep.close_dead_runs(prefect_url=lambda: None) == []
    assert path.exists(), "a store down for a moment lost the note: its runs would never be closed"


def _run(run_id: str, **tags):
    return SimpleNamespace(info=SimpleNamespace(run_id=run_id), data=SimpleNamespace(tags=tags))


def test_only_a_computed_step_whose_result_the_cache_names_is_finished():
    entries = {"k1": {"run_id": "computed"}, "k2": {"run_id": "origin"}}
    finished = sweep.recorded(SimpleNamespace(peek=entries.get))
    assert finished(_run("computed", cache_key="k1", cached="false"))
    assert not finished(_run("other", cache_key="k1", cached="false"))  # a later run of the key: not recorded
    assert not finished(_run("fresh", cached="false"))  # no key: never recorded
    # killed while the cached results were copied onto it: some metrics missing, so not FINISHED
    assert not finished(_run("copy", cache_key="k2", cached="true", reused_from="origin"))
