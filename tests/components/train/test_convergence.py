"""A run's convergence record: the headline metric's gain over the last fifth of its steps."""

import pytest

from components.train.convergence import late_change, of_checkpoint, window_start


def curve(*points):
    return [(s, {f"valid/{k}": v for k, v in m.items()}) for s, m in points]


def test_a_bleu_curve_still_rising_is_not_converged_and_says_by_how_much():
    c = curve(
        (500, {"bleu": 40.0, "loss": 1.0}), (800, {"bleu": 55.0, "loss": 0.8}), (1000, {"bleu": 61.5, "loss": 0.7})
    )
    r = late_change(c, 1000)
    assert r == {
        "late_metric": "bleu",
        "late_gain": 6.5,
        "late_loss_change": pytest.approx(-0.1),
        "late_from_step": 800,
        "converged": False,
    }


def test_a_flat_end_is_converged_and_a_fall_is_not_still_improving():
    flat = curve((800, {"bleu": 90.0}), (1000, {"bleu": 91.9}))
    assert late_change(flat, 1000)["converged"] is True  # 1.9 <= 2 BLEU
    fell = curve((800, {"acc": 0.9}), (1000, {"acc": 0.7}))
    assert late_change(fell, 1000)["converged"] is True and late_change(fell, 1000)["late_gain"] == pytest.approx(-0.2)


def test_accuracy_uses_its_own_tolerance_and_a_given_one_wins():
    c = curve((800, {"acc": 0.95, "loss": 0.2}), (1000, {"acc": 0.965, "loss": 0.15}))
    assert late_change(c, 1000)["converged"] is False  # 0.015 > 0.01
    assert late_change(c, 1000, tolerance=0.02)["converged"] is True


def test_a_loss_only_curve_is_judged_by_its_relative_fall():
    c = curve((800, {"loss": 1.0}), (1000, {"loss": 0.9}))
    r = late_change(c, 1000)
    assert (r["late_metric"], r["late_gain"], r["converged"]) == ("loss", pytest.approx(0.1), False)


def test_the_window_starts_at_the_last_point_at_or_before_80_percent():
    c = curve((500, {"bleu": 10.0}), (700, {"bleu": 20.0}), (900, {"bleu": 29.0}), (1000, {"bleu": 30.0}))
    assert late_change(c, 1000)["late_from_step"] == 700  # 900 is inside the window
    assert window_start(1000) == 800 and window_start(300) == 240


def test_no_point_to_compare_with_leaves_it_unknown():
    assert late_change(curve((1000, {"bleu": 50.0})), 1000)["converged"] is None
    assert late_change(curve((900, {"bleu": 40.0}), (1000, {"bleu": 50.0})), 1000)["converged"] is None


def test_a_model_file_carries_its_trainings_record():
    info = {"summary": {"converged": False, "late_gain": 4.2, "late_metric": "bleu", "steps": 10}}
    assert of_checkpoint(info) == {"converged": False, "late_gain": 4.2, "late_metric": "bleu"}
    assert of_checkpoint({"summary": {"steps": 3}}) == {}
