"""Screenshots of a finished run in the MLflow UI at 1280x800, taken with headless Chromium.

    python benchmarks/mlflow_screenshots.py STATE_FOLDER [--out docs/images] [--experiment four-bottlenecks]
        [--shots parent,comparison,training]

STATE_FOLDER is the run's state folder (``BOTTLENECKS_HOME``, ``.bottlenecks`` in the project by
default). The script serves its store with ``bottlenecks ui`` on a free port, opens the newest
parent run by the link ``bottlenecks run`` prints, and clicks as a user would (``benchmarks/cdp.py``
drives Chromium through the DevTools protocol); a fresh browser profile is a first visit, so MLflow's
Assistant panel opens and is closed by its Close button. It saves, under ``--out``, by ``--shots``:

  parent
    mlflow-parent-run.png        the printed link: the parent run's page, its "About this run" column
    mlflow-parent-figures.png    its Artifacts tab: figures/ unfolded, the valid/bleu comparison figure
                                 (figures/compare_valid_bleu.png) previewed, the scorecard files below
    mlflow-parent-scorecard.png  scorecard.md previewed in the same pane
  comparison
    mlflow-grouped-bleu.png      the printed comparison link of valid/bleu (flows/track/compare.py):
                                 chart view, this run's trainings grouped by architecture, every run
                                 shown, the charts filtered to valid/bleu; no click but closing the
                                 Assistant panel
    mlflow-grouped-bleu-large.png  the same chart enlarged (its expand icon)
  training (a training run of the parent that computed, not one served from the cache: a cached
  copy has the metrics, not the description and figure)
    mlflow-training-run.png      a training run's first screen: its description (converged or not, and
                                 its curves figure, flows/track/training_note.py)
    mlflow-training-run-unfolded.png  the same after "Show more", where the description is folded
    mlflow-training-curves.png   a training run's Model metrics tab as it opens

Where MLflow prints the state folder's absolute path (an artifact's "Path:" line), the images show
``$BOTTLENECKS_HOME`` instead: they name no folder of the machine that took them.

Needs ``chromium`` on the PATH (Debian/Ubuntu: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

# the clicks from the printed comparison link to the enlarged valid/bleu chart (docs/metrics.md lists them)
CLICKS = ("Close (the Assistant panel, first visit only)", "the chart's expand icon")


def serve(state: Path, log) -> tuple[str, subprocess.Popen]:
    """The URL of ``bottlenecks ui`` over ``state``, started here on a free port."""
    from flows.services.ports import free_port

    port = free_port()
    env = {**os.environ, "BOTTLENECKS_HOME": str(state)}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from flows.cli import app; app()", "ui", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=3)
            return url, proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the MLflow UI did not start (exit {proc.poll()}); see {log.name}") from None
            time.sleep(1)


def _client(state: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{state / 'mlflow.db'}")


def newest(state: Path, experiment: str):
    """The experiment id, its newest parent run and a computed training run of that parent that logged
    valid/bleu and has its description (None when there is none)."""
    client = _client(state)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise SystemExit(f"no experiment {experiment!r} in {state}")
    runs = client.search_runs([exp.experiment_id], max_results=2000, order_by=["attributes.start_time DESC"])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    if not parents:
        raise SystemExit(f"no parent run in {experiment!r}")
    parent = parents[0]
    trained = [
        r
        for r in runs
        if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
        and "architecture" in r.data.tags
        and "valid/bleu" in r.data.metrics
        and "mlflow.note.content" in r.data.tags
    ]
    return exp.experiment_id, parent, (trained[0] if trained else None)


SHOTS = ("parent", "comparison", "training")


def hide_folder(page: Page, folder: Path) -> None:
    """Write ``$BOTTLENECKS_HOME`` where the page shows the state folder's absolute path."""
    page.js(
        f"""(() => {{
          const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
          for (let n = walk.nextNode(); n; n = walk.nextNode())
            n.nodeValue = n.nodeValue.split({json.dumps(str(folder))}).join('$BOTTLENECKS_HOME');
        }})()"""
    )


def close_assistant(page: Page) -> int:
    """Close MLflow's Assistant panel where a first visit opened it; the clicks it took."""
    if page.shows("Close", "button"):
        page.click("Close", selector="button")
        return 1
    return 0


def parent_shots(page: Page, ui: str, experiment_id: str, parent, state: Path, out: Path, wait_s: float) -> None:
    from flows.track.links import MODEL_TRAINING_VIEW

    run = f"{ui}/#/experiments/{experiment_id}/runs/{parent.info.run_id}"
    printed = f"{run}{MODEL_TRAINING_VIEW}"
    print(f"parent run {parent.info.run_id}: {printed}")
    page.open(printed, wait_s)
    page.wait_for("About this run")
    close_assistant(page)
    page.shot(out / "mlflow-parent-run.png")
    page.click("Artifacts", selector="[role=tab], a, button, span")
    page.wait_for("scorecard.md")
    page.click("figures", selector="span, div")  # unfold the folder
    page.wait_for("compare_valid_bleu.png")
    page.click("compare_valid_bleu.png", selector="span, div")
    time.sleep(wait_s / 4)
    hide_folder(page, state)
    page.shot(out / "mlflow-parent-figures.png")
    page.click("scorecard.md", selector="span, div")
    page.wait_for("Verdicts")
    time.sleep(wait_s / 4)
    hide_folder(page, state)
    page.shot(out / "mlflow-parent-scorecard.png")


def comparison_shots(page: Page, ui: str, experiment_id: str, parent, state: Path, out: Path, wait_s: float) -> None:
    from flows.track import compare

    views = compare.compared_metrics(_client(state), experiment_id, parent.info.run_id)
    if "valid/bleu" not in views:
        raise SystemExit(f"parent run {parent.info.run_id} has no valid/bleu comparison (it has {views})")
    link = compare.url(experiment_id, compare.share_key(parent.info.run_id, "valid/bleu"))
    link = link.replace(link.split("/#/")[0], ui)  # this script's UI, on its own port
    print(f"compare: valid/bleu by architecture {link}")
    page.open(link, wait_s)
    page.wait_for("Group by")
    clicks = close_assistant(page)
    time.sleep(wait_s)
    page.shot(out / "mlflow-grouped-bleu.png")
    page.click_nth("button[data-component-id=fullscreen_button_chartcard]", 0)  # the chart's expand icon
    clicks += 1
    time.sleep(wait_s / 2)
    page.shot(out / "mlflow-grouped-bleu-large.png")
    print(f"clicks from the printed comparison link to the enlarged valid/bleu chart: {clicks}")
    tags = _client(state).get_experiment(experiment_id).tags
    view = json.loads(tags[compare.SHARED_VIEW_TAG + compare.share_key(parent.info.run_id, "valid/bleu")])
    legend_colours(page, "valid/bleu", view["groupBy"]["groupByKeys"][0]["groupByData"])


def legend_colours(page: Page, metric: str, tag: str) -> dict[str, str]:
    """The enlarged chart's legend as the page draws it: each entry's name (a text leaf ending in
    ``(metric)``) and the stroke of the line drawn beside it (MLflow 3.17: an ``svg path`` sibling),
    printed with the number of distinct colours, and each against MLflow's colour of its group
    (``tag.<tag>.<name>``) as flows/track/compare.py predicts it."""
    from flows.track import compare

    found = page.js(
        f"""(() => {{
          const out = {{}};
          for (const el of document.querySelectorAll('[role=dialog] *')) {{
            const text = (el.textContent || '').trim();
            if (el.children.length || !text.endsWith({json.dumps(f" ({metric})")})) continue;
            const path = el.parentElement && el.parentElement.querySelector('svg path');
            if (path) out[text.slice(0, -{len(metric) + 3})] = getComputedStyle(path).stroke;
          }}
          return JSON.stringify(out);
        }})()"""
    )
    colours = {
        name: "#%02x%02x%02x" % tuple(int(v) for v in re.findall(r"\d+", rgb)[:3])
        for name, rgb in json.loads(found or "{}").items()
    }
    for name, colour in colours.items():
        predicted = compare.mlflow_colour(f"tag.{tag}.{name}")
        print(f"legend: {name} {colour} (predicted {predicted}: {'same' if predicted == colour else 'DIFFERENT'})")
    print(f"legend of the enlarged {metric} chart: {len(colours)} entries, {len(set(colours.values()))} colours")
    return colours


def training_shots(page: Page, ui: str, experiment_id: str, trained, out: Path, wait_s: float) -> None:
    from flows.track.links import MODEL_TRAINING_VIEW

    if trained is None:
        raise SystemExit("the newest parent run has no computed training run with a description")
    run = f"{ui}/#/experiments/{experiment_id}/runs/{trained.info.run_id}"
    page.open(f"{run}{MODEL_TRAINING_VIEW}", wait_s)  # its Overview: the description, converged or not, and the curves
    page.wait_for("Description")
    close_assistant(page)
    time.sleep(wait_s / 4)
    page.shot(out / "mlflow-training-run.png")
    if page.shows("Show more", "button, span, a"):  # a long description is folded
        page.click("Show more", selector="button, span, a")
        time.sleep(2)
        page.shot(out / "mlflow-training-run-unfolded.png")
    page.open(f"{run}/model-metrics{MODEL_TRAINING_VIEW}", wait_s)
    page.shot(out / "mlflow-training-curves.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path, help="the run's state folder (BOTTLENECKS_HOME)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--experiment", default="four-bottlenecks")
    parser.add_argument("--shots", default=",".join(SHOTS), help=f"which of {', '.join(SHOTS)} (comma-separated)")
    parser.add_argument("--wait-s", type=float, default=20, help="seconds a page gets to load its data")
    args = parser.parse_args()
    shots = args.shots.split(",")
    if unknown := set(shots) - set(SHOTS):
        raise SystemExit(f"unknown shots {sorted(unknown)}; use {', '.join(SHOTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    state = args.state.resolve()
    experiment_id, parent, trained = newest(state, args.experiment)
    with tempfile.NamedTemporaryFile("w", suffix=".log", prefix="mlflow-ui-", delete=False) as log:
        ui, proc = serve(state, log)
    page = Page(1280, 800)
    try:
        if "parent" in shots:
            parent_shots(page, ui, experiment_id, parent, state, args.out, args.wait_s)
        if "comparison" in shots:
            comparison_shots(page, ui, experiment_id, parent, state, args.out, args.wait_s)
        if "training" in shots:
            training_shots(page, ui, experiment_id, trained, args.out, args.wait_s)
    finally:
        page.close()
        stop_group(proc)


if __name__ == "__main__":
    main()
