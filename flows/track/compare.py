"""One link to the comparison of a pipeline run's trainings, per validation metric.

The link opens MLflow's runs page of the experiment in chart view with: the step runs of this
pipeline run that logged the metric (a search filter on the parent run and the metric), sorted by it
(best first), grouped by their ``architecture`` tag (one line per architecture, the mean over seeds
with its band; the legend names those lines only), every run shown (not MLflow's first ten), and the
charts filtered to that metric; another metric is two clicks away (clear the charts' search box,
pick the chart). MLflow keeps such a page as a *shared view*: an experiment tag
``mlflow.sharedViewState.<key>`` whose value is the page's state as JSON, opened by
``#/experiments/<id>/runs?viewStateShareKey=<key>`` (what its "Share" button makes). The run writes
one per metric when it closes, names them in the parent run's description, and ``run`` prints them;
the views of the newest 60 pipeline runs of an experiment are kept, older ones deleted (their figures
stay on their parent runs).

Beside each view the parent run gets a figure drawn here, in the project's colours
(``components/colours.py``: one per architecture, the same in every figure): the metric against the
step, one line per architecture (the mean over its seeds) with its seeds' range shaded, and a
legend naming each architecture drawn with its seed count (``figures/compare_valid_bleu.png``).
MLflow cannot be given a group's colour: it hashes the group's id (``tag.architecture.<name>``) into
its palette, and a colour picked in its UI stays in that browser; two architectures may share one
there (docs/metrics.md), never in the figure.
"""

from __future__ import annotations

import hashlib
import json
import re

from flows.track import links

SHARED_VIEW_TAG = "mlflow.sharedViewState."  # MLflow 3's experiment-tag prefix of a shared view
GROUP_TAG = "architecture"  # each step run's tag of the model it trained (flows/execute/_step_runs.py)
VALIDATION = "valid/"  # the trainings' validation metrics (components/train/curves.py)
_FIRST = ("valid/bleu", "valid/acc")  # the headline metrics first; the loss last
KEEP_RUNS = 60  # the pipeline runs whose views are kept: two months of a nightly schedule (prune_views)
_PARENT = re.compile(r"tags\.mlflow\.parentRunId = '([0-9a-f]+)'")  # the run a view's search filter names


def share_key(parent_run_id: str, metric: str) -> str:
    """The view's key: the same pipeline run and metric always give the same key (a rerun of the
    close rewrites the same tag)."""
    return "bottlenecks-" + hashlib.sha256(f"{parent_run_id}:{metric}".encode()).hexdigest()[:16]


def search_filter(parent_run_id: str, metric: str) -> str:
    """The runs of one pipeline run that logged ``metric`` (MLflow's search syntax)."""
    return f"tags.mlflow.parentRunId = '{parent_run_id}' and metrics.`{metric}` > -1e300"


def lower_is_better(metric: str) -> bool:
    """A loss is best low; BLEU and accuracy high."""
    return metric.endswith("loss")


def view_state(parent_run_id: str, metric: str) -> dict:
    """The runs page's state as MLflow's shared view stores it: its search facets and its UI state."""
    return {
        "searchFilter": search_filter(parent_run_id, metric),
        # by the metric, best first: the groups (and the legend) in that order, and no runs added that
        # the filter left out (MLflow fetches the parents of the runs it lists only when they are sorted
        # by start time, and the parent run, untagged, would be an "Unassigned" group in every legend)
        "orderByKey": f"metrics.`{metric}`",
        "orderByAsc": lower_is_better(metric),
        "runsHiddenMode": "CUSTOM",  # with nothing in runsHidden: every run and group shown
        "runsHidden": [],
        "runsVisibilityMap": {},
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": GROUP_TAG}]},
        "groupsExpanded": {},
        "useGroupedValuesInCharts": True,  # one line per architecture: the mean over its seeds, with a band
        "hideEmptyCharts": True,
        "chartsSearchFilter": metric,
    }


def _trainings(client, experiment_id: str, parent_run_id: str) -> list:
    return client.search_runs(
        [experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'", max_results=5000
    )


def compared_metrics(client, experiment_id: str, parent_run_id: str, runs: list | None = None) -> list[str]:
    """The validation metrics that trainings of at least two architectures logged in this run."""
    runs = _trainings(client, experiment_id, parent_run_id) if runs is None else runs
    by_metric: dict[str, set[str]] = {}
    for run in runs:
        arch = run.data.tags.get(GROUP_TAG)
        if not arch:
            continue
        for key in run.data.metrics:
            if key.startswith(VALIDATION):
                by_metric.setdefault(key, set()).add(arch)
    shared = [key for key, archs in by_metric.items() if len(archs) >= 2]
    return sorted(shared, key=lambda k: (k not in _FIRST, _FIRST.index(k) if k in _FIRST else 0, k.endswith("loss"), k))


def url(experiment_id: str, key: str) -> str:
    """The link that opens the shared view ``key`` in chart view (on `bottlenecks ui` for a local store)."""
    base = links._mlflow_server() or links.local_ui()
    view = links.MODEL_TRAINING_VIEW.lstrip("?")  # else the page opens in the GenAI view
    return f"{base}/#/experiments/{experiment_id}/runs?viewStateShareKey={key}&compareRunsMode=CHART&{view}"


def figure_name(metric: str) -> str:
    """``valid/bleu`` -> ``compare_valid_bleu.png`` (under the parent run's ``figures/``)."""
    return "compare_" + metric.replace("/", "_") + ".png"


def curves_by_architecture(client, runs: list, metric: str) -> dict[str, list[list[tuple[int, float]]]]:
    """Architecture -> one curve of ``metric`` (sorted (step, value) points) per training run."""
    found: dict[str, list[list[tuple[int, float]]]] = {}
    for run in runs:
        arch = run.data.tags.get(GROUP_TAG)
        if arch and metric in run.data.metrics:
            points = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, metric))
            found.setdefault(arch, []).append(points)
    return found


def draw(curves: dict[str, list[list[tuple[int, float]]]], metric: str, path: str) -> None:
    """One line per architecture: the mean over its seeds at each step all of them logged, the seeds'
    range shaded; one colour per architecture (components/colours.py)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # not pyplot: no figure registry, no backend switched for an embedder

    from components.colours import colours

    palette = colours(curves)
    fig = Figure(figsize=(8, 4))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for arch in sorted(curves):
        runs = [dict(points) for points in curves[arch]]
        steps = sorted(set.intersection(*(set(r) for r in runs)))
        if not steps:
            continue
        values = [[r[s] for r in runs] for s in steps]
        mean = [sum(v) / len(v) for v in values]
        ax.plot(steps, mean, color=palette[arch], label=f"{arch} ({len(runs)} seed{'s' if len(runs) > 1 else ''})")
        if len(runs) > 1:
            ax.fill_between(steps, [min(v) for v in values], [max(v) for v in values], color=palette[arch], alpha=0.15)
    ax.set_xlabel("step")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by architecture: mean over seeds, their range shaded")
    if ax.lines:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")


def save_views(client, experiment_id: str, parent_run_id: str) -> dict[str, str]:
    """Write one shared view per compared metric, and its figure on the parent run; metric -> its link."""
    import os
    import tempfile

    runs = _trainings(client, experiment_id, parent_run_id)
    found = {}
    for metric in compared_metrics(client, experiment_id, parent_run_id, runs):
        key = share_key(parent_run_id, metric)
        client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, json.dumps(view_state(parent_run_id, metric)))
        found[metric] = url(experiment_id, key)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, figure_name(metric))
            draw(curves_by_architecture(client, runs, metric), metric, path)
            client.log_artifact(parent_run_id, path, "figures")
    prune_views(client, experiment_id)
    return found


def prune_views(client, experiment_id: str, keep: int = KEEP_RUNS) -> list[str]:
    """Delete the shared views of all but the newest ``keep`` pipeline runs of the experiment: MLflow
    sends every experiment tag with the experiment, so a nightly schedule's views would otherwise grow
    without end (about 2 KB a metric a night). The tags deleted."""
    views: dict[str, list[str]] = {}
    for tag, value in client.get_experiment(experiment_id).tags.items():
        if tag.startswith(SHARED_VIEW_TAG + "bottlenecks-"):
            found = _PARENT.search(value)
            if found:
                views.setdefault(found.group(1), []).append(tag)
    if len(views) <= keep:
        return []
    started = {
        r.info.run_id: r.info.start_time
        for ids in _chunks(sorted(views), 100)
        for r in client.search_runs(
            [experiment_id], "attributes.run_id IN ({})".format(", ".join(f"'{i}'" for i in ids)), max_results=100
        )
    }
    newest = sorted(views, key=lambda run_id: started.get(run_id, 0), reverse=True)[:keep]  # deleted runs: oldest
    dropped = [tag for run_id, tags in views.items() if run_id not in newest for tag in tags]
    for tag in dropped:
        client.delete_experiment_tag(experiment_id, tag)
    return dropped


def _chunks(items: list[str], n: int):
    for i in range(0, len(items), n):
        yield items[i : i + n]


def note_section(views: dict[str, str]) -> str:
    """The parent run's description's part that names the comparisons (Markdown), '' for none."""
    if not views:
        return ""
    items = "\n".join(
        f"- [`{metric}` by architecture]({link}) (the same as a figure: "
        f"[{figure_name(metric)}](artifacts/figures/{figure_name(metric)}))"
        for metric, link in views.items()
    )
    return (
        "\n## The trainings side by side\n\n"
        "Each link opens this run's trainings in chart view, one line per architecture (the mean over seeds):\n\n"
        f"{items}\n"
    )
