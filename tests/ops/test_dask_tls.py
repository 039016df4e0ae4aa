"""The team deployment's Dask cluster for real, on loopback: the scheduler and a worker started with
docker-compose.yml's commands and TLS settings, credentials made by docker/dask-tls.py. A client
with the cluster's certificate runs a step; one without it (plain TCP, TLS with no certificate, or
a certificate of another authority) is refused."""

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from flows.services.ports import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def tls_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "docker" / "dask-tls.py"), *args], capture_output=True, text=True, timeout=60
    )


def service(name: str) -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"][name]


def local(env: dict, tls: Path) -> dict:
    """The service's Dask settings with the volume's /tls replaced by ``tls``."""
    dask = {k: str(v).replace("/tls/", f"{tls}/") for k, v in env.items() if k.startswith("DASK_")}
    return {**os.environ, **dask}


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[:3]} exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"nothing listens on {port}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask-tls")
    tls, other = root / "tls", root / "other"
    assert tls_cmd(str(tls)).returncode == 0 and tls_cmd(str(other)).returncode == 0
    port = free_port()
    scheduler = service("dask-scheduler")
    cmd = [a.replace("8786", str(port)).replace("0.0.0.0", "127.0.0.1") for a in scheduler["command"]]
    cmd[cmd.index("--dashboard-address") + 1] = f"127.0.0.1:{free_port()}"
    bin_dir = Path(sys.executable).parent
    procs = []
    try:
        with open(root / "scheduler.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [str(bin_dir / cmd[0]), *cmd[1:]], env=local(scheduler["environment"], tls), stdout=log, stderr=log
                )
            )
        wait_port(port, procs[0], root / "scheduler.log")
        worker = service("dask-cpu")
        wcmd = [a.replace("dask-scheduler:8786", f"127.0.0.1:{port}") for a in worker["command"]]
        wcmd[wcmd.index("--dashboard-address") + 1] = f"127.0.0.1:{free_port()}"
        with open(root / "worker.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [str(bin_dir / wcmd[0]), *wcmd[1:]], env=local(worker["environment"], tls), stdout=log, stderr=log
                )
            )
        yield {"address": f"tls://127.0.0.1:{port}", "port": port, "tls": tls, "other": other, "root": root}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_the_credentials_are_made_once_and_kept(tmp_path):
    first = tls_cmd(str(tmp_path))
    assert first.returncode == 0 and "made ca-key.pem, ca.pem, client-key.pem" in first.stdout, first.stderr
    ca = (tmp_path / "ca.pem").read_bytes()
    again = tls_cmd(str(tmp_path))
    assert "kept (already there)" in again.stdout and (tmp_path / "ca.pem").read_bytes() == ca
    assert oct((tmp_path / "ca-key.pem").stat().st_mode & 0o777) == "0o600"


def test_the_compose_files_dask_speaks_tls_only():
    text = (REPO / "docker-compose.yml").read_text()
    assert "tcp://" not in text
    scheduler = service("dask-scheduler")
    assert scheduler["command"][1:3] == ["scheduler", "--protocol"] and scheduler["command"][3] == "tls"
    assert scheduler["environment"]["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] == "true"
    assert scheduler["depends_on"]["dask-tls"]["condition"] == "service_completed_successfully"
    dashboard = [p for p in scheduler["ports"] if p.endswith(":8787")]
    assert dashboard == ["127.0.0.1:${DASK_DASHBOARD_PORT:-8787}:8787"]  # no login: never beyond loopback
    for name in (
        "dask-cpu",
        "dask-gpu-0",
        "dask-gpu-1",
        "worker",
        "scheduler",
    ):  # every Dask client holds a certificate
        env = service(name)["environment"]
        assert env["DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT"] == "/tls/client.pem", name
        assert "dask-tls:/tls:ro" in service(name)["volumes"], name


def test_a_client_with_the_clusters_certificate_runs_a_step(cluster):
    """As the executor connects (``Client(address)``), its TLS taken from the compose file's settings."""
    env = local(service("scheduler")["environment"], cluster["tls"])
    code = (
        "import sys\nfrom distributed import Client\n"
        "with Client(sys.argv[1], timeout='60s') as c:\n"
        "    c.wait_for_workers(1, timeout=120)\n"
        "    print(c.submit(sum, [20, 22], resources={'CPU': 1}).result(timeout=60))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, cluster["address"]], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr[-3000:]


def test_a_client_without_the_credentials_is_refused(cluster):
    from distributed import Client
    from distributed.security import Security

    port, tls, other = cluster["port"], cluster["tls"], cluster["other"]
    with pytest.raises((OSError, TimeoutError)):  # plain TCP: no TLS handshake, no Dask
        Client(f"tcp://127.0.0.1:{port}", timeout="5s")
    # TLS that trusts the cluster's authority but holds a certificate of another: the scheduler refuses it
    stranger = Security(
        tls_ca_file=str(tls / "ca.pem"),
        tls_client_cert=str(other / "client.pem"),
        tls_client_key=str(other / "client-key.pem"),
        require_encryption=True,
    )
    with pytest.raises((OSError, TimeoutError)):
        Client(cluster["address"], security=stranger, timeout="5s")
    # TLS with no certificate at all: the handshake ends without a Dask greeting
    context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
    context.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw) as conn:
                conn.sendall(b"\x00" * 8)
                if not conn.recv(1):  # TLS 1.3 reports the refused certificate on the first read
                    raise ConnectionError("closed by the scheduler")
    # the scheduler's side of each refusal
    log = (cluster["root"] / "scheduler.log").read_text()
    for why in ("WRONG_VERSION_NUMBER", "CERTIFICATE_VERIFY_FAILED", "PEER_DID_NOT_RETURN_A_CERTIFICATE"):
        assert "TLS handshake failed with remote 'tls://127.0.0.1:" in log and why in log, why
