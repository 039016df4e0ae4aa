"""The judge's rules on nights given in memory (``history.from_values``): direction, seed noise, Holm over
a night, the one-value fallback, diverged seeds, claims' verdict order. No MLflow: each test is milliseconds."""

import math

import pytest

from flows.ops import history
from flows.ops.history import direction

ACC = "train[arch=lstm]/test/acc"


def flags(nights, thresholds=None, directions=None, keys=None):
    frame = history.from_values(nights, keys)
    return history.judge(frame, thresholds or history.Thresholds(), directions).flags


def test_better_is_known_by_the_documented_rule_and_unknown_otherwise():
    known = {
        "test/acc": "higher",
        "eval/bleu/bleu/lstm": "higher",
        "valid/loss": "lower",
        "vitals/seconds": "lower",
        "probe/timing/time_s/lstm": "lower",
        "probe/timing/memory_mb/lstm": "lower",
        "claims/holds": "higher",
        "probe/timing/time_s_ci/lstm": None,  # an interval's half-width: neither
        "probe/gradient_decay/grad_norm/lstm": None,
        "widgets": None,
    }
    assert {k: direction.rule(k) for k in known} == known
    told = history.directions(higher=["*/grad_norm/*"], lower=["widgets"])
    assert told.of("probe/gradient_decay/grad_norm/lstm") == "higher" and told.of("widgets") == "lower"


def test_a_move_within_the_seed_noise_is_no_change_even_far_past_the_relative_threshold():
    # the mean falls by a third, but three seeds this far apart cannot tell it from noise
    assert flags([{ACC: (0.2, 0.6, 0.4)}, {ACC: (0.1, 0.5, 0.2)}], history.Thresholds(0.1)) == []


def test_worse_beyond_the_noise_is_a_regression_by_direction_and_better_an_improvement():
    (worse,) = flags([{ACC: (0.91, 0.90, 0.92)}, {ACC: (0.80, 0.79, 0.81)}])
    assert (worse.kind, worse.direction) == ("regression", "worse")
    assert (worse.newest, worse.baseline) == pytest.approx((0.8, 0.91))
    assert worse.message.endswith(
        "95% interval of the change [-0.1327, -0.08733] (Welch t over 3 and 3 seeds, p = 0.00018)"
    )
    loss = "train[arch=lstm]/valid/loss"
    (better,) = flags([{loss: (2.0, 2.1, 1.9)}, {loss: (1.0, 1.1, 0.9)}], keys={loss: "valid/loss"})
    assert (better.kind, better.direction) == ("improvement", "better")


def test_unknown_direction_is_a_change_until_the_user_says_which_way_is_better():
    nights = [{"widgets": (5.0, 5.1, 4.9)}, {"widgets": (7.0, 7.1, 6.9)}]
    (moved,) = flags(nights)
    assert moved.kind == "change" and moved.direction is None and "--higher or --lower GLOB judges it" in moved.message
    (told,) = flags(nights, directions=history.directions(lower=["widg*"]))
    assert told.kind == "regression"


def test_a_night_of_many_metrics_is_one_family_under_holm():
    moved = {ACC: (0.90, 0.91, 0.92, 0.93, 0.94)}
    now = {ACC: (0.875, 0.885, 0.895, 0.905, 0.915)}  # down 0.025, each run's sd 0.016: p = 0.037 alone
    (alone,) = flags([moved, now])
    assert alone.kind == "regression" and "p = 0.037" in alone.message
    quiet = {f"m{i}/acc": (0.5, 0.6, 0.7, 0.8, 0.9) for i in range(9)}
    assert flags([moved | quiet, now | quiet]) == []  # 0.037 among 10 tests is no evidence
    (strong,) = flags([{ACC: (0.9, 0.91, 0.92)} | quiet, {ACC: (0.5, 0.51, 0.52)} | quiet])
    assert "Holm-adjusted over 10 seed tests" in strong.message


def test_seeds_on_one_side_only_use_the_prediction_interval_and_identical_seeds_have_no_noise():
    (single,) = flags([{ACC: (0.90, 0.91, 0.92)}, {ACC: (0.5,)}])
    assert single.kind == "regression" and "prediction interval over 1 and 3 seeds" in single.message
    (exact,) = flags([{ACC: (1.0, 1.0, 1.0)}, {ACC: (0.99, 0.99, 0.99)}])
    assert exact.kind == "regression" and "every seed equal within each run: no noise to allow for" in exact.message
    assert flags([{ACC: (1.0, 1.0, 1.0)}, {ACC: (1.0, 1.0, 1.0)}]) == []


def test_more_diverged_seeds_are_worse_whatever_the_metric():
    (flag,) = flags([{"widgets": (0.9, 0.91, 0.92)}, {"widgets": (0.9, math.nan, 0.92)}])
    assert flag.kind == "regression" and "1 of 3 seeds diverged (before: 0 of 3)" in flag.message


def test_one_value_a_run_uses_the_relative_threshold_and_a_zero_median_the_absolute_change():
    nights = [{"bleu": (v,), "errors": (0.0,)} for v in (20.0, 20.4, 19.7, 20.2)] + [
        {"bleu": (14.0,), "errors": (3.0,)}
    ]
    frame = history.from_values(nights)
    judged = history.judge(frame, history.Thresholds(0.2))
    found = {f.metric: f for f in judged.flags}
    assert found["bleu"].kind == "regression" and found["bleu"].baseline == pytest.approx(20.1)
    assert "30% below the median 20.1 of the 4 run(s) before" in found["bleu"].message
    assert "judged by the relative threshold 20%" in found["bleu"].message
    assert found["errors"].kind == "regression" and "%" not in found["errors"].message
    assert "up 3 from the median 0 of the 4 run(s) before (the absolute change" in found["errors"].message
    assert any("2 metric(s) have one value a run" in n for n in judged.notes)
    (better,) = flags([{"bleu": (20.0,)}, {"bleu": (20.0,)}, {"bleu": (30.0,)}])
    assert better.kind == "improvement"
    assert flags(nights, history.parse_thresholds(["0.2", "bleu=0.5", "errors=0"]))[0].metric == "errors"


def test_claims_move_in_the_verdict_order_and_their_statistics_are_not_judged():
    (up,) = flags([{"claim/b2": (0.0,)}, {"claim/b2": (1.0,)}])
    assert (up.kind, up.direction) == ("improvement", "better")
    (unsure,) = flags([{"claim/b2": (0.0,)}, {"claim/b2": (0.5,)}])
    assert (unsure.kind, unsure.direction) == ("change", "better")
    (odd,) = flags([{"claim/b2": (1.0,)}, {"claim/b2": (-1.0,)}])
    assert odd.kind == "change" and odd.message.startswith("claim/b2: holds -> device-dependent")
    stats_only = [{"claim/b2": (1.0,), "claim/b2/p": (0.001 * (1 + i),), "claim/b2/lo": (0.1 * i,)} for i in range(4)]
    assert flags(stats_only + [{"claim/b2": (1.0,), "claim/b2/p": (0.02,), "claim/b2/lo": (0.9,)}]) == []
