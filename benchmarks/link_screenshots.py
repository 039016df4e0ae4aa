"""Follow the scorecard's links where it is read, in headless Chromium at 1280x800, and save a screenshot
of each landing (docs/scorecard.md, "Links").

    python benchmarks/link_screenshots.py [--out docs/images] [--keep FOLDER]

It writes a scorecard (the report's own test claims) into a fresh MLflow store whose runs exist, serves
it with ``mlflow server`` and a Prefect server (its markdown artifact) on free ports, and checks:

    links-mlflow-md.png        MLflow's preview of scorecard.md: no link its router would lose; a run
                               link opens the run's page in a new tab
    links-mlflow-html.png      MLflow's preview of scorecard.html (a sandboxed frame): claim 12 clicked,
                               its row at the top of the frame
    links-mlflow-html-run.png  the same, a run link clicked: its address copied, said beside it
    links-prefect.png          the Prefect artifact: claim 12 clicked, its section at the top
    links-prefect-v2.png       the same in Prefect's newer UI (under /v2)
    links-browser.png          scorecard.html opened as a file: claim 12 clicked, its row at the top

Each check that fails is printed and the exit status is 1. Needs ``chromium`` on the PATH.
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
sys.path.insert(0, str(REPO / "benchmarks"))

from cdp import Page, stop_group  # noqa: E402

CLAIM = "12"  # a claim far enough down that landing on it scrolls


def _wait(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=3)
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{url} did not answer (exit {proc.poll()}); see {log}") from None
            time.sleep(1)


def _serve(args: list[str], env: dict, health: str, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _wait(health, proc, log)
    return proc


def write_store(folder: Path, ui: str) -> dict:
    """A parent run carrying the scorecard's three files, its claims' runs as real child runs."""
    from mlflow.tracking import MlflowClient

    from components import Context, get
    from tests.components.report.test_scorecard_component import ARCHS, EXPECT, LAG, MEASUREMENTS

    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.create_experiment("links", artifact_location=(folder / "artifacts").as_uri())
    parent = client.create_run(exp, tags={"mlflow.runName": "scorecard"}).info.run_id
    child = {k: client.create_run(exp, tags={"mlflow.parentRunId": parent}).info.run_id for k in [*LAG, "rnn", "tf"]}
    run_ids = {"lag": {k: child[k] for k in LAG}, "grad": {"rnn": child["rnn"], "transformer": child["tf"]}}
    ctx = Context(folder / "work", run_link_source=lambda r: f"{ui}/#/experiments/{exp}/runs/{r}")
    out = get("report.scorecard")(ctx, measurements=MEASUREMENTS, run_ids=run_ids, expect=EXPECT, architectures=ARCHS)
    for name in ("markdown", "html", "scorecard"):
        client.log_artifact(parent, out[name])
    return {"experiment": exp, "parent": parent, "anchored": out["anchored"], "html": out["html"]}


class Frame:
    """JavaScript in the first frame of a page: MLflow's preview frame is sandboxed to an opaque
    origin, so Chromium runs it in a process (a DevTools target) of its own."""

    def __init__(self, page: Page, timeout_s: float = 60):
        self.page, self.session, sessions = page, None, {}
        loaded = "!!document.getElementById('claim-4') && document.readyState === 'complete' && innerHeight > 200"
        deadline = time.monotonic() + timeout_s
        while True:  # the preview's frame, once its page has loaded and has its size
            for t in page.send("Target.getTargets")["targetInfos"]:
                if t["type"] == "iframe" and t["targetId"] not in sessions:
                    sessions[t["targetId"]] = page.send("Target.attachToTarget", targetId=t["targetId"], flatten=True)[
                        "sessionId"
                    ]
            for self.session in sessions.values():
                if self.js(loaded):
                    return
            if time.monotonic() > deadline:
                page.shot(Path(tempfile.gettempdir()) / "links-no-frame.png")
                raise SystemExit(
                    f"no preview frame with a scorecard on {page.js('location.href')} ({len(sessions)} frames)"
                )
            time.sleep(1)

    def js(self, expression: str):
        p = self.page
        p._id += 1
        p._ws.send(
            json.dumps(
                {
                    "id": p._id,
                    "method": "Runtime.evaluate",
                    "sessionId": self.session,
                    "params": {"expression": expression, "returnByValue": True},
                }
            )
        )
        while True:
            msg = json.loads(p._ws.recv(timeout=60))
            if msg.get("id") == p._id:
                return msg.get("result", {}).get("result", {}).get("value")


def _landed(js, element_id: str) -> bool:
    """Whether the element is at the top of the window, or in view with the page scrolled to its end."""
    return js(
        f"""(r => Math.abs(r.top) < 5 || (r.top >= 0 && r.top < innerHeight
              && scrollY + innerHeight >= document.documentElement.scrollHeight - 2))(
            document.getElementById({json.dumps(element_id)}).getBoundingClientRect())"""
    )


def _click_in_frame(page: Page, frame: Frame, selector: str) -> None:
    """Click an element of the frame with the mouse, as a reader would (scrolled into view if it is not)."""
    element = f"document.querySelector({json.dumps(selector)})"
    visible = f"(r => r.top >= 0 && r.bottom <= innerHeight)({element}.getBoundingClientRect())"
    if not frame.js(visible):
        frame.js(f"document.querySelector({json.dumps(selector)}).scrollIntoView({{block: 'center'}})")
        time.sleep(0.5)
    x, y = frame.js(
        f"(r => [r.x + r.width / 2, r.y + r.height / 2])(document.querySelector({json.dumps(selector)})"
        ".getBoundingClientRect())"
    )
    fx, fy = page.js("(r => [r.x, r.y])(document.querySelector('iframe').getBoundingClientRect())")
    page._press(fx + x, fy + y)


def check_mlflow(ui: str, ids: dict, out: Path, wait_s: float, failed: list[str]) -> None:
    from flows.track.links import MODEL_TRAINING_VIEW

    base = f"{ui}/#/experiments/{ids['experiment']}/runs/{ids['parent']}/artifacts"
    page = Page(1280, 800)
    try:
        page.open(f"{base}/scorecard.md{MODEL_TRAINING_VIEW}", wait_s)
        page.wait_for("Claim 4")
        if page.shows("Close", "button"):
            page.click("Close", selector="button")  # the MLflow Assistant's side panel, open on a first visit
        hrefs = page.js("[...document.querySelectorAll('a[href]')].map(a => [a.getAttribute('href'), a.target])")
        lost = [h for h, _ in hrefs if h.startswith("#") and not h.startswith("#/")]
        runs = [(h, t) for h, t in hrefs if "/runs/" in h and ids["parent"] not in h]
        if lost:
            failed.append(f"MLflow's scorecard.md preview: links its router would lose: {lost}")
        if not runs or any(t != "_blank" for _, t in runs):
            failed.append(f"MLflow's scorecard.md preview: run links that open no tab: {runs[:3]}")
        first = "a[target=_blank][href*='/runs/']"  # the first run id of claim 4 (its 8 characters)
        page.js(f"document.querySelector({json.dumps(first)}).scrollIntoView({{block: 'center'}})")
        page.click_nth(first, 0)
        time.sleep(wait_s / 2)
        tabs = [t for t in page.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        opened = [t for t in tabs if runs[0][0].split("#")[1] in t["url"]]
        if not opened:
            failed.append(f"MLflow's scorecard.md preview: the run link opened no page of its run ({tabs})")
        page.shot(out / "links-mlflow-md.png")
        for t in opened:  # its frames would be taken for the preview's below
            page.send("Target.closeTarget", targetId=t["targetId"])

        page.open("about:blank", 0.5)  # the UI keeps the file it shows when only the address's # part changes
        page.open(f"{base}/scorecard.html{MODEL_TRAINING_VIEW}", wait_s)
        frame = Frame(page)
        row = f"claim-{CLAIM}"
        before = _landed(frame.js, row)
        _click_in_frame(page, frame, f"a[href='#{row}']")
        time.sleep(1)
        if before or not _landed(frame.js, row):
            failed.append(f"MLflow's scorecard.html preview: the link did not land on claim {CLAIM}")
        page.shot(out / "links-mlflow-html.png")
        _click_in_frame(page, frame, "a[target=_blank]")
        time.sleep(1)
        said = frame.js("(document.querySelector('.said') || {}).textContent || ''")
        if "address copied" not in said:
            failed.append(f"MLflow's scorecard.html preview: a run link did nothing a reader sees ({said!r})")
        page.shot(out / "links-mlflow-html-run.png")
    finally:
        page.close()


def check_prefect(api: str, markdown: str, out: Path, wait_s: float, failed: list[str]) -> None:
    body = {"type": "markdown", "data": markdown, "key": "scorecard-links", "description": "scorecard"}
    req = urllib.request.Request(
        f"{api}/artifacts/", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    artifact = json.loads(urllib.request.urlopen(req, timeout=30).read())["id"]
    for ui, name in (("", "links-prefect.png"), ("/v2", "links-prefect-v2.png")):  # the two UIs Prefect 3 serves
        page = Page(1280, 800)
        try:
            page.open(f"{api.removesuffix('/api')}{ui}/artifacts/artifact/{artifact}", wait_s)
            page.wait_for("Claim 4")
            row = f"claim-{CLAIM}"
            before = _landed(page.js, row)
            page.click(CLAIM, selector=f"a[href='#{row}']")
            if before or not _landed(page.js, row):
                failed.append(f"Prefect's artifact ({ui or '/'}): the link did not land on claim {CLAIM}")
            page.shot(out / name)
        finally:
            page.close()


def check_browser(html: str, out: Path, failed: list[str]) -> None:
    page = Page(1280, 800)
    try:
        page.open(Path(html).as_uri(), 2)
        row = f"claim-{CLAIM}"
        before = _landed(page.js, row)
        page.click(CLAIM, selector=f"a[href='#{row}']")
        if before or not _landed(page.js, row) or page.js("location.hash") != f"#{row}":
            failed.append(f"a browser: the link did not land on claim {CLAIM}")
        page.shot(out / "links-browser.png")
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--keep", type=Path, default=None, help="write the store here (default: a temporary folder)")
    parser.add_argument("--wait-s", type=float, default=12, help="seconds a page gets to load its data")
    args = parser.parse_args()
    from flows.services.ports import free_port

    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="links-"))
    folder.mkdir(parents=True, exist_ok=True)
    mport, pport = free_port(), free_port()
    ui, api = f"http://127.0.0.1:{mport}", f"http://127.0.0.1:{pport}/api"
    ids = write_store(folder, ui)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_"))}
    procs = []
    failed: list[str] = []
    try:
        mlflow_args = ["server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"]
        procs.append(
            _serve(
                [sys.executable, "-m", "mlflow", *mlflow_args, "--host", "127.0.0.1", "--port", str(mport)],
                env,
                f"{ui}/health",
                folder / "mlflow.log",
            )
        )
        prefect_env = env | {
            "PREFECT_HOME": str(folder / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_API_URL": api,
        }
        procs.append(
            _serve(
                [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(pport)],
                prefect_env,
                f"{api}/health",
                folder / "prefect.log",
            )
        )
        check_mlflow(ui, ids, args.out, args.wait_s, failed)
        check_prefect(api, ids["anchored"], args.out, args.wait_s, failed)
        check_browser(ids["html"], args.out, failed)
    finally:
        for proc in procs:
            stop_group(proc)
    for line in failed:
        print(f"FAILED {line}")
    print("every link landed" if not failed else f"{len(failed)} check(s) failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
