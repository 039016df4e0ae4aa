"""Telling someone: targets parsed and refused, messages delivered to a local receiver (an http.server
thread), a command's stdin, and `history --notify` end to end with its exit statuses."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.ops import notify
from flows.ops.history import Flag
from tests.support.history_runs import name, trained


class Receiver:
    """A local webhook: records each POSTed JSON body and answers ``status``."""

    def __init__(self, status: int = 200):
        self.bodies: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):  # keep the test output clean
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_port
    server.server_close()
    return port


WORSE = Flag("train/test/acc", "regression", 0.8, 0.91, "train/test/acc: 0.91 -> 0.8", "worse")
BETTER = Flag("train/test/acc", "improvement", 0.99, 0.5, "train/test/acc: 0.5 -> 0.99", "better")
MOVED = Flag("widgets", "change", 7.0, 5.0, "widgets: 5 -> 7", None)


def test_targets_are_urls_commands_or_blocks_and_anything_else_is_refused_with_the_forms():
    assert notify.parse_target("https://hooks.example.org/x") == notify.Target("url", "https://hooks.example.org/x")
    assert notify.parse_target("cmd:mail -s nightly team") == notify.Target("cmd", "mail -s nightly team")
    assert notify.parse_target("block:slack-webhook/nightly") == notify.Target("block", "slack-webhook/nightly")
    with pytest.raises(notify.NotifyError, match=r"expected an http\(s\) URL .* cmd:COMMAND .* block:TYPE/NAME"):
        notify.parse_target("hooks.example.org")
    with pytest.raises(notify.NotifyError, match="a block is named TYPE/NAME, e.g. block:slack-webhook/nightly"):
        notify.parse_target("block:nightly")


def test_an_http_url_is_checked_as_a_url_and_other_schemes_by_apprise():
    assert notify.parse_target("HTTP://x.org/h") == notify.Target("url", "http://x.org/h")  # schemes ignore case
    with pytest.raises(notify.NotifyError, match=r"the URL has no valid host \('exa mple.org'\)"):
        notify.parse_target("https://exa mple.org/x")
    assert notify.parse_target("slack://T0AA/B0BB/abcdefghij") == notify.Target(
        "apprise", "slack://T0AA/B0BB/abcdefghij"
    )
    assert notify.parse_target("mailto://user:pw@example.org").kind == "apprise"
    with pytest.raises(notify.NotifyError, match=r"Apprise reads no service in this URL; .*slack://.*mailto://"):
        notify.parse_target("nonsense://x")


def test_an_apprise_target_delivers_through_apprise():
    body = notify.message("nightly", [WORSE], {}, [])
    with Receiver() as hook:
        done = notify.send(notify.parse_target(hook.url.replace("http://", "json://")), body)
    assert done == "sent through Apprise (json://)"
    (got,) = hook.bodies
    assert got["title"] == "bottlenecks history nightly: regression" and "train/test/acc" in got["message"]


def test_the_verdict_and_which_verdicts_are_sent():
    assert [notify.verdict(f) for f in ([WORSE, BETTER], [BETTER], [BETTER, MOVED], [])] == [
        "regression",
        "improvement",
        "change",
        "unchanged",
    ]
    assert [notify.due("regression", v) for v in ("regression", "improvement", "unchanged")] == [True, False, False]
    assert [notify.due("change", v) for v in ("regression", "change", "improvement", "unchanged")] == [
        True,
        True,
        True,
        False,
    ]
    assert notify.due("always", "unchanged")


def test_a_webhook_gets_the_verdict_its_changes_and_links_as_json():
    body = notify.message("nightly", [WORSE], {"newest": "http://mlflow/runs/b"}, ["a note"])
    with Receiver() as hook:
        done = notify.send(notify.parse_target(hook.url), body)
    assert done == f"POST {hook.url} -> 200"
    (got,) = hook.bodies
    assert got["pipeline"] == "nightly" and got["verdict"] == "regression"
    assert got["changes"] == [
        {
            "metric": "train/test/acc",
            "kind": "regression",
            "direction": "worse",
            "newest": 0.8,
            "baseline": 0.91,
            "message": "train/test/acc: 0.91 -> 0.8",
        }
    ]
    assert got["links"] == {"newest": "http://mlflow/runs/b"}
    assert got["text"].splitlines() == [
        "bottlenecks history nightly: regression",
        "REGRESSION train/test/acc: 0.91 -> 0.8",
        "a note",
        "newest run: http://mlflow/runs/b",
    ]


def test_a_refused_or_unreachable_webhook_is_a_clear_error():
    body = notify.message("nightly", [WORSE], {})
    with Receiver(status=500) as hook, pytest.raises(notify.NotifyError, match="failed: HTTP 500"):
        notify.send(notify.parse_target(hook.url), body)
    url = f"http://127.0.0.1:{free_port()}/hook"
    with pytest.raises(notify.NotifyError, match=f"notification to {url} failed: could not reach it"):
        notify.send(notify.parse_target(url), body, timeout=2)


def test_a_command_gets_the_text_on_stdin_and_the_verdict_in_its_environment(tmp_path):
    out = tmp_path / "told.txt"
    body = notify.message("nightly", [BETTER], {})
    notify.send(notify.parse_target(f'cmd:(echo "$BOTTLENECKS_PIPELINE $BOTTLENECKS_VERDICT"; cat) > {out}'), body)
    assert out.read_text().splitlines()[:2] == ["nightly improvement", "bottlenecks history nightly: improvement"]
    with pytest.raises(notify.NotifyError, match="exited 3: no mailer"):
        notify.send(notify.parse_target("cmd:echo no mailer >&2; exit 3"), body)


# -- `history --notify` ----------------------------------------------------------------------------------


def test_history_tells_a_local_receiver_of_a_regression_and_keeps_exit_1():
    p = name()
    ids = trained(p, [[0.91, 0.90, 0.92], [0.80, 0.79, 0.81]], tags={"prefect_flow_run_id": "f10w"})
    with Receiver() as hook:
        result = CliRunner().invoke(app, ["history", p, "-m", "train*", "--no-plot", "--notify", hook.url])
    assert result.exit_code == 1, result.output
    (got,) = hook.bodies
    assert got["verdict"] == "regression" and got["pipeline"] == p
    assert [c["metric"] for c in got["changes"]] == ["train[arch=lstm]/test/acc"]
    assert got["links"]["newest"].endswith(f"/runs/{ids[-1]}?workflowType=machine_learning")
    assert ids[0] in got["links"]["previous"]
    assert got["links"]["newest (Prefect)"].endswith("/runs/flow-run/f10w")  # the suite's Prefect server keeps them
    assert f"notified {hook.url}" in result.output


def test_history_notifies_only_the_verdicts_asked_for_and_a_failed_delivery_exits_3():
    p = name()
    trained(p, [[0.50, 0.52, 0.48], [0.99, 1.00, 0.98]])
    with Receiver() as hook:
        quiet = CliRunner().invoke(app, ["history", p, "-m", "train*", "--no-plot", "--notify", hook.url])
        told = CliRunner().invoke(
            app, ["history", p, "-m", "train*", "--no-plot", "--notify", hook.url, "--notify-on", "change"]
        )
    assert quiet.exit_code == 0 and "not notified: the verdict is improvement (--notify-on regression)" in quiet.output
    assert told.exit_code == 0, told.output
    assert [b["verdict"] for b in hook.bodies] == ["improvement"]
    url = f"http://127.0.0.1:{free_port()}/hook"
    failed = CliRunner().invoke(app, ["history", p, "--no-plot", "--notify", url, "--notify-on", "always"])
    assert failed.exit_code == 3, failed.output
    assert "no regression" in failed.output and f"notification failed: notification to {url}" in failed.output
    bad = CliRunner().invoke(app, ["history", p, "--notify", "pager"])
    assert bad.exit_code == 2 and "--notify 'pager': expected an http(s) URL" in bad.output


@pytest.mark.slow  # saves a block on the suite's Prefect server (about 7 s on 2 loaded cores)
def test_a_prefect_notification_block_delivers_through_prefects_block_api():
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block = f"hook-{name()}"
    with Receiver() as hook:
        CustomWebhookNotificationBlock(name="nightly", url=hook.url, json_data={"text": "{{subject}}: {{body}}"}).save(
            block
        )
        done = notify.send(notify.parse_target(f"block:custom-webhook/{block}"), notify.message("nightly", [WORSE], {}))
    assert done == f"sent through block custom-webhook/{block}"
    (got,) = hook.bodies
    assert got["text"].startswith("bottlenecks history nightly: regression: bottlenecks history nightly: regression\n")
    with pytest.raises(notify.NotifyError, match="notification block 'custom-webhook/no-such' could not be loaded"):
        notify.send(notify.parse_target("block:custom-webhook/no-such"), notify.message("nightly", [], {}))


FORMS = f"--notify 'ftp://x': Apprise reads no service in this URL; {notify.FORMS}"


def test_schedule_refuses_a_target_as_history_does_with_the_same_message(tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("name: p\nsteps: {a: {uses: tests.support.engine_components:numbers}}\n")
    told = CliRunner().invoke(app, ["history", "p", "--notify", "ftp://x"])
    scheduled = CliRunner().invoke(app, ["schedule", str(pipeline), "--cron", "0 2 * * *", "--notify", "ftp://x"])
    assert (told.exit_code, scheduled.exit_code) == (2, 2)
    assert told.output.strip().replace("\n", " ") == FORMS
    assert scheduled.output == told.output  # the same rule, the same words, and nothing else happened
    from flows.ops import deployments

    with pytest.raises(deployments.ScheduleError) as refused:  # a schedule made from code too
        deployments.spec_from_file(pipeline, cron="0 2 * * *", notify="ftp://x")
    assert str(refused.value) == FORMS


def test_notify_on_pipeline_tells_of_a_changed_pipeline_that_moved_a_judged_metric():
    moved = Flag(
        "train/test/acc", "pipeline", 0.5, 0.91, "train/test/acc: 0.91 -> 0.5 (worse) with a changed pipeline", "worse"
    )
    unknown = Flag("widgets", "pipeline", 7.0, 5.0, "widgets: 5 -> 7 with a changed pipeline", None)
    diff = Flag("pipeline", "pipeline", None, None, "the pipeline changed between run a and run b:\n-x\n+y")
    assert notify.verdict([diff, moved]) == "change"
    assert notify.due("pipeline", "change", [diff, moved])
    assert not notify.due("regression", "change", [diff, moved])  # such a move is never a regression
    assert not notify.due("pipeline", "change", [diff, unknown])  # better is not known: not a judged metric
    assert not notify.due("pipeline", "change", [diff])  # a changed pipeline that moved nothing
    assert not notify.due("pipeline", "improvement", [BETTER])
    assert notify.due("pipeline", "regression", [WORSE])
    from flows.ops import deployments

    deployments.check_notify("https://hooks.example.org/x", "pipeline")  # a schedule may ask for it


def test_links_say_where_no_ui_serves_them_and_follow_the_named_mlflow_ui(tmp_path, monkeypatch):
    """A local store's MLflow pages open only under `bottlenecks ui`, a stopped folder server's flow runs
    only once it is opened again: the notification says so instead of sending dead links."""
    from flows.track import links

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.delenv(links.UI_ENV, raising=False)
    said = links.unserved("f10w", tmp_path)
    assert said[0].startswith("MLflow links open while `bottlenecks ui` serves the local store")
    assert links.UI_ENV in said[0]
    assert said[1].startswith("Prefect flow run f10w is kept by the Prefect server of state folder")
    assert "`bottlenecks ui --prefect`" in said[1]
    assert links.prefect_flow_run("f10w", tmp_path) is None  # no server recorded there
    monkeypatch.setenv(links.UI_ENV, "https://mlflow.team.example/")
    assert links.mlflow_run("1", "abc").startswith("https://mlflow.team.example/#/experiments/1/runs/abc")
    assert links.unserved(None, tmp_path) == []


def test_history_sends_the_unserved_notes_with_the_links():
    p = name()
    trained(p, [[0.91, 0.90, 0.92], [0.80, 0.79, 0.81]], tags={"prefect_flow_run_id": "f10w"})
    with Receiver() as hook:
        CliRunner().invoke(app, ["history", p, "-m", "train*", "--no-plot", "--notify", hook.url])
    (got,) = hook.bodies
    assert any(n.startswith("MLflow links open while `bottlenecks ui`") for n in got["notes"]), got["notes"]
    assert "MLflow links open while" in got["text"]
