"""What the warm process does once for every run it serves, and what a run need not do at all."""

import os
import sys

from flows.services import daemon


def test_preload_calls_the_warm_up_of_each_module_that_has_one(tmp_path, monkeypatch):
    (tmp_path / "warmed.py").write_text("CALLS = []\ndef warm_up():\n    CALLS.append('warm')\n")
    (tmp_path / "plain.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = dict(os.environ)  # preload configures the environment as a run would
    try:
        daemon.preload(["warmed", "plain"])
        assert sys.modules["warmed"].CALLS == ["warm"] and sys.modules["plain"].VALUE == 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.modules.pop("warmed", None)
        sys.modules.pop("plain", None)


def test_the_mlflow_schema_head_is_read_once_per_process():
    from mlflow.store.db import utils

    import flows.track.runs as runs

    runs.warm_up()
    latest = utils._get_latest_schema_revision
    hits = latest.cache_info().hits
    assert latest() == latest()  # the newest revision of the installed MLflow, as a string
    assert isinstance(latest(), str) and latest.cache_info().hits == hits + 3


def test_a_configured_run_sends_no_mlflow_telemetry(monkeypatch):
    from mlflow.telemetry.utils import is_telemetry_disabled

    from flows import home

    monkeypatch.delenv("MLFLOW_DISABLE_TELEMETRY", raising=False)
    monkeypatch.setenv("DO_NOT_TRACK", "1")  # MLflow reads only "true" here
    home.configure()
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true" and is_telemetry_disabled()
