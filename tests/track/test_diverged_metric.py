"""A diverged value (inf) is stored as NaN with the run tagged where it diverged, never as MLflow's
1.8e308, a number a chart would plot as a huge loss."""

import math
import uuid

from flows.track.runs import MlflowContext, Tracker


def test_an_infinite_loss_is_recorded_as_diverged_not_as_the_largest_float(tmp_path):
    tracker = Tracker(f"diverged-{uuid.uuid4().hex[:8]}")
    run_id = tracker.start("train", tags={})
    ctx = MlflowContext(tracker=tracker, run_id=run_id, work_dir=tmp_path / "step")
    ctx.log_metric("train/loss", 2.5, step=1)
    ctx.log_metric("train/loss", math.inf, step=2)
    ctx.log_metric("train/loss", -math.inf, step=3)
    ctx.flush()
    points = sorted((m.step, m.value) for m in tracker.client.get_metric_history(run_id, "train/loss"))
    assert points[0] == (1, 2.5)
    assert [s for s, _ in points[1:]] == [2, 3] and all(math.isnan(v) for _, v in points[1:])
    tags = tracker.client.get_run(run_id).data.tags
    assert tags["bottlenecks.diverged"] == "train/loss = inf at step 2"  # the first non-finite value
    assert ctx.metrics["train/loss"][1] == (2, math.inf)  # the component's own record keeps what it logged
