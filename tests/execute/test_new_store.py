"""A new folder's MLflow store is created once, by the run's own process, before any worker opens it:
workers that each migrate a new SQLite file at the same time fail on "duplicate column name"."""

import pytest

from flows.execute import _run, runner, worker
from flows.plan.build import build
from tests.support.files import write


@pytest.fixture
def new_store(tmp_path, monkeypatch):
    db = tmp_path / "store" / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    return db


def test_a_warming_worker_leaves_a_store_that_does_not_exist_to_the_parent(new_store):
    worker._warm()
    assert not new_store.exists()


def test_the_run_creates_a_new_store_before_it_starts_its_workers(tmp_path, home, new_store, monkeypatch):
    path = write(
        tmp_path,
        """\
        name: new-store
        steps:
          only:
            uses: tests.support.engine_components:whoami
            with: {tag: a}
        """,
    )
    seen = {}

    class Started(Exception):
        pass

    def choose(plan, computing):
        seen["exists"] = new_store.exists()
        raise Started

    monkeypatch.setattr(_run, "choose", choose)
    with pytest.raises(Started):
        runner.run(build(path))
    assert seen == {"exists": True}
    import sqlite3

    with sqlite3.connect(new_store) as con:  # migrated (the template's copy), this folder's Default experiment
        (where,) = con.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchone()
    assert where == f"{(home / 'mlartifacts').as_uri()}/0"
