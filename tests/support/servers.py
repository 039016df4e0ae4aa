"""Real servers on loopback for the deployment tests: Postgres (Debian packages), ``mlflow server``
on Postgres and ``prefect server start`` on Postgres, each started from a test and stopped after.
Both servers ask for a login, as in ``docker-compose.yml``: MLflow's basic-auth app (its users in a
database of their own) and Prefect's auth string.

Postgres refuses to run as root, so as root the cluster belongs to the ``postgres`` user.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from flows.services.ports import free_port  # noqa: F401  (re-exported for the tests)

PG_USER = "bottlenecks"
MLFLOW_ADMIN = ("admin", "admin-password-for-tests")  # MLflow wants at least 12 characters
PREFECT_AUTH = "admin:prefect-password-for-tests"

# "user:password" that ``api`` sends to a URL under each prefix (the servers of this module register theirs)
LOGINS: dict[str, str] = {}


def pg_bin() -> Path | None:
    """The newest Postgres server binaries from the Debian packages, if installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    return Path(which).resolve().parent if which else None


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    """Poll ``url`` until it answers 2xx; fail early with the log tail if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:4]} exited with {proc.returncode} before {url} answered:\n{tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                if 200 <= r.status < 300:
                    return
        except (OSError, urllib.error.URLError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:.0f}s:\n{tail(log)}")
        time.sleep(0.5)


def tail(log: Path | None, lines: int = 30) -> str:
    if log is None or not log.exists():
        return ""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def basic(login: str) -> dict[str, str]:
    """The Authorization header for ``user:password``."""
    return {"Authorization": "Basic " + base64.b64encode(login.encode()).decode()}


def api(
    method: str,
    url: str,
    body: dict | None = None,
    timeout: float = 15,
    attempts: int = 5,
    login: str | None = None,
) -> dict | list:
    """Call a JSON REST endpoint, retrying a 503 (a SQLite-backed Prefect server answers it when its
    database is busy, which happens on a loaded 2-core machine). Sends ``login`` (``user:password``),
    else the one registered in ``LOGINS`` for the URL's server, if any."""
    data = json.dumps(body).encode() if body is not None else None
    if login is None:
        login = next((v for prefix, v in LOGINS.items() if url.startswith(prefix)), None)
    headers = {"Content-Type": "application/json", **(basic(login) if login else {})}
    for attempt in range(attempts):
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
            return json.loads(text) if text else {}
        except urllib.error.HTTPError as e:
            if e.code != 503 or attempt == attempts - 1:
                raise
            time.sleep(2 * (attempt + 1))
    raise AssertionError("unreachable")


class Postgres:
    """A throwaway cluster in a temporary folder, listening on 127.0.0.1 only."""

    def __init__(self):
        self.bin = pg_bin()
        if self.bin is None:
            raise RuntimeError("Postgres binaries not found (install the Debian package 'postgresql')")
        # a folder of its own: as root the cluster's owner must reach it, and pytest's are private
        self.root = Path(tempfile.mkdtemp(prefix="bottlenecks-pg-"))
        self.data = self.root / "pgdata"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0

    def _cmd(self, *args: str) -> list[str]:
        if not self.as_root:
            return list(args)
        # root's runuser lives in sbin, which a PATH set for a user may leave out
        runuser = shutil.which("runuser", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
        return [runuser or "runuser", "-u", "postgres", "--", *args]

    def _run(self, *args: str) -> None:
        out = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({out.returncode}): {out.stderr or out.stdout}\n{tail(self.log)}"
            )

    def start(self) -> "Postgres":
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            PG_USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200",
            "start",
        )
        return self

    def create_database(self, name: str) -> None:
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER, name)

    def url(self, database: str, driver: str = "postgresql") -> str:
        return f"{driver}://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(
                self._cmd(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)


class Server:
    """A server process with its log; ``stop`` terminates it, ``start`` brings it back on the same port."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], health: str, log: Path, timeout: float = 180):
        self.name, self.cmd, self.env, self.health, self.log, self.timeout = name, cmd, env, health, log, timeout
        self.proc: subprocess.Popen | None = None

    def spawn(self) -> None:
        with open(self.log, "a") as fh:
            # a process group of its own, so stopping it also stops its workers (gunicorn/uvicorn)
            self.proc = subprocess.Popen(
                self.cmd, env=self.env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait(self) -> None:
        wait_http(self.health, self.timeout, self.proc, self.log)

    def start(self) -> "Server":
        self.spawn()
        self.wait()
        return self

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def _quiet_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", **extra})
    return env


class TeamServers:
    """Postgres with databases ``mlflow``, ``mlflow_auth`` and ``prefect``, an MLflow server and a Prefect
    server, each with its login (``MLFLOW_ADMIN``, ``PREFECT_AUTH``); ``client_env`` carries both."""

    def __init__(self, root: Path | None = None, auth_cache_seconds: int = 60):
        self.root = Path(root or tempfile.mkdtemp(prefix="bottlenecks-servers-"))
        self.auth_cache_seconds = auth_cache_seconds
        self.postgres = Postgres()
        mlflow_port, prefect_port = free_port(), free_port()
        self.mlflow_url = f"http://127.0.0.1:{mlflow_port}"
        self.prefect_url = f"http://127.0.0.1:{prefect_port}/api"
        self.mlflow: Server | None = None
        self.prefect: Server | None = None
        self._ports = (mlflow_port, prefect_port)

    def start(self) -> "TeamServers":
        import importlib.util

        for module, package in (("psycopg2", "psycopg2-binary"), ("asyncpg", "asyncpg")):
            if importlib.util.find_spec(module) is None:
                raise RuntimeError(
                    f"the Postgres driver {module} is missing: install {package} (pyproject's test extra lists it)"
                )
        self.postgres.start()
        self.postgres.create_database("mlflow")
        self.postgres.create_database("mlflow_auth")
        self.postgres.create_database("prefect")
        mlflow_port, prefect_port = self._ports
        artifacts = self.root / "mlartifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        # what docker/mlflow-auth.sh writes in the compose file's MLflow container
        auth_ini = self.root / "basic_auth.ini"
        auth_ini.write_text(
            "[mlflow]\n"
            "default_permission = READ\n"
            f"database_uri = {self.postgres.url('mlflow_auth', 'postgresql+psycopg2')}\n"
            f"admin_username = {MLFLOW_ADMIN[0]}\n"
            f"auth_cache_ttl_seconds = {self.auth_cache_seconds}\n"
        )
        self.mlflow = Server(
            "mlflow",
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--backend-store-uri",
                self.postgres.url("mlflow", "postgresql+psycopg2"),
                "--artifacts-destination",
                str(artifacts),
                "--host",
                "127.0.0.1",
                "--port",
                str(mlflow_port),
                "--workers",
                "1",
                "--app-name",
                "basic-auth",
            ],
            _quiet_env(
                MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
                MLFLOW_AUTH_CONFIG_PATH=str(auth_ini),
                MLFLOW_AUTH_ADMIN_PASSWORD=MLFLOW_ADMIN[1],
                MLFLOW_FLASK_SERVER_SECRET_KEY="a-static-key-for-tests",
            ),
            f"{self.mlflow_url}/health",
            self.root / "mlflow.log",
        )
        self.prefect = Server(
            "prefect",
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(prefect_port)],
            _quiet_env(
                PREFECT_HOME=str(self.root / "prefect-home"),
                PREFECT_UI_ENABLED="false",
                PREFECT_API_DATABASE_CONNECTION_URL=self.postgres.url("prefect", "postgresql+asyncpg"),
                PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS="5",
                PREFECT_SERVER_API_AUTH_STRING=PREFECT_AUTH,
            ),
            f"{self.prefect_url}/health",
            self.root / "prefect.log",
        )
        LOGINS[self.mlflow_url + "/"] = ":".join(MLFLOW_ADMIN)
        LOGINS[self.prefect_url + "/"] = PREFECT_AUTH
        # both migrate their databases on the first start; in parallel it takes half the time
        for server in (self.mlflow, self.prefect):
            server.spawn()
        for server in (self.mlflow, self.prefect):
            server.wait()
        return self

    def credentials(self) -> dict[str, str]:
        """The variables a client of these servers logs in with (the compose file's clients get the same)."""
        return {
            "MLFLOW_TRACKING_USERNAME": MLFLOW_ADMIN[0],
            "MLFLOW_TRACKING_PASSWORD": MLFLOW_ADMIN[1],
            "PREFECT_API_AUTH_STRING": PREFECT_AUTH,
        }

    def client_env(self, home: Path, **extra: str) -> dict[str, str]:
        """Environment for a ``bottlenecks`` subprocess that uses these servers, logged in to both."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
        env.update(
            {
                "MLFLOW_TRACKING_URI": self.mlflow_url,
                "PREFECT_API_URL": self.prefect_url,
                **self.credentials(),
                "BOTTLENECKS_HOME": str(home),
                "PREFECT_HOME": str(home / "prefect"),
                # the product's retry settings, unless a test passes its own
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                **extra,
            }
        )
        return env

    def stop(self) -> None:
        """End all three at once (SIGKILL, Postgres' immediate mode): their stores are thrown away, so
        nothing is gained by the seconds a graceful shutdown takes."""
        for server in (self.prefect, self.mlflow):
            if server is not None:
                server.stop(kill=True)
        self.postgres.stop()
        LOGINS.pop(self.mlflow_url + "/", None)
        LOGINS.pop(self.prefect_url + "/", None)
        shutil.rmtree(self.root, ignore_errors=True)
