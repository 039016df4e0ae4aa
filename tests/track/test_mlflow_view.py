"""What users see in MLflow, read back through the client: the experiment kind that opens the runs
table, the parent run's description (the scorecard) and figures, learning curves and dataset inputs
on training runs."""

import json
import os
import textwrap

import mlflow
import pytest

from components.context import Context
from components.train.lineage import describe
from flows.execute.runner import run
from flows.plan.build import build
from flows.track import compare
from flows.track.links import mlflow_run
from flows.track.runs import EXPERIMENT_KIND, experiment_links

pytestmark = pytest.mark.slow
C = "tests.support.engine_components"

PIPELINE = """\
name: mlflow-view
steps:
  recall:
    uses: data.delayed_recall
    with: {lag: 2, vocab: 4, n_train: 128, n_valid: 32, n_test: 32}
  toy:
    uses: data.synthetic_translation
    with: {vocab: 6, min_len: 2, max_len: 8, n_train: 200, n_valid: 20, n_test: 30}
  rnn:
    uses: train.model
    with: {data: "${recall.dataset}", model: rnn-tiny, steps: 10, batch_size: 32}
  luong:
    uses: train.model
    with: {data: "${toy.dataset}", model: luong-tiny, steps: 5, max_tokens: 300}
  decay:
    uses: probe.gradient_decay
    with: {model: "${rnn.checkpoint}", length: 12, batch: 4}
  card:
    uses: report.scorecard
    with:
      measurements: {rnn: "${rnn.summary}"}
      run_ids: {rnn: "${rnn.run_id}"}
      plots: {gradient_decay: "${decay.plot}"}
      expect:
        - {id: 1, claim: the tiny RNN trains without diverging, check: finite, value: "rnn.test_loss", exact: true}
        - {id: 2, claim: it beats a perfect score, check: above, value: "rnn.test_acc", than: 1.0, exact: true}
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    folder = tmp_path_factory.mktemp("view")
    # steps in threads: what MLflow shows is the subject here, not the executor (tests/README.md)
    env = {"BOTTLENECKS_HOME": str(folder / "home"), "BOTTLENECKS_EXECUTOR": "threads"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        path = folder / "p.yaml"
        path.write_text(PIPELINE)
        out = run(build(path))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
    assert out.ok, out.errors
    out.home, out.path = str(folder / "home"), path
    return out


def test_the_experiment_opens_on_training_runs(result):
    exp = mlflow.MlflowClient().get_experiment_by_name("mlflow-view")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development" == EXPERIMENT_KIND[1]


def test_the_parent_run_description_is_the_scorecards_lead_table(result):
    """Short and narrow beside the run page's "About this run" column: the headline, a row per claim,
    and the full scorecard one link away, on this run's artifact page."""
    note = mlflow.MlflowClient().get_run(result.parent_run_id).data.tags["mlflow.note.content"]
    first = note.splitlines()[0]  # MLflow shows a collapsed description's first lines: the answer goes there
    assert first.startswith("**1 of 2 claims hold") and first.endswith(": ✓ holds 1 · ✗ fails 2."), first
    assert "| claim | verdict | margin | interval | seeds |" in note
    rows = [line for line in note.splitlines() if line.startswith(("| 1 ", "| 2 "))]
    assert rows[0].startswith("| 1 | ✓ holds |") and rows[1].startswith("| 2 | ✗ fails |"), rows
    assert all(line.endswith("| exact | 1 |") for line in rows), rows  # exact claims: no interval of [0, 0]
    assert "## Claims" not in note and "the tiny RNN trains" not in note  # the sentences are one link away
    exp = mlflow.MlflowClient().get_run(result.parent_run_id).info.experiment_id
    page = mlflow_run(exp, result.parent_run_id).partition("?")[0] + "/artifacts/scorecard.html"
    assert f"[scorecard.html]({page}?workflowType=machine_learning)" in note


def test_the_parent_run_shows_the_figures_and_training_runs_their_learning_curves(result, tmp_path):
    client = mlflow.MlflowClient()
    parent = result.parent_run_id
    figures = [a.path for a in client.list_artifacts(parent, "figures")]
    # the report's figure, and the comparisons of the trainings (flows/track/compare.py)
    assert figures == ["figures/compare_valid_acc.png", "figures/compare_valid_loss.png", "figures/gradient_decay.png"]
    with open(client.download_artifacts(parent, figures[-1], str(tmp_path)), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"  # an image the artifact pane shows
    # the same key over training for both architectures (an RNN classifier, an attention translator)
    for step, steps in (("rnn", 10), ("luong", 5)):
        history = client.get_metric_history(result.outputs[step]["run_id"], "valid/loss")
        assert len(history) >= 5 and history[-1].step == steps, (step, [(m.step, m.value) for m in history])
        assert history[-1].value == pytest.approx(result.outputs[step]["summary"]["valid_loss"])
    # the parent's metrics are the scorecard's verdicts and their evidence, no per-architecture bars
    assert set(client.get_run(parent).data.metrics) >= {"claim/1", "claim/2", "claims/total"}
    assert all(k.startswith(("claim/", "claims/")) for k in client.get_run(parent).data.metrics)


def test_the_scorecard_links_its_runs_to_their_pages(result):
    card = json.loads(open(result.outputs["card"]["scorecard"]).read())
    rnn = result.outputs["rnn"]["run_id"]
    exp = mlflow.MlflowClient().get_experiment_by_name("mlflow-view").experiment_id
    assert card["links"] == {rnn: mlflow_run(exp, rnn)}
    assert card["links"][rnn].endswith(f"/#/experiments/{exp}/runs/{rnn}?workflowType=machine_learning")


def test_training_runs_record_their_dataset_as_an_input(result):
    client = mlflow.MlflowClient()
    for step, data_step, name, sizes in (
        ("rnn", "recall", "delayed_recall", {"train": 128, "valid": 32, "test": 32}),
        ("luong", "toy", "synthetic_translation src-tgt", {"train": 200, "valid": 20, "test": 30}),
    ):
        inputs = client.get_run(result.outputs[step]["run_id"]).inputs.dataset_inputs
        assert len(inputs) == 1
        dataset = inputs[0].dataset
        folder = result.outputs[data_step]["dataset"]
        assert dataset.name == name
        assert dataset.digest == describe(folder, json.loads(open(f"{folder}/meta.json").read()))["digest"]
        assert json.loads(dataset.source)["uri"].endswith(folder.split("/")[-1])
        profile = json.loads(dataset.profile)
        assert profile == {"num_rows": sum(sizes.values()), **{f"{k}_rows": v for k, v in sizes.items()}}
        assert {(t.key, t.value) for t in inputs[0].tags} == {("mlflow.data.context", "training")}


def test_the_parent_run_row_shows_the_datasets_and_a_cached_rerun_keeps_them(result, tmp_path):
    client = mlflow.MlflowClient()
    names = {d.dataset.name for d in client.get_run(result.parent_run_id).inputs.dataset_inputs}
    assert names == {"delayed_recall", "synthetic_translation src-tgt"}
    os.environ["BOTTLENECKS_HOME"] = result.home
    try:
        again = run(build(result.path))
    finally:
        os.environ.pop("BOTTLENECKS_HOME")
    assert again.status["rnn"] == "cached"
    cached = client.get_run(again.outputs["rnn"]["run_id"]).inputs.dataset_inputs
    assert [d.dataset.digest for d in cached] == [
        d.dataset.digest for d in client.get_run(result.outputs["rnn"]["run_id"]).inputs.dataset_inputs
    ]
    # and opens on the same convergence line and curves (the figure served from the run it reused)
    origin = client.get_run(result.outputs["rnn"]["run_id"]).data.tags["mlflow.note.content"]
    assert client.get_run(again.outputs["rnn"]["run_id"]).data.tags["mlflow.note.content"] == origin
    assert f"run_uuid={result.outputs['rnn']['run_id']})" in origin


def test_models_that_take_one_tensor_carry_a_signature(result):
    rnn = mlflow.models.get_model_info(f"runs:/{result.outputs['rnn']['run_id']}/model")
    inputs, outputs = rnn.signature.inputs.to_dict(), rnn.signature.outputs.to_dict()
    assert inputs[0]["type"] == "tensor" and inputs[0]["tensor-spec"]["shape"][0] == -1
    assert outputs[0]["type"] == "tensor"
    luong = mlflow.models.get_model_info(f"runs:/{result.outputs['luong']['run_id']}/model")
    assert luong.signature is None  # source, lengths and target: not what the flavour passes


def test_ui_links_open_each_experiment_on_its_runs_table(result):
    exp = mlflow.MlflowClient().get_experiment_by_name("mlflow-view")
    assert (
        f"mlflow-view: http://127.0.0.1:5000/#/experiments/{exp.experiment_id}?workflowType=machine_learning"
        in experiment_links("http://127.0.0.1:5000")
    )


def test_a_run_without_a_report_describes_itself(tmp_path, home, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: mlflow-view-plain
        description: Two numbers steps.
        steps:
          a: {{uses: "{C}:numbers", matrix: {{offset: [0, 1]}}, with: {{offset: "${{matrix.offset}}"}}}}
          b: {{uses: "{C}:fail"}}
        """)
    )
    out = run(build(path))
    note = mlflow.MlflowClient().get_run(out.parent_run_id).data.tags["mlflow.note.content"]
    assert note.startswith("# mlflow-view-plain\n\n**some steps failed**: 2 done, 1 failed of 3 step runs in ")
    assert "- profile: `-`" in note and "Two numbers steps." in note
    assert "## Failed\n\n- **b**: RuntimeError: boom" in note


def test_the_digest_follows_the_data(tmp_path):
    ctx = Context(work_dir=tmp_path / "w")
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "meta.json").write_text('{"kind": "sequence", "task": "t", "counts": {"train": 3}}')
    (folder / "train.pt").write_bytes(b"abc")
    first = describe(folder, {"task": "t", "counts": {"train": 3}})
    ctx.log_dataset(**first)
    assert ctx.datasets == [
        {"name": "t", "source": str(folder), "digest": first["digest"], "sizes": {"train": 3}, "context": "training"}
    ]
    (folder / "train.pt").write_bytes(b"abd")
    assert describe(folder, {"task": "t"})["digest"] != first["digest"]


def test_one_link_compares_the_trainings_by_architecture(result):
    """The run's comparison link opens MLflow's runs page in chart view on a shared view: this run's
    trainings that logged the metric, grouped by architecture, every run shown, the charts filtered
    to the metric (flows/track/compare.py); the parent's description names it."""
    from flows.track import compare

    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name("mlflow-view")
    assert list(result.comparisons)[:2] == ["valid/acc", "valid/loss"]  # the headline metric first, loss after
    link = result.comparisons["valid/acc"]
    key = compare.share_key(result.parent_run_id, "valid/acc")
    assert link.endswith(
        f"/#/experiments/{exp.experiment_id}/runs?viewStateShareKey={key}&compareRunsMode=CHART"
        "&workflowType=machine_learning"
    )
    state = json.loads(exp.tags[f"mlflow.sharedViewState.{key}"])
    assert state["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "architecture"}]
    assert state["runsHiddenMode"] == "CUSTOM" and state["runsHidden"] == []  # not MLflow's first ten
    assert state["chartsSearchFilter"] == "valid/acc"
    # sorted by the metric, best first: MLflow then adds no parent run (an "Unassigned" group)
    assert (state["orderByKey"], state["orderByAsc"]) == ("metrics.`valid/acc`", False)
    loss = json.loads(exp.tags[f"mlflow.sharedViewState.{compare.share_key(result.parent_run_id, 'valid/loss')}"])
    assert (loss["orderByKey"], loss["orderByAsc"]) == ("metrics.`valid/loss`", True)
    shown = client.search_runs([exp.experiment_id], filter_string=state["searchFilter"])
    assert sorted(r.data.tags["step"] for r in shown) == ["luong", "rnn"]  # the trainings, not the probe or report
    note = client.get_run(result.parent_run_id).data.tags["mlflow.note.content"]
    assert f"- [`valid/acc` by architecture]({link}) (the same as a figure: [compare_valid_acc.png](" in note
    page = mlflow_run(exp.experiment_id, result.parent_run_id).partition("?")[0]
    assert f"]({page}/artifacts/figures/compare_valid_acc.png?workflowType=machine_learning))" in note
    figures = {a.path for a in client.list_artifacts(result.parent_run_id, "figures")}
    assert {"figures/compare_valid_acc.png", "figures/compare_valid_loss.png"} <= figures


def test_the_comparison_figure_draws_each_architecture_once_in_its_colour(tmp_path):
    """Mean over seeds at the steps every seed logged, the seeds' range shaded; the legend names each
    architecture drawn with its seed count, in components/colours.py's colour."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from components.colours import colours
    from flows.track import compare

    curves = {
        "lstm-small": [[(1, 0.2), (2, 0.4)], [(1, 0.4), (2, 0.6), (3, 0.9)]],
        "gru-small": [[(1, 0.5), (2, 0.7)]],
    }
    seen = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, path, **kwargs):
        ax = fig.axes[0]
        seen["lines"] = {
            line.get_label(): (list(line.get_xdata()), list(line.get_ydata()), line.get_color()) for line in ax.lines
        }
        seen["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        return real_savefig(fig, path, **kwargs)

    plt.Figure.savefig = spy
    try:
        compare.draw(curves, "valid/acc", str(tmp_path / "c.png"))
    finally:
        plt.Figure.savefig = real_savefig
    palette = colours(curves)
    lstm = seen["lines"]["lstm-small (2 seeds)"]
    assert lstm[0] == [1, 2] and lstm[1] == pytest.approx([0.3, 0.5]) and lstm[2] == palette["lstm-small"]
    assert seen["lines"]["gru-small (1 seed)"][2] == palette["gru-small"] != palette["lstm-small"]
    assert sorted(seen["legend"]) == ["gru-small (1 seed)", "lstm-small (2 seeds)"]
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_training_run_opens_on_its_convergence_and_curves(result, tmp_path):
    """The run page's first block is the description: whether the training converged, then its curves
    (flows/track/training_note.py), not the one-point test/ charts the metrics tab lists first."""
    client = mlflow.MlflowClient()
    for step in ("rnn", "luong"):
        run = client.get_run(result.outputs[step]["run_id"])
        metrics = run.data.metrics
        note = run.data.tags["mlflow.note.content"]
        state = "converged" if metrics["vitals/converged"] == 1 else "still improving"
        assert note.startswith(f"**{state}**: valid/") and f"{metrics['vitals/late_gain']:+.3g}" in note, note
        assert "over the last 20% of steps (at most +" in note, note  # the criterion it was judged by
        assert f"(get-artifact?path=figures/curves.png&run_uuid={run.info.run_id})" in note  # on any UI's port
        assert [a.path for a in client.list_artifacts(run.info.run_id, "figures")] == ["figures/curves.png"]
        with open(client.download_artifacts(run.info.run_id, "figures/curves.png", str(tmp_path)), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    probe = client.get_run(result.outputs["decay"]["run_id"])
    assert "mlflow.note.content" not in probe.data.tags  # a probe is no training: no curves


def test_the_views_of_all_but_the_newest_runs_are_pruned(tmp_path):
    """A nightly schedule adds views every night; MLflow sends every experiment tag with the experiment."""
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'views.db'}")
    experiment = client.create_experiment("nightly", artifact_location=str(tmp_path / "artifacts"))
    parents = [client.create_run(experiment, start_time=1_000 * (i + 1)).info.run_id for i in range(4)]
    for parent in parents:
        for metric in ("valid/bleu", "valid/loss"):
            tag = compare.SHARED_VIEW_TAG + compare.share_key(parent, metric)
            client.set_experiment_tag(experiment, tag, json.dumps(compare.view_state(parent, metric)))
    client.set_experiment_tag(experiment, compare.SHARED_VIEW_TAG + "mine", "{}")  # a user's own view
    dropped = compare.prune_views(client, experiment, keep=2)
    assert sorted(dropped) == sorted(
        compare.SHARED_VIEW_TAG + compare.share_key(p, m) for p in parents[:2] for m in ("valid/bleu", "valid/loss")
    )
    left = {t for t in client.get_experiment(experiment).tags if t.startswith(compare.SHARED_VIEW_TAG)}
    assert left == {compare.SHARED_VIEW_TAG + "mine"} | {
        compare.SHARED_VIEW_TAG + compare.share_key(p, m) for p in parents[2:] for m in ("valid/bleu", "valid/loss")
    }
    assert compare.prune_views(client, experiment, keep=2) == []  # nothing more to drop
