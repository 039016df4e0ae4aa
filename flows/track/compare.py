"""One link to the comparison of a pipeline run's trainings, per validation metric.

The link opens MLflow's runs page of the experiment in chart view with: the step runs of this
pipeline run that logged the metric (a search filter on the parent run and the metric), sorted by it
(best first), grouped by architecture (a tag of each training, below: one line per architecture, the
mean over seeds with its band; the legend names those lines only), every run shown (not MLflow's first
ten), and the
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
MLflow cannot be given a group's colour: it hashes the group's id (``tag.<tag name>.<value>``) into
its palette of 29, and a colour picked in its UI stays in that browser. What a run can choose is the
tag's name. So the views group by the first name of ``GROUP_TAGS`` under which MLflow gives the
architectures drawn together in each view colours at least ``MIN_COLOUR_DISTANCE`` apart
(``group_tag``, MLflow's hash reproduced in ``mlflow_colour``); where that name is not
``architecture``, the run writes it on each training beside ``architecture``, with the same value.
The choice depends only on the architectures, so every run of one pipeline groups by the same name
and each architecture keeps its colour from night to night and in every chart of a view.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

from flows.track import links

SHARED_VIEW_TAG = "mlflow.sharedViewState."  # MLflow 3's experiment-tag prefix of a shared view
GROUP_TAG = "architecture"  # each step run's tag of the model it trained (flows/execute/_step_runs.py)
# names a view may group by instead, in order of preference: lowercase letters only, as MLflow's
# parser of a group's id (``tag.<name>.<value>``, matched by ``[a-z]+``) reads them
GROUP_TAGS = (
    GROUP_TAG, "family", "arch", "model", "network", "net", "design", "kind", "variant", "class", "type",
    "architectures", "models", "families", "nets", "networks", "designs", "kinds", "variants", "classes",
    "modelfamily", "modelkind", "modelclass", "modeltype", "netkind", "nettype", "archname", "modelname",
    "netname", "archtype", "archkind", "archfamily", "learner", "learners", "system", "systems", "machine",
    "machines", "layout", "layouts",
)  # fmt: skip
# MLflow 3.17's RUNS_COLOR_PALETTE, in its order (a test reads it from the installed UI)
MLFLOW_PALETTE = (
    "#a6630c", "#c83243", "#b45091", "#8a63bf", "#434a93", "#137dae", "#04867d", "#308613", "#facb66",
    "#1f272d", "#445461", "#5f7281", "#8396a5", "#93320b", "#be501e", "#de7921", "#f2be88", "#115026",
    "#277c43", "#3ba65e", "#8ddda8", "#9e102c", "#c82d4c", "#e65b77", "#f792a6", "#0e538b", "#2272b4",
    "#4299e0", "#8acaff",
)  # fmt: skip
# CIE76 distance in CIELAB below which two of its colours read as one on a chart line: the palette's
# shades of one hue sit 6-19 apart (coral and red 600 6.4, grey 600 and 500 12.2, yellow 700 and 600
# 14.5, teal-green 700 and 600 17.5); at 20 and above they differ in hue or clearly in lightness
MIN_COLOUR_DISTANCE = 20.0
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


def view_state(parent_run_id: str, metric: str, tag: str = GROUP_TAG) -> dict:
    """The runs page's state as MLflow's shared view stores it: its search facets and its UI state,
    grouped by the trainings' tag ``tag``."""
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
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": tag}]},
        "groupsExpanded": {},
        "useGroupedValuesInCharts": True,  # one line per architecture: the mean over its seeds, with a band
        "hideEmptyCharts": True,
        "chartsSearchFilter": metric,
    }


def _trainings(client, experiment_id: str, parent_run_id: str) -> list:
    return client.search_runs(
        [experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'", max_results=5000
    )


def _architectures(runs: list) -> dict[str, set[str]]:
    """Validation metric -> the architectures whose trainings logged it."""
    by_metric: dict[str, set[str]] = {}
    for run in runs:
        arch = run.data.tags.get(GROUP_TAG)
        if not arch:
            continue
        for key in run.data.metrics:
            if key.startswith(VALIDATION):
                by_metric.setdefault(key, set()).add(arch)
    return by_metric


def compared_metrics(client, experiment_id: str, parent_run_id: str, runs: list | None = None) -> list[str]:
    """The validation metrics that trainings of at least two architectures logged in this run."""
    runs = _trainings(client, experiment_id, parent_run_id) if runs is None else runs
    shared = [key for key, archs in _architectures(runs).items() if len(archs) >= 2]
    return sorted(shared, key=lambda k: (k not in _FIRST, _FIRST.index(k) if k in _FIRST else 0, k.endswith("loss"), k))


def mlflow_colour(group_id: str) -> str:
    """The colour MLflow's charts give a group (or a run) of this id: its ``getStableColorForRun``, a
    Fletcher-style checksum of the id's UTF-16 code units (JavaScript's ``charCodeAt``) into
    ``MLFLOW_PALETTE``."""
    units = group_id.encode("utf-16-le")
    a = b = 0
    for i in range(0, len(units), 2):
        a = (a + (units[i] | units[i + 1] << 8)) % 255
        b = (b + a) % 255
    return MLFLOW_PALETTE[(a | (b << 8)) % len(MLFLOW_PALETTE)]


def _lab(colour: str) -> tuple[float, float, float]:
    """sRGB ``#rrggbb`` -> CIELAB (D65)."""
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def colour_distance(one: str, other: str) -> float:
    """CIE76: the distance of two colours in CIELAB."""
    return math.dist(_lab(one), _lab(other))


def closest_colours(tag: str, architectures) -> float:
    """The smallest distance between the colours MLflow gives ``architectures`` grouped by ``tag``
    (infinite for fewer than two)."""
    colours = [mlflow_colour(f"tag.{tag}.{arch}") for arch in sorted(architectures)]
    return min((colour_distance(a, b) for i, a in enumerate(colours) for b in colours[i + 1 :]), default=math.inf)


def group_tag(views, taken: dict[str, set[str]] | None = None) -> str:
    """The tag name the views group by: the first of ``GROUP_TAGS`` under which, in every view (a set
    of architectures drawn together), MLflow's colours are at least ``MIN_COLOUR_DISTANCE`` apart;
    where none is, the one whose closest pair is farthest apart (the first such). ``taken``: names
    the trainings already carry for something else (name -> runs' values), never chosen."""
    views = [set(v) for v in views]
    usable = [t for t in GROUP_TAGS if t == GROUP_TAG or not (taken or {}).get(t)]

    def worst(tag: str) -> float:
        return min((closest_colours(tag, v) for v in views), default=math.inf)

    return next((t for t in usable if worst(t) >= MIN_COLOUR_DISTANCE), None) or max(usable, key=worst)


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
    metrics = compared_metrics(client, experiment_id, parent_run_id, runs)
    drawn = _architectures(runs)
    tag = write_group_tag(client, runs, [drawn[m] for m in metrics])
    found = {}
    for metric in metrics:
        key = share_key(parent_run_id, metric)
        state = view_state(parent_run_id, metric, tag)
        client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, json.dumps(state))
        found[metric] = url(experiment_id, key)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, figure_name(metric))
            draw(curves_by_architecture(client, runs, metric), metric, path)
            client.log_artifact(parent_run_id, path, "figures")
    prune_views(client, experiment_id)
    return found


def write_group_tag(client, runs: list, views: list[set[str]]) -> str:
    """Choose the views' tag name (``group_tag``) and, where it is not ``architecture``, write it on
    each training with its architecture as the value. A name a training already carries with another
    value (a user's own tag) is never chosen. The name."""
    taken: dict[str, set[str]] = {}
    for run in runs:
        arch = run.data.tags.get(GROUP_TAG)
        for name in GROUP_TAGS[1:]:
            if name in run.data.tags and run.data.tags[name] != arch:
                taken.setdefault(name, set()).add(run.data.tags[name])
    tag = group_tag(views, taken)
    if tag != GROUP_TAG:
        for run in runs:
            arch = run.data.tags.get(GROUP_TAG)
            if arch and run.data.tags.get(tag) != arch:
                client.set_tag(run.info.run_id, tag, arch)
    return tag


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
