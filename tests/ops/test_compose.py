"""The team deployment's compose file: validated by docker-compose, and its safety defaults (loopback
ports, logins to MLflow and Prefect whose secrets come from .env or the environment, no start on
.env.example unchanged or on its old placeholders)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.ops import heartbeats

REPO = Path(__file__).resolve().parents[2]
SECRETS = ("POSTGRES_PASSWORD", "MLFLOW_ADMIN_PASSWORD", "PREFECT_AUTH_STRING")
CLIENTS = ("worker", "scheduler", "dask-gpu-0", "dask-gpu-1", "dask-cpu")
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
    "dask-tls",
    "prefect-setup",
}
ONE_SHOT = {"dask-tls", "prefect-setup"}  # run once at `up` and exit: no health check
FILLED = {
    "POSTGRES_PASSWORD": "pg-3f9a0c1d2e",
    "MLFLOW_ADMIN_PASSWORD": "ml-7b2e4d6f8a1c",
    "PREFECT_AUTH_STRING": "admin:pf-5c8e1a",
}
# what .env.example held before it left the secrets empty
OLD_PLACEHOLDERS = {
    "POSTGRES_PASSWORD": "change-me-to-a-long-random-string",
    "MLFLOW_ADMIN_PASSWORD": "change-me-to-another-long-random-string",
    "PREFECT_AUTH_STRING": "admin:change-me-to-a-third-long-random-string",
}
GUARDED = ("postgres", "mlflow", "prefect-server")
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


def env_file(tmp_path, secrets: dict[str, str]) -> str:
    """.env.example with ``secrets`` filled in, as an operator's .env."""
    lines = [
        f"{line.split('=', 1)[0]}={secrets[line.split('=', 1)[0]]}" if line.split("=", 1)[0] in secrets else line
        for line in (REPO / ".env.example").read_text().splitlines()
    ]
    path = tmp_path / ".env"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@needs_compose
def test_the_example_copied_unchanged_is_refused(tmp_path):
    unchanged = tmp_path / ".env"
    unchanged.write_text((REPO / ".env.example").read_text())
    done = compose_config(str(unchanged))
    assert done.returncode != 0
    assert "set POSTGRES_PASSWORD in .env to a secret of your own (openssl rand -hex 32 makes one" in done.stderr


@needs_compose
def test_compose_file_validates_with_the_example_filled_in(tmp_path):
    done = compose_config(env_file(tmp_path, FILLED))
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    services = config["services"]
    assert set(services) == SERVICES
    assert set(config["volumes"]) == {"pgdata", "mlartifacts", "state", "dask-tls"}
    mlflow = services["mlflow"]
    assert "postgresql+psycopg2://bottlenecks:pg-3f9a0c1d2e@postgres:5432/mlflow" in mlflow["command"]
    # MLflow's basic-auth app, configured by docker/mlflow-auth.sh from these variables
    assert mlflow["command"][:4] == ["mlflow", "server", "--app-name", "basic-auth"]
    assert mlflow["entrypoint"][-1] == "/opt/bottlenecks/mlflow-auth.sh"
    assert any(v.startswith(str(REPO / "docker" / "mlflow-auth.sh") + ":") for v in mlflow["volumes"])
    assert mlflow["environment"]["MLFLOW_AUTH_DATABASE_URI"].endswith("@postgres:5432/mlflow_auth")
    assert mlflow["environment"]["MLFLOW_AUTH_DEFAULT_PERMISSION"] == "READ"
    assert mlflow["environment"]["MLFLOW_AUTH_CACHE_SECONDS"] == "60"
    assert mlflow["environment"]["MLFLOW_AUTH_ADMIN_USERNAME"] == "admin"
    assert mlflow["environment"]["MLFLOW_AUTH_ADMIN_PASSWORD"] == "ml-7b2e4d6f8a1c"
    prefect_login = "admin:pf-5c8e1a"
    assert services["prefect-server"]["environment"]["PREFECT_SERVER_API_AUTH_STRING"] == prefect_login
    for client in CLIENTS:  # every service that talks to the servers logs in to both
        env = services[client]["environment"]
        assert env["MLFLOW_TRACKING_USERNAME"] == "admin", client
        assert env["MLFLOW_TRACKING_PASSWORD"] == "ml-7b2e4d6f8a1c", client
        assert env["PREFECT_API_AUTH_STRING"] == prefect_login, client
        assert env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == str(heartbeats.FREQUENCY), (
            client
        )  # what the automation expects
    assert services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"].startswith(
        "postgresql+asyncpg://bottlenecks:"
    )
    published = [p for s in services.values() for p in s.get("ports", [])]
    assert published and all(str(p).startswith("127.0.0.1:") for p in published)
    setup = services["prefect-setup"]  # installs the heartbeat automation once the server answers
    assert setup["command"] == ["python", "-m", "flows.ops.heartbeats"]
    assert setup["environment"]["PREFECT_API_AUTH_STRING"] == prefect_login
    assert setup["depends_on"]["prefect-server"]["condition"] == "service_healthy"
    gpu = services["worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert gpu == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert all("healthcheck" in s for name, s in services.items() if name not in ONE_SHOT)
    for i in (0, 1):  # one Dask worker per GPU, pinned, offering the resource steps ask for
        worker = services[f"dask-gpu-{i}"]
        assert worker["environment"]["CUDA_VISIBLE_DEVICES"] == str(i)
        assert "GPU=1" in worker["command"] and "tls://dask-scheduler:8786" in worker["command"]
        assert worker["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == [str(i)]
        assert worker["volumes"][0].endswith(":/state:rw") or "/state" in str(worker["volumes"][0])
    assert services["dask-cpu"]["environment"]["CUDA_VISIBLE_DEVICES"] == ""
    for client in ("worker", "scheduler"):
        env = services[client]["environment"]
        assert env["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        assert env["PREFECT_API_URL"] == "http://prefect-server:4200/api"
        assert services[client]["depends_on"]["mlflow"]["condition"] == "service_healthy"


@needs_compose
@pytest.mark.parametrize("missing", SECRETS)
def test_compose_refuses_to_start_without_a_secret(missing):
    given = {name: "a-long-secret-for-tests" for name in SECRETS if name != missing}
    done = compose_config(None, **given)
    assert done.returncode != 0
    assert f"set {missing} in .env to " in done.stderr and "openssl rand -hex 32" in done.stderr


@needs_compose
def test_compose_takes_the_secrets_from_the_environment():
    done = compose_config(
        None, POSTGRES_PASSWORD="pg-secret", MLFLOW_ADMIN_PASSWORD="mlflow-secret", PREFECT_AUTH_STRING="ops:pf-secret"
    )
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    assert services["mlflow"]["environment"]["MLFLOW_AUTH_ADMIN_PASSWORD"] == "mlflow-secret"
    assert services["prefect-server"]["environment"]["PREFECT_SERVER_API_AUTH_STRING"] == "ops:pf-secret"
    assert services["dask-cpu"]["environment"]["PREFECT_API_AUTH_STRING"] == "ops:pf-secret"
    assert services["worker"]["environment"]["MLFLOW_TRACKING_PASSWORD"] == "mlflow-secret"


def test_compose_file_publishes_on_loopback_and_takes_credentials_from_env():
    text = (REPO / "docker-compose.yml").read_text()
    config = yaml.safe_load(text)
    assert set(config["services"]) == SERVICES
    for name, service in config["services"].items():
        for port in service.get("ports", []):
            loopback = port.startswith("127.0.0.1:")  # the Dask dashboard, which has no login
            assert port.startswith("${BIND_ADDRESS:-127.0.0.1}:") or loopback, f"{name} publishes {port}"
    assert all(f"{name}:?" in text for name in SECRETS) and "change-me" not in text
    example = dict(
        line.split("=", 1)
        for line in (REPO / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    # empty: a copy left unchanged does not start (compose asks for each)
    assert example["BIND_ADDRESS"] == "127.0.0.1" and not any(example[name] for name in SECRETS)
    init = (REPO / "docker" / "postgres-init.sh").read_text()
    assert "mlflow_auth" in init  # the database MLFLOW_AUTH_DATABASE_URI names


def test_the_mlflow_entrypoint_writes_a_login_cache_that_mlflow_reads(tmp_path):
    """docker/mlflow-auth.sh writes the basic-auth app's configuration; MLflow's own reader sees the
    credential cache's lifetime: 60 s unless MLFLOW_AUTH_CACHE_SECONDS says otherwise."""
    cases = {"unset": (None, 60), "off": ("0", 0), "longer": ("300", 300)}
    for name, (given, _) in cases.items():
        env = {
            "PATH": os.environ["PATH"],
            "MLFLOW_AUTH_DATABASE_URI": "postgresql+psycopg2://u:p@postgres:5432/mlflow_auth",
            "MLFLOW_AUTH_CONFIG_PATH": str(tmp_path / f"{name}.ini"),
            "MLFLOW_FLASK_SERVER_SECRET_KEY": "k",
            **({"MLFLOW_AUTH_CACHE_SECONDS": given} if given is not None else {}),
        }
        done = subprocess.run(
            ["sh", str(REPO / "docker" / "mlflow-auth.sh"), "true"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    reader = (
        "import os, sys\n"
        "os.environ['MLFLOW_AUTH_CONFIG_PATH'] = sys.argv[1]\n"
        "from mlflow.server.auth.config import read_auth_config\n"
        "for path in sys.argv[1:]:\n"
        "    os.environ['MLFLOW_AUTH_CONFIG_PATH'] = path\n"
        "    c = read_auth_config()\n"
        "    print(c.auth_cache_ttl_seconds, c.default_permission, c.admin_username)\n"
    )
    paths = [str(tmp_path / f"{name}.ini") for name in cases]
    read = subprocess.run([sys.executable, "-c", reader, *paths], capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == [f"{expected} READ admin" for _, expected in cases.values()]


@needs_compose
def test_the_servers_refuse_an_old_examples_placeholders(tmp_path):
    """Compose cannot judge a value, so Postgres, MLflow and Prefect start through
    docker/refuse-placeholders.sh, run here with the environment compose gives each."""
    done = compose_config(env_file(tmp_path, OLD_PLACEHOLDERS))
    assert done.returncode == 0, done.stderr  # compose sees three values
    services = yaml.safe_load(done.stdout)["services"]
    guard = str(REPO / "docker" / "refuse-placeholders.sh")
    said = {}
    for name in GUARDED:
        service = services[name]
        assert "/opt/bottlenecks/refuse-placeholders.sh" in service["entrypoint"], name
        assert any(v.startswith(guard + ":") for v in service["volumes"]), name
        env = {"PATH": os.environ["PATH"], **{k: str(v) for k, v in service["environment"].items()}}
        refused = subprocess.run(["sh", guard, "echo", "started"], env=env, capture_output=True, text=True)
        assert refused.returncode == 78 and "started" not in refused.stdout, (name, refused.stdout)
        said[name] = refused.stderr
    assert "refusing to start: POSTGRES_PASSWORD is still the placeholder of .env.example" in said["postgres"]
    assert "MLFLOW_ADMIN_PASSWORD (in MLFLOW_AUTH_ADMIN_PASSWORD)" in said["mlflow"]
    assert "POSTGRES_PASSWORD (in MLFLOW_AUTH_DATABASE_URI)" in said["mlflow"]
    assert "PREFECT_AUTH_STRING (in PREFECT_SERVER_API_AUTH_STRING) is still the placeholder" in said["prefect-server"]
    assert "set it in .env to admin:SECRET, SECRET from openssl rand -hex 32" in said["prefect-server"]
    assert all("openssl rand -hex 32" in text for text in said.values())
    services = yaml.safe_load(compose_config(env_file(tmp_path, FILLED)).stdout)["services"]
    for name in GUARDED:  # secrets of the operator's own: the server's command runs
        env = {"PATH": os.environ["PATH"], **{k: str(v) for k, v in services[name]["environment"].items()}}
        started = subprocess.run(["sh", guard, "echo", "started"], env=env, capture_output=True, text=True)
        assert started.returncode == 0 and started.stdout == "started\n", (name, started.stderr)
