"""Screenshots of a finished run in the Prefect UI, taken with headless Chromium.

    python benchmarks/prefect_screenshots.py STATE_FOLDER [--out docs/images] [--prefix prefect-quick]

STATE_FOLDER is the run's state folder (``BOTTLENECKS_HOME``, ``.bottlenecks`` in the project by
default). The script uses the folder's background Prefect server if it answers, else serves the
UI over the folder's Prefect database itself, picks the newest flow run (or ``--flow-run ID``)
and saves, under ``--out``, at 1280x800 (a laptop's browser window, as the MLflow screenshots):

    PREFIX-flow-run.png       the flow run's page: its name, tags, graph and the top of its logs
    PREFIX-logs.png           the same page, as tall as ``--logs-height`` (every line of a small run)
    PREFIX-scorecard.png      the scorecard artifact, rendered (when the run has one; ``--scorecard-name``)
    PREFIX-failed-task.png    the first failed task run's page: its error in its logs (when one failed)
    PREFIX-error-summary.png  that task run's error-summary artifact

A path under the run's project folder (a traceback's files, the virtual environment's among them) is
shown relative to it (``--project``): the images name no folder of the machine that took them.

Needs ``chromium`` on the PATH (Debian/Ubuntu: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cdp import Page, stop_group  # noqa: E402  (beside this script)


def _call(url: str, body: dict | None = None, timeout: float = 10.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def _healthy(api: str) -> bool:
    try:
        _call(f"{api}/health", timeout=3)
        return True
    except OSError:
        return False


def serve(state: Path, log) -> tuple[str, subprocess.Popen | None]:
    """The API URL of a Prefect server over ``state``: the folder's own, or one started here."""
    record = state / "prefect-server.json"
    if record.exists():
        api = json.loads(record.read_text()).get("url", "")
        if api and _healthy(api):
            return api, None
    db = state / "prefect" / "prefect.db"
    if not db.exists():
        raise SystemExit(f"no Prefect database at {db}: run a pipeline with BOTTLENECKS_HOME={state} first")
    from flows.services.ports import free_port

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        {
            "PREFECT_HOME": str(state / "prefect"),
            "PREFECT_UI_API_URL": api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_API_HOST": "127.0.0.1",
            "PREFECT_SERVER_API_PORT": str(port),
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while not _healthy(api):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the Prefect server did not start (exit {proc.poll()}); see {log.name}")
        time.sleep(1)
    return api, proc


def shoot(url: str, path: Path, width: int, height: int, wait_ms: int, project: Path | None = None) -> None:
    """Save a PNG of ``url`` after ``wait_ms`` (the UI loads its data first); a path under ``project``
    (a traceback's files) is shown relative to it."""
    page = Page(width, height)
    try:
        page.open(url, wait_ms / 1000)
        if project is not None:
            page.js(
                f"""(() => {{
                  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
                  for (let n = walk.nextNode(); n; n = walk.nextNode())
                    n.nodeValue = n.nodeValue.split({json.dumps(str(project) + "/")}).join('');
                }})()"""
            )
        page.shot(path)
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path, help="the run's state folder (BOTTLENECKS_HOME)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--prefix", default="prefect", help="file names start with this")
    parser.add_argument("--flow-run", default=None, help="a flow-run id (default: the newest)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--scorecard-name", default=None, help="the scorecard shot's file name (PREFIX-scorecard.png)")
    parser.add_argument("--logs-height", type=int, default=2600, help="height of the full-logs shot")
    parser.add_argument("--wait-ms", type=int, default=30000, help="time a page gets before its screenshot")
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        help="the run's project folder (STATE_FOLDER/..): paths in it shown relative",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    state = args.state.resolve()
    with tempfile.NamedTemporaryFile("w", suffix=".log", prefix="prefect-ui-", delete=False) as log:
        api, proc = serve(state, log)
    try:
        ui = api.removesuffix("/api")
        if args.flow_run:
            run = _call(f"{api}/flow_runs/{args.flow_run}")
        else:
            runs = _call(f"{api}/flow_runs/filter", {"sort": "START_TIME_DESC", "limit": 1})
            if not runs:
                raise SystemExit(f"no flow runs in the Prefect database of {state}")
            run = runs[0]
        fid = run["id"]
        print(f"flow run {run['name']!r} ({run['state_type']}), {fid}")
        project = (args.project or state.parent).resolve()
        size = (args.width, args.height, args.wait_ms, project)
        prefix = args.out / args.prefix
        shoot(f"{ui}/runs/flow-run/{fid}", Path(f"{prefix}-flow-run.png"), *size)
        tall = (args.width, args.logs_height, args.wait_ms, project)
        shoot(f"{ui}/runs/flow-run/{fid}", Path(f"{prefix}-logs.png"), *tall)
        artifacts = _call(f"{api}/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [fid]}}})
        card = [a for a in artifacts if "claims hold" in (a.get("description") or "")]  # the scorecard's headline
        if card:
            name = args.scorecard_name or f"{args.prefix}-scorecard.png"
            shoot(f"{ui}/artifacts/artifact/{card[0]['id']}", args.out / name, *size)
        failed = _call(
            f"{api}/task_runs/filter",
            {"flow_runs": {"id": {"any_": [fid]}}, "task_runs": {"state": {"type": {"any_": ["FAILED"]}}}},
        )
        if failed:
            tid = failed[0]["id"]
            shoot(f"{ui}/runs/task-run/{tid}", Path(f"{prefix}-failed-task.png"), *size)
            summary = [a for a in artifacts if a.get("task_run_id") == tid]
            if summary:
                shoot(f"{ui}/artifacts/artifact/{summary[0]['id']}", Path(f"{prefix}-error-summary.png"), *size)
    finally:
        if proc is not None:
            stop_group(proc)


if __name__ == "__main__":
    main()
