"""The fair-verdict rule on both sides of its margin, and the log-log fit."""

import math

import pytest

from components.report.claims import seeds_hint
from components.report.rules import beats, decide, every, loglog_slope


def seeds(*values):
    return {str(i): v for i, v in enumerate(values)}


def test_every_seed_of_a_above_every_seed_of_b_holds_even_with_a_wide_spread():
    out = beats(seeds(0.99, 0.60, 0.98), seeds(0.13, 0.26, 0.13))
    assert out.holds and "every seed of A beats every seed of B" in out.reason


def test_overlapping_seeds_hold_only_when_the_gap_exceeds_three_seed_ranges():
    # A range 0.4, B range 0.4: overlapping; paired per seed A wins each time.
    a, b = seeds(1.0, 1.4, 1.2), seeds(0.9, 1.3, 1.1)  # gap 0.1 < 3 x 0.4
    out = beats(a, b)
    assert out.verdict == "inconclusive" and "seeds overlap" in out.reason


def test_separation_decides_at_the_default_factor_on_both_sides_of_the_margin():
    b = seeds(0.0, 0.1, 0.05)
    assert beats(seeds(0.11, 0.21, 0.16), b).holds is True  # min A 0.11 > max B 0.1
    out = beats(seeds(0.09, 0.19, 0.14), b)  # min A 0.09 < max B 0.1
    assert out.holds is False and "seeds overlap" in out.reason


def test_the_gap_rule_decides_overlapping_seeds_below_factor_two():
    # Overlapping seeds have a gap of at most 2 seed ranges, so only a factor < 2 can pass them.
    a, b = seeds(1.0, 1.4, 1.2), seeds(0.9, 1.3, 1.1)  # gap 0.1, range 0.4
    assert beats(a, b, spread_factor=0.2).holds  # 0.1 > 0.08
    assert not beats(a, b, spread_factor=0.3).holds  # 0.1 < 0.12


def test_effect_missing_in_one_seed_is_inconclusive_whatever_the_mean():
    out = beats(seeds(0.99, 0.99, 0.20), seeds(0.13, 0.13, 0.30))
    assert out.verdict == "inconclusive" and "seed 2" in out.reason
    assert beats(seeds(0.1, 0.2, 0.1), seeds(0.9, 0.8, 0.9)).verdict == "fails"  # B ahead in every seed


def test_lower_is_better_and_margin():
    assert beats(seeds(1.0, 1.1), seeds(5.0, 5.2), higher=False).holds
    out = beats({"": 0.62}, {"": 0.60}, margin=0.05)
    assert not out.holds and "by more than 0.05" in out.reason


def test_diverged_runs_count_as_the_worst_outcome():
    assert beats(seeds(1.0, 1.0), seeds(math.nan, 0.5)).holds
    assert not beats(seeds(math.nan, 1.0), seeds(0.1, 0.1)).holds
    out = beats(seeds(0.5, 0.5), seeds(math.inf, math.nan), higher=False)
    assert out.holds and "B diverged in every seed" in out.reason


def test_seeds_pair_by_label_and_a_single_value_broadcasts():
    out = beats(seeds(0.9, 0.9, 0.9), {"0": 0.1, "1": 0.1})
    assert out.holds and "seeds 2 measured on one side only" in out.reason
    assert beats(seeds(0.9, 0.8), {"": 0.5}).holds
    assert not beats({"a": 1.0}, {"b": 0.0}).holds


def test_every_names_the_seeds_that_fail():
    out = every(seeds(0.5, 1.2, math.nan), lambda v: v < 1, "below 1")
    assert not out.holds and "seed 1: 1.2" in out.reason and "seed 2: nan" in out.reason


def test_loglog_slope_recovers_the_exponent_and_refuses_non_positive():
    xs = [64, 128, 256, 512]
    assert loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert loglog_slope(xs, [5 * x for x in xs]) == pytest.approx(1.0)
    assert math.isnan(loglog_slope(xs, [1, 0, 2, 3]))


# -- holds, fails, inconclusive ---------------------------------------------------------------------------


def test_a_claim_true_in_two_of_three_seeds_is_inconclusive_not_fails():
    out = every(seeds(0.99, 0.98, 0.20), lambda v: v >= 0.95, "at least 0.95", margin=lambda v: v - 0.95)
    assert out.verdict == "inconclusive" and "seed 2: 0.2" in out.reason
    assert out.evidence["why"].startswith("the seeds disagree (1 of 3 against: seed 2)")


def test_refuted_in_every_seed_fails_and_its_reason_shows_the_numbers():
    out = every(seeds(0.40, 0.50, 0.45), lambda v: v >= 0.95, "at least 0.95", margin=lambda v: v - 0.95)
    assert out.verdict == "fails" and "seed 0: 0.4, seed 1: 0.5, seed 2: 0.45" in out.reason
    assert out.evidence["mean"] == pytest.approx(-0.5) and out.evidence["seeds"] == 3


def test_every_seed_passing_inside_the_spread_is_inconclusive_with_the_seeds_it_needs():
    # margins 0.05, 0.35, 0.02: mean 0.14, sd 0.18 -> 2 SE = 0.21 > 0.14
    d = decide(*[dict(zip("012", v)) for v in ((True,) * 3, (0.05, 0.35, 0.02))])
    assert d.verdict == "inconclusive" and d.why == "every seed passes, but the effect is inside its uncertainty"
    assert d.seeds_needed == math.ceil((2 * d.sd) ** 2 / d.mean**2) == 7


def test_the_measurements_own_uncertainty_decides_a_single_value_and_bounds_the_seed_hint():
    # one measurement, 1.0 past its threshold, but its own 95% interval is +-1.5
    assert decide({"": True}, {"": 1.0}, {"": 1.5}).verdict == "inconclusive"
    assert decide({"": True}, {"": 1.0}, {"": 0.5}).verdict == "holds"
    assert decide({"": False}, {"": -1.0}, {"": 0.5}).verdict == "fails"
    # every seed against the claim but each inside its own interval: not evidence enough to fail
    d = decide({"0": False, "1": False}, {"0": -2.4, "1": -2.1}, {"0": 10.7, "1": 10.7})
    assert d.verdict == "inconclusive" and d.seeds_needed is None  # more seeds cannot shrink a test set's noise


def test_the_seeds_hint_gives_the_count_and_the_command_that_adds_them():
    from components.report.checks import CheckResult

    r = CheckResult("inconclusive", "", "", evidence={"seeds_needed": 7, "seeds": 3})
    cmd = "bottlenecks run pipelines/four_bottlenecks.yaml --set seeds={seeds}"
    hint = seeds_hint([r], "seed", cmd)
    assert hint == (
        "the spread over 3 seeds asks for about 7 seeds: "
        "`bottlenecks run pipelines/four_bottlenecks.yaml --set seeds=[0,1,2,3,4,5,6]` "
        "(the seeds already run come from the cache)"
    )
    assert "rerun with --set seeds=[0,1,2,3]" in seeds_hint(
        [CheckResult("inconclusive", "", "", evidence={"seeds_needed": 4, "seeds": 3})], "seed"
    )
