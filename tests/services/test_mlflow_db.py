"""A new folder's MLflow store is a copy of a migrated template: the same schema MLflow makes,
this folder's artifact root, and an existing store is never touched."""

import sqlite3

import pytest

from flows.services import mlflow_db


@pytest.mark.slow
def test_a_new_store_is_copied_from_the_template_and_works(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path / "cache"))
    first = tmp_path / "a" / "mlflow.db"
    assert "copied" in mlflow_db.prepare(f"sqlite:///{first}", artifact_root="file:///projects/a/mlartifacts")
    template = next((tmp_path / "cache").glob("mlflow-*.db"))
    second = tmp_path / "b" / "mlflow.db"
    mlflow_db.prepare(f"sqlite:///{second}", artifact_root="file:///projects/b/mlartifacts/")
    with sqlite3.connect(second) as con:
        assert con.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchone() == (
            "file:///projects/b/mlartifacts/0",
        )
    with sqlite3.connect(template) as con:  # the template keeps no folder's path
        assert "projects" not in con.execute("SELECT artifact_location FROM experiments").fetchone()[0]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{second}")
    exp = client.create_experiment("x", artifact_location=(tmp_path / "art").as_uri())
    run = client.create_run(exp)
    client.log_metric(run.info.run_id, "m", 1.5)
    assert client.get_run(run.info.run_id).data.metrics == {"m": 1.5}
    assert [p.name for p in second.parent.iterdir()] == ["mlflow.db"]  # no partial file left


def test_an_existing_store_or_another_kind_of_store_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path / "cache"))
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"not touched")
    assert mlflow_db.prepare(f"sqlite:///{db}") == "existing store" and db.read_bytes() == b"not touched"
    for uri in ("http://127.0.0.1:5000", "postgresql://u@h/db", "sqlite:///:memory:"):
        assert mlflow_db.prepare(uri) == "existing store"
    assert not (tmp_path / "cache").exists()
