"""The logins the CLI sends itself (the server check, the schedule commands' REST calls), from the
variables MLflow's and Prefect's clients read, against a stand-in server that guards all but /health."""

import base64
import http.server
import threading

import pytest

from flows.ops import prefect_api
from flows.services import connect, logins

MLFLOW_LOGIN, PREFECT_LOGIN = "admin:mlflow-password", "admin:prefect-password"
VARIABLES = (
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "PREFECT_API_AUTH_STRING",
    "PREFECT_API_KEY",
)


def basic(login: str) -> str:
    return "Basic " + base64.b64encode(login.encode()).decode()


@pytest.fixture
def no_logins(monkeypatch, tmp_path):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials but the test's own


@pytest.fixture
def guarded():
    """A server answering /health to anyone and everything else only to the right login: MLflow's
    under /mlflow, Prefect's under /prefect/api (as the servers do, 401 otherwise)."""

    class Guarded(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            wanted = basic(MLFLOW_LOGIN if self.path.startswith("/mlflow/") else PREFECT_LOGIN)
            ok = self.path.endswith("/health") or self.headers.get("Authorization") == wanted
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"ok": true}' if ok else b'{"detail": "Unauthorized"}')

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Guarded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield f"{base}/mlflow", f"{base}/prefect/api"
    server.shutdown()


def test_headers_come_from_the_clients_variables(no_logins, monkeypatch, tmp_path):
    assert logins.mlflow_headers() == {} and logins.prefect_headers() == {}
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    monkeypatch.setenv("PREFECT_API_KEY", "key")
    assert logins.mlflow_headers() == {"Authorization": "Bearer tok"}
    assert logins.prefect_headers() == {"Authorization": "Bearer key"}
    (tmp_path / ".mlflow").mkdir()  # MLflow's credentials file, under the password in the environment
    (tmp_path / ".mlflow" / "credentials").write_text(
        "[mlflow]\nmlflow_tracking_username = filed\nmlflow_tracking_password = from-file\n"
    )
    assert logins.mlflow_headers() == {"Authorization": basic("filed:from-file")}
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "mlflow-password")
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", PREFECT_LOGIN)  # before the API key, as Prefect's client
    assert logins.mlflow_headers() == {"Authorization": basic(MLFLOW_LOGIN)}
    assert logins.prefect_headers() == {"Authorization": basic(PREFECT_LOGIN)}


def test_the_server_check_says_which_login_is_missing_or_refused(no_logins, monkeypatch, guarded):
    mlflow_url, prefect_url = guarded
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_url)
    monkeypatch.setenv("PREFECT_API_URL", prefect_url)
    with pytest.raises(connect.ServerUnreachable) as missing:
        connect.check_servers(timeout=5)
    assert str(missing.value).splitlines() == [
        f"MLflow server at {mlflow_url} asks for a login (HTTP 401): set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD (see docs/deployment.md)",
        f"Prefect API at {prefect_url} asks for a login (HTTP 401): set PREFECT_API_AUTH_STRING to the "
        "server's PREFECT_SERVER_API_AUTH_STRING (user:password)",
    ]
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong")
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", "admin:wrong")
    with pytest.raises(connect.ServerUnreachable) as wrong:
        connect.check_servers(timeout=5)
    assert f"MLflow server at {mlflow_url} refused the login of user 'admin' (HTTP 401)" in str(wrong.value)
    assert f"Prefect API at {prefect_url} refused the login (HTTP 401)" in str(wrong.value)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "mlflow-password")
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", PREFECT_LOGIN)
    connect.check_servers(timeout=5)  # both logins taken


def test_the_schedule_commands_rest_calls_log_in(no_logins, monkeypatch, guarded):
    _, prefect_url = guarded
    with pytest.raises(prefect_api.PrefectAPIError, match=r"asks for a login \(HTTP 401\)") as refused:
        prefect_api.call(prefect_url, "POST", "/deployments/filter", {})
    assert refused.value.status == 401
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", PREFECT_LOGIN)
    assert prefect_api.call(prefect_url, "POST", "/deployments/filter", {}) == {"ok": True}
