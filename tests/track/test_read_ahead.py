"""A cached rerun reads the runs its steps copy from in one query, and each copy is whole."""

import uuid

from mlflow.entities import Metric

from flows.track.runs import Tracker


def _origins(tracker: Tracker, n: int) -> list[str]:
    ids = []
    for i in range(n):
        run_id = tracker.start(f"step-{i}", {"step": f"step-{i}"}, parent="0" * 32)
        tracker.log(run_id, params={"i": str(i)}, metrics=[Metric("train/loss", 1.0 / (i + 1), 0, 3)])
        tracker.finish(run_id, ok=True)
        ids.append(run_id)
    return ids


def test_copies_of_runs_read_ahead_need_no_read_each(home, monkeypatch):
    name = f"read-ahead-{uuid.uuid4().hex[:6]}"
    origins = _origins(Tracker(name), 3)
    tracker = Tracker(name)  # a later run of the same pipeline
    tracker.read_ahead([*origins, "", "not a run id"])
    monkeypatch.setattr(tracker.client, "get_run", None)  # copies below must not read one by one
    targets = [tracker.start(f"copy-{i}", {"cached": "true"}) for i in range(3)]
    for origin, target in zip(origins, targets):
        tracker.copy_results(origin, target)
    monkeypatch.undo()
    copied = [tracker.client.get_run(t).data for t in targets]
    assert [c.metrics for c in copied] == [{"train/loss": 1.0}, {"train/loss": 0.5}, {"train/loss": 1.0 / 3}]
    assert [c.params for c in copied] == [{"i": "0"}, {"i": "1"}, {"i": "2"}]


def test_a_run_not_read_ahead_is_read_when_copied(home):
    name = f"read-ahead-{uuid.uuid4().hex[:6]}"
    (origin,) = _origins(Tracker(name), 1)
    tracker = Tracker(f"{name}-other")  # another experiment: the search there does not find it
    tracker.read_ahead([origin])
    target = tracker.start("copy", {"cached": "true"})
    tracker.copy_results(origin, target)
    assert tracker.client.get_run(target).data.metrics == {"train/loss": 1.0}


def test_a_cached_copy_keeps_the_learning_curve_point_by_point(home):
    name = f"read-ahead-{uuid.uuid4().hex[:6]}"
    tracker = Tracker(name)
    origin = tracker.start("train", {"step": "train"}, parent="0" * 32)
    curve = [Metric("valid/loss", 2.0 - 0.3 * i, 0, 50 * i) for i in range(1, 7)]
    tracker.log(origin, metrics=[*curve, Metric("train/loss", 0.4, 0, 300), Metric("test/acc", 0.9, 0, 300)])
    tracker.finish(origin, ok=True)
    target = tracker.start("train", {"cached": "true"})
    tracker.copy_results(origin, target)
    history = tracker.client.get_metric_history(target, "valid/loss")
    assert [(m.step, round(m.value, 6)) for m in history] == [(50 * i, round(2.0 - 0.3 * i, 6)) for i in range(1, 7)]
    latest = tracker.client.get_run(target).data.metrics  # the run's value is the curve's last point
    assert latest == {"valid/loss": curve[-1].value, "train/loss": 0.4, "test/acc": 0.9}
