"""The verdict rule on known small-sample answers: Student t over seeds, paired and Welch tests,
exact quantities, diverged seeds, the seeds a decision needs, and the log-log fit."""

import math

import pytest
from scipy import stats as sps

from components import stats
from components.report.claims import seeds_hint
from components.report.rules import beats, every, judge, loglog_fit, loglog_slope


def seeds(*values):
    return {str(i): v for i, v in enumerate(values)}


# -- one sample: the t interval decides, not "every seed passes" --------------------------------------------


def test_every_seed_passing_with_t_below_its_critical_value_is_inconclusive():
    # margins 0.02, 0.03, 0.01: t = 0.02 / (0.01 / sqrt 3) = 3.46 < t(0.975, 2) = 4.30
    out = judge(seeds(0.02, 0.03, 0.01), None, "above in every seed", "not above")
    assert out.verdict == "inconclusive"
    assert "t = 3.46 below the critical 4.3" in out.reason
    assert out.evidence["p_holds"] == pytest.approx(
        sps.ttest_1samp([0.02, 0.03, 0.01], 0, alternative="greater")[1], rel=1e-4
    )


def test_the_same_effect_with_more_seeds_holds():
    out = judge(seeds(0.02, 0.03, 0.01, 0.02, 0.025, 0.015), None, "ok", "bad")
    assert out.verdict == "holds" and out.evidence["lo"] > 0


def test_every_seed_against_but_inside_the_spread_is_inconclusive_not_fails():
    out = judge(seeds(-0.02, -0.03, -0.01), None, "ok", "below the threshold")
    assert out.verdict == "inconclusive" and out.reason.startswith("below the threshold")
    # the same refutation far outside the spread fails, symmetrically
    assert judge(seeds(-0.5, -0.45, -0.55), None, "ok", "bad").verdict == "fails"


def test_holds_and_fails_are_mirror_images():
    up = judge(seeds(0.2, 0.3, 0.25), None, "ok", "bad")
    down = judge(seeds(-0.2, -0.3, -0.25), None, "ok", "bad")
    assert (up.verdict, down.verdict) == ("holds", "fails")
    assert up.evidence["p_holds"] == pytest.approx(down.evidence["p_fails"])
    assert up.evidence["lo"] == pytest.approx(-down.evidence["hi"])


def test_the_interval_is_student_t_with_n_minus_1_df():
    vals = [0.2, 0.3, 0.25]
    out = judge(seeds(*vals), None, "ok", "bad")
    half = sps.t.ppf(0.975, 2) * sps.sem(vals)
    assert out.evidence["lo"] == pytest.approx(0.25 - half, abs=1e-6)
    assert out.evidence["hi"] == pytest.approx(0.25 + half, abs=1e-6)
    assert out.evidence["df"] == 2


def test_one_value_without_its_own_uncertainty_never_holds():
    out = judge({"": 5.0}, None, "above", "not above")
    assert out.verdict == "inconclusive" and "needs at least 2 seeds" in out.reason
    assert out.evidence["seeds_needed"] == 2


def test_one_value_with_its_own_interval_is_judged_on_it():
    # own 95% half-width 1.5 -> se 1.5 / 1.96; margin 1.0 is inside it, 2.0 is beyond it
    se = {"": 1.5 / stats.Z95}
    assert judge({"": 1.0}, se, "ok", "bad").verdict == "inconclusive"
    assert judge({"": 2.0}, se, "ok", "bad").verdict == "holds"
    assert judge({"": -2.0}, se, "ok", "bad").verdict == "fails"


def test_exact_quantities_are_compared_as_they_are():
    assert judge({"": 0.0}, None, "ok", "bad", exact=True).verdict == "holds"  # a tie counts (>=)
    assert judge({"": 0.0}, None, "ok", "bad", exact=True, strict=True).verdict == "fails"
    assert judge(seeds(1.0, 1.0, -1.0), None, "ok", "bad", exact=True).verdict == "fails"  # one counterexample


def test_identical_values_are_not_exact_the_seeds_are_counted():
    # no spread and no known range: the exact sign test over the seeds, which needs 6 pointing one way
    out = judge(seeds(0.05, 0.05, 0.05), None, "ok", "bad")
    assert out.verdict == "inconclusive" and "identical in all 3 seeds" in out.reason
    assert "exact sign test" in out.reason and "decides from 6 seeds" in out.reason
    assert out.evidence["p_holds"] == pytest.approx(0.125) and out.evidence["seeds_needed"] == 6
    assert out.evidence["method"] == "sign"
    six = judge(seeds(*[0.05] * 6), None, "ok", "bad")
    assert six.verdict == "holds" and six.evidence["p_holds"] == pytest.approx(0.5**6)
    assert judge(seeds(*[-0.05] * 6), None, "ok", "bad").verdict == "fails"
    # declared exact, the same values decide at once
    assert judge(seeds(0.05, 0.05, 0.05), None, "ok", "bad", exact=True).verdict == "holds"


def test_a_measurement_uncertainty_shared_by_every_seed_is_not_averaged_away():
    # sd 0.01 over 10 seeds alone would decide +0.05; an own se of 0.04 (same test set) keeps it open
    vals = seeds(*(0.05 + 0.01 * z for z in (-1.5, -1, -0.5, -0.2, 0, 0, 0.2, 0.5, 1, 1.5)))
    assert judge(vals, None, "ok", "bad").verdict == "holds"
    out = judge(vals, {s: 0.04 for s in vals}, "ok", "bad")
    assert out.verdict == "inconclusive" and out.evidence["seeds_needed"] is None


def test_an_inside_region_is_two_one_sided_tests():
    vals = seeds(1.0, 1.001, 1.0005)
    assert judge(vals, None, "ok", "bad", low=0.99, high=1.01).verdict == "holds"
    assert judge(seeds(1.1, 1.2, 1.15), None, "ok", "bad", low=0.99, high=1.01).verdict == "fails"
    assert judge(seeds(0.98, 1.02, 1.0), None, "ok", "bad", low=0.99, high=1.01).verdict == "inconclusive"


# -- beats: paired by seed, Welch when unpaired ----------------------------------------------------------


def test_a_beats_carried_by_one_seed_is_inconclusive():
    out = beats(seeds(10, 10.1, 15), seeds(9.9, 9.95, 9.98))
    assert out.verdict == "inconclusive"
    assert out.evidence["p_holds"] == pytest.approx(
        sps.ttest_rel([10, 10.1, 15], [9.9, 9.95, 9.98], alternative="greater")[1], rel=1e-4
    )


def test_a_clear_paired_win_holds_and_a_clear_loss_fails():
    assert beats(seeds(0.99, 0.98, 0.99), seeds(0.13, 0.26, 0.13)).verdict == "holds"
    assert beats(seeds(0.1, 0.2, 0.1), seeds(0.9, 0.8, 0.9)).verdict == "fails"


def test_lower_is_better_and_a_margin_moves_the_bar():
    assert beats(seeds(1.0, 1.1, 1.05), seeds(5.0, 5.2, 5.1), higher=False).holds
    out = beats(seeds(0.62, 0.635, 0.61), seeds(0.60, 0.61, 0.59), margin=0.05)
    assert out.verdict == "fails" and "by more than 0.05" in out.reason


def test_unpaired_seeds_use_welchs_test():
    a, b = [0.9, 0.92, 0.91, 0.93], [0.8, 0.85, 0.82, 0.81]
    out = beats(seeds(*a), seeds(*b), paired=False)
    assert out.verdict == "holds" and "unpaired" in out.reason
    assert out.evidence["p_holds"] == pytest.approx(
        sps.ttest_ind(a, b, equal_var=False, alternative="greater")[1], rel=1e-4
    )


def test_a_paired_difference_uses_its_own_paired_standard_error():
    a, b = seeds(30.0, 31.0, 30.5), seeds(28.0, 29.0, 28.4)
    ua = ub = {s: 3.0 for s in a}  # each system's own se alone: the difference looks noisy
    assert beats(a, b, ua=ua, ub=ub).verdict == "inconclusive"
    # a paired test on the same sentences measured the difference far more precisely
    assert beats(a, b, ua=ua, ub=ub, pair_se={s: 0.2 for s in a}).verdict == "holds"


def test_diverged_runs_are_the_worst_outcome_and_counted_by_the_sign_test():
    out = beats(seeds(0.5, 0.5, 0.5), seeds(math.inf, math.nan, math.inf), higher=False)
    # B diverged in every seed: counted, 3 of 3 is p = 0.125; 6 of 6 decides
    assert out.verdict == "inconclusive" and "B diverged in every seed" in out.reason
    assert "3 of 3 on the claim's side" in out.reason
    six = beats(seeds(*[0.5] * 6), seeds(*[math.inf] * 6), higher=False)
    assert six.holds and six.evidence["p_holds"] == pytest.approx(0.5**6)
    mixed = beats(seeds(1.0, 1.0, math.nan), seeds(0.1, 0.1, 0.1))
    assert mixed.verdict == "inconclusive" and "exact sign test" in mixed.reason
    assert mixed.evidence["method"] == "sign"


def test_seeds_pair_by_label_and_a_single_value_broadcasts():
    out = beats(seeds(0.9, 0.91, 0.92), {"0": 0.1, "1": 0.1})
    assert "seeds 2 measured on one side only" in out.reason
    assert beats(seeds(0.9, 0.8, 0.85), {"": 0.5}).holds
    assert not beats({"a": 1.0}, {"b": 0.0}).holds


def test_every_names_the_seeds_that_fail():
    out = every(seeds(0.5, 1.2, math.nan), lambda v: v < 1, "below 1")
    assert not out.holds and "seed 1: 1.2" in out.reason and "seed 2: nan" in out.reason


# -- seeds needed, from a power calculation under the same test -------------------------------------------


def test_seeds_needed_is_the_count_with_80_percent_power():
    out = judge(seeds(0.05, 0.35, 0.02), None, "ok", "bad")
    n = out.evidence["seeds_needed"]
    mean, sd = 0.14, sps.tstd([0.05, 0.35, 0.02])
    assert stats.power(mean, sd, n) >= 0.8 > stats.power(mean, sd, n - 1)
    # the count the test would decide with: simulate it
    rng = sps.norm(mean, sd)
    draws = rng.rvs(size=(4000, n), random_state=1)
    p = sps.ttest_1samp(draws, 0, axis=1, alternative="greater")[1]
    assert abs((p <= 0.025).mean() - stats.power(mean, sd, n)) < 0.03


def test_the_seeds_hint_gives_the_count_and_the_planned_design_that_adds_them():
    from components.report.checks import CheckResult

    r = CheckResult("inconclusive", "", "", evidence={"seeds_needed": 7, "seeds": 3})
    cmd = "bottlenecks run pipelines/four_bottlenecks.yaml --profile standard --set seeds={seeds}"
    hint = seeds_hint([r], "seed", cmd)
    assert hint == (
        "at the observed effect and spread over 3 seeds, about 7 seeds decide it with 80% power; more seeds "
        "are a second look, so add them under a planned design: `bottlenecks run "
        "pipelines/four_bottlenecks.yaml --profile standard --until-decided --max-seeds 10` "
        "(the seeds already run come from the cache)"
    )
    many = seeds_hint([CheckResult("inconclusive", "", "", evidence={"seeds_needed": 14, "seeds": 3})], "seed", cmd)
    assert "--until-decided --max-seeds 14`" in many and "--set" not in many
    one = seeds_hint([CheckResult("inconclusive", "", "", evidence={"seeds_needed": 2, "seeds": 1})], "seed")
    assert one == "it needs at least 2 seeds (or a measurement with its own interval)"


def test_holm_adjusts_a_family():
    adjusted = stats.holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})


# -- the log-log fit ------------------------------------------------------------------------------------------


def test_loglog_slope_recovers_the_exponent_and_refuses_non_positive():
    xs = [64, 128, 256, 512]
    assert loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert loglog_slope(xs, [5 * x for x in xs]) == pytest.approx(1.0)
    assert math.isnan(loglog_slope(xs, [1, 0, 2, 3]))


def test_loglog_fit_gives_the_slopes_95_percent_half_width():
    xs = [128, 256, 512, 1024]
    ys = [1.0, 3.9, 16.5, 63.0]
    k, half = loglog_fit(xs, ys)
    fit = sps.linregress([math.log(x) for x in xs], [math.log(y) for y in ys])
    assert k == pytest.approx(fit.slope) and half == pytest.approx(sps.t.ppf(0.975, 2) * fit.stderr)
    assert math.isnan(loglog_fit(xs[:2], ys[:2])[1])  # two points leave no residual


def test_a_tie_in_every_seed_is_inconclusive_and_says_a_does_not_beat_b():
    # a ceiling both sides reach (accuracy 1.0): no seed has A above B, but a tie on the bound points
    # neither way, so it is no evidence that A does not beat B either
    out = beats(seeds(1.0, 1.0, 1.0), seeds(1.0, 1.0, 1.0))
    assert out.verdict == "inconclusive" and "points neither way" in out.reason
    assert out.reason.startswith("A does not beat B in seed 0, seed 1, seed 2 (seed 0: 1 vs 1"), out.reason
