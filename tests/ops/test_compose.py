"""The team deployment's compose file: validated by docker-compose, and its safety defaults."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SERVICES = {
    "postgres",
    "mlflow",
    "prefect-server",
    "worker",
    "scheduler",
    "dask-scheduler",
    "dask-gpu-0",
    "dask-gpu-1",
    "dask-cpu",
}
needs_compose = pytest.mark.skipif(
    shutil.which("docker-compose") is None,
    reason="docker-compose absent (Debian package 'docker-compose'; CI installs it)",
)


def compose_config(env_file: str | None, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "BIND_", "MLFLOW_", "PREFECT_"))}
    cmd = ["docker-compose", "-f", "docker-compose.yml"]
    if env_file:
        cmd[1:1] = ["--env-file", env_file]
    return subprocess.run([*cmd, "config"], cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=60)


@needs_compose
def test_compose_file_validates_with_the_example_env():
    done = compose_config(".env.example")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    services = config["services"]
    assert set(services) == SERVICES
    assert set(config["volumes"]) == {"pgdata", "mlartifacts", "state"}
    assert (
        "postgresql+psycopg2://bottlenecks:change-me-to-a-long-random-string@postgres:5432/mlflow"
        in services["mlflow"]["command"]
    )
    assert services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"].startswith(
        "postgresql+asyncpg://bottlenecks:"
    )
    published = [p for s in services.values() for p in s.get("ports", [])]
    assert published and all(str(p).startswith("127.0.0.1:") for p in published)
    gpu = services["worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert gpu == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert all("healthcheck" in s for s in services.values())
    for i in (0, 1):  # one Dask worker per GPU, pinned, offering the resource steps ask for
        worker = services[f"dask-gpu-{i}"]
        assert worker["environment"]["CUDA_VISIBLE_DEVICES"] == str(i)
        assert "GPU=1" in worker["command"] and "tcp://dask-scheduler:8786" in worker["command"]
        assert worker["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == [str(i)]
        assert worker["volumes"][0].endswith(":/state:rw") or "/state" in str(worker["volumes"][0])
    assert services["dask-cpu"]["environment"]["CUDA_VISIBLE_DEVICES"] == ""
    for client in ("worker", "scheduler"):
        env = services[client]["environment"]
        assert env["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        assert env["PREFECT_API_URL"] == "http://prefect-server:4200/api"
        assert services[client]["depends_on"]["mlflow"]["condition"] == "service_healthy"


@needs_compose
def test_compose_refuses_to_start_without_a_password():
    done = compose_config(None)
    assert done.returncode != 0
    assert "set POSTGRES_PASSWORD in .env" in done.stderr


def test_compose_file_publishes_on_loopback_and_takes_credentials_from_env():
    text = (REPO / "docker-compose.yml").read_text()
    config = yaml.safe_load(text)
    assert set(config["services"]) == SERVICES
    for name, service in config["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("${BIND_ADDRESS:-127.0.0.1}:"), f"{name} publishes {port}"
    assert "POSTGRES_PASSWORD:?" in text and "change-me" not in text
    example = dict(
        line.split("=", 1)
        for line in (REPO / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert example["BIND_ADDRESS"] == "127.0.0.1" and example["POSTGRES_PASSWORD"]
