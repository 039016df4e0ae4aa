"""The verdict's shortcut paths, each a test at the stated level: identical values at a bound, claims of
several checks, fits with their degrees of freedom, a test-set error shared by the seeds, and the
margin reported with its own interval."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from components import stats
from components.report.checks import CheckResult, evaluate
from components.report.claims import claim_p, combine, judge
from components.report.refs import Resolver
from components.report.vocabulary import validate_check, validate_expectations


def seeds(*values, key="acc"):
    return {f"seed={i}": {key: v} for i, v in enumerate(values)}


def run(spec, meas, **kw):
    return evaluate(validate_check(spec, "test"), Resolver(meas), **kw)


# -- 1. identical values are not exact ---------------------------------------------------------------


def test_three_seeds_of_accuracy_one_against_at_least_09_are_inconclusive():
    r = run({"check": "at_least", "value": "m[*].acc", "than": 0.9}, {"m": seeds(1.0, 1.0, 1.0)})
    assert r.verdict == "inconclusive", r.reason
    assert "identical in all 3 seeds" in r.reason and "bounded-mean betting test" in r.reason
    assert r.evidence["method"] == "bounded"
    assert r.evidence["p_holds"] == pytest.approx(0.9**3)  # a proportion at 1.0 is 1.0 with prob <= its mean
    need = math.ceil(math.log(0.025) / math.log(0.9))  # 0.9 ** n <= 2.5%
    assert r.evidence["seeds_needed"] == need == 36 and f"from {need} seeds" in r.reason
    assert r.evidence["lo"] is None and r.evidence["hi"] is None  # no interval: a test over seeds


def test_enough_seeds_at_the_bound_decide_and_exact_decides_at_once():
    assert run({"check": "at_least", "value": "m[*].acc", "than": 0.9}, {"m": seeds(*[1.0] * 36)}).verdict == "holds"
    r = run({"check": "at_least", "value": "m[*].acc", "than": 0.9, "exact": True}, {"m": seeds(1.0, 1.0, 1.0)})
    assert r.verdict == "holds" and r.evidence["interval"] == "exact"
    # a proportion at 0 against at_most 0.3: the upper end of the range bets against it
    r = run({"check": "at_most", "value": "m[*].acc", "than": 0.3}, {"m": seeds(0.0, 0.0, 0.0)})
    assert r.verdict == "inconclusive" and r.evidence["p_holds"] == pytest.approx(0.7**3)


def test_identical_values_of_unknown_range_are_counted_by_the_sign_test():
    r = run({"check": "above", "value": "m[*].loss", "than": 1.0}, {"m": seeds(2.5, 2.5, 2.5, key="loss")})
    assert r.verdict == "inconclusive" and "exact sign test" in r.reason and r.evidence["seeds_needed"] == 6
    r6 = run({"check": "above", "value": "m[*].loss", "than": 1.0}, {"m": seeds(*[2.5] * 6, key="loss")})
    assert r6.verdict == "holds" and r6.evidence["p_holds"] == pytest.approx(sps.binomtest(6, 6).pvalue / 2)


def test_every_seed_diverged_alike_is_counted_too():
    d = stats.decide(stats.one_sample([-math.inf] * 3))
    assert d.verdict == "inconclusive" and d.p_fails == pytest.approx(0.125)
    assert stats.decide(stats.one_sample([-math.inf] * 6)).verdict == "fails"


def test_two_constant_groups_use_the_exact_rank_test():
    d = stats.decide(stats.two_sample([1.0] * 3, [0.0] * 3))
    assert d.verdict == "inconclusive" and d.p_holds == pytest.approx(1 / math.comb(6, 3))
    assert stats.decide(stats.two_sample([1.0] * 4, [0.0] * 4)).verdict == "holds"


# -- 2. a claim fails only on its corrected p_fails ---------------------------------------------------


def _result(verdict, p_holds, p_fails):
    return CheckResult(verdict, "", "", evidence={"p_holds": p_holds, "p_fails": p_fails})


def test_a_claim_of_three_checks_with_one_failing_at_p_0014_is_inconclusive():
    results = [_result("fails", 0.99, 0.014), _result("holds", 0.01, 0.99), _result("holds", 0.02, 0.98)]
    verdicts, ps = [r.verdict for r in results], [r.evidence["p_fails"] for r in results]
    assert combine(verdicts, ps) == "inconclusive"
    assert claim_p(results)[1] == pytest.approx(0.042)  # the claim's own p for fails: 0.014 x 3


def test_that_check_alone_fails():
    assert combine(["fails"], [0.014]) == "fails"
    assert claim_p([_result("fails", 0.99, 0.014)])[1] == pytest.approx(0.014)


def test_a_claim_reads_the_corrected_p_through_judge():
    # one check fails on its own (paired t, 2 df), two hold; corrected over 3 it does not fail the claim
    a, b = (0.50, 0.52, 0.47), (0.55, 0.56, 0.55)
    meas = {
        "m": {f"seed={i}": {"a": x, "b": y, "c": 0.9 + 0.01 * i} for i, (x, y) in enumerate(zip(a, b))},
    }
    checks = [
        {"check": "beats", "a": "m[*].a", "b": "m[*].b"},
        {"check": "at_least", "value": "m[*].c", "than": 0.5},
        {"check": "at_most", "value": "m[*].c", "than": 1.5},
    ]
    claim = validate_expectations([{"id": 1, "claim": "three at once", "checks": checks}])[0]
    out = judge(claim, Resolver(meas), device="cpu", min_seeds=1)
    p_fails = out["checks"][0]["evidence"]["p_fails"]
    assert out["checks"][0]["verdict"] == "fails" and 0.025 / 3 < p_fails <= 0.025
    assert out["verdict"] == "inconclusive" and "not after the correction over the claim's 3 checks" in out["reason"]
    alone = validate_expectations([{"id": 2, "claim": "one", "checks": checks[:1]}])[0]
    assert judge(alone, Resolver(meas), device="cpu", min_seeds=1)["verdict"] == "fails"


def test_a_smaller_level_is_threaded_to_every_verdict():
    vals = [0.1, 0.12, 0.11, 0.13]
    p = stats.decide(stats.one_sample(vals)).p_holds
    assert stats.decide(stats.one_sample(vals), level=0.025).verdict == "holds"
    assert stats.decide(stats.one_sample(vals), level=p / 2).verdict == "inconclusive"
    r = run({"check": "at_least", "value": "m[*].acc", "than": 0.0}, {"m": seeds(*vals)}, level=p / 2)
    assert r.verdict == "inconclusive" and r.evidence["level"] == pytest.approx(p / 2)
    assert combine(["fails"], [0.01], level=0.005) == "inconclusive"


# -- 3. fits keep their degrees of freedom -------------------------------------------------------------


def test_a_fitted_exponent_is_tested_on_t_with_points_minus_2_df():
    xs, ys = [256, 512, 1024, 2048], [1.0, 3.9, 16.5, 63.0]
    r = run(
        {"check": "exponent_between", "x": xs, "y": [f"c.t{x}" for x in xs], "low": 1.7},
        {"c": {f"t{x}": y for x, y in zip(xs, ys)}},
        min_seeds=1,
    )
    fit = sps.linregress(np.log(xs), np.log(ys))
    expected = sps.t.sf((fit.slope - 1.7) / fit.stderr, 2)
    assert r.evidence["p_holds"] == pytest.approx(expected, rel=1e-3)
    assert r.evidence["df"] == 2 and r.evidence["own_df"] == 2


def test_a_recorded_df_key_turns_a_half_width_into_a_t_standard_error():
    meas = {"c": {"exp": 1.9, "exp_ci": 0.3, "exp_df": 2}}
    r = run({"check": "exponent_between", "value": "c.exp", "low": 1.7}, meas, min_seeds=1)
    se = 0.3 / sps.t.ppf(0.975, 2)
    assert r.evidence["se"] == pytest.approx(se, rel=1e-4)
    assert r.evidence["p_holds"] == pytest.approx(sps.t.sf(0.2 / se, 2), rel=1e-3)


# -- 4. the test-set error the seeds share, counted once ----------------------------------------------


def test_the_shared_part_is_the_mean_covariance_of_the_replicates():
    rng = np.random.default_rng(0)
    shared = rng.standard_normal(500)
    reps = [30 + shared + 0.5 * rng.standard_normal(500) for _ in range(3)]
    cov, df = stats.shared_variance(reps)
    assert cov == pytest.approx(np.var(shared, ddof=1), rel=0.15) and df == 499
    est = stats.one_sample([30.0, 31.0, 30.4], [1.1, 1.1, 1.1], replicates=reps)
    assert est.variance == "shared" and est.se == pytest.approx(math.sqrt(np.var([30, 31, 30.4], ddof=1) / 3 + cov))
    fallback = stats.one_sample([30.0, 31.0, 30.4], [1.1, 1.1, 1.1])
    assert fallback.variance == "own" and fallback.se > est.se  # the conservative fallback counts more


def test_a_check_reads_eval_bleus_replicates_and_says_so():
    rng = np.random.default_rng(1)
    shared = rng.standard_normal(100)
    meas = {"m": {}}
    for i, (a, b) in enumerate([(31.0, 30.0), (31.5, 30.1), (31.2, 30.4)]):
        s = {"bleu/A": a, "bleu/B": b, "bleu_ci/A": 2.0, "bleu_ci/B": 2.0}
        noise = 0.3 * rng.standard_normal(100)
        for k in range(100):
            s[f"bleu_rep_{k}/A"] = a + shared[k] + noise[k]
            s[f"bleu_rep_{k}/B"] = b + shared[k]
        meas["m"][f"seed={i}"] = s
    r = run({"check": "beats", "a": "m[*].bleu/A", "b": "m[*].bleu/B"}, meas)
    assert r.evidence["variance"] == "shared" and "shared test-set error" in r.reason
    assert r.verdict == "holds", r.reason  # the shared error cancels in A - B; without replicates it would not
    del_reps = {"m": {s: {k: v for k, v in d.items() if "_rep_" not in k} for s, d in meas["m"].items()}}
    assert run({"check": "beats", "a": "m[*].bleu/A", "b": "m[*].bleu/B"}, del_reps).verdict == "inconclusive"


# -- 5. the margin lies inside its own interval, for every kind -----------------------------------------


KINDS = [
    ({"check": "at_least", "value": "m[*].x", "than": 0.5}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "at_most", "value": "m[*].x", "than": 0.7}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "above", "value": "m[*].x", "than": 0.61}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "below", "value": "m[*].x", "than": 0.61}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "between", "value": "m[*].x", "low": 0.5, "high": 0.63}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "between", "value": "m[*].x", "high": 0.63}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "equals", "value": "m[*].x", "to": 0.62, "tolerance": 0.03}, {"x": (0.6, 0.62, 0.65)}),
    (
        {"check": "close", "a": "m[*].x", "b": "m[*].y", "tolerance": 0.03},
        {"x": (0.6, 0.62, 0.65), "y": (0.6, 0.6, 0.6)},
    ),
    (
        {"check": "close", "a": "m[*].x", "b": "m[*].y", "tolerance": 0.2},
        {"x": (0.6, 0.62, 0.65), "y": (0.6, 0.6, 0.61)},
    ),
    ({"check": "beats", "a": "m[*].x", "b": "m[*].y"}, {"x": (0.6, 0.62, 0.65), "y": (0.5, 0.6, 0.61)}),
    (
        {"check": "beats", "a": "m[*].x", "b": "m[*].y", "paired": False},
        {"x": (0.6, 0.62, 0.65), "y": (0.5, 0.6, 0.61)},
    ),
    (
        {"check": "flat", "value": "m[*].x", "base": "m[*].y", "ratio": 0.8},
        {"x": (0.6, 0.62, 0.65), "y": (0.7, 0.7, 0.72)},
    ),
    (
        {"check": "cliff", "value": "m[*].x", "base": "m[*].y", "ratio": 0.9},
        {"x": (0.6, 0.62, 0.65), "y": (0.7, 0.7, 0.72)},
    ),
    ({"check": "increasing", "values": ["m[*].y", "m[*].x"]}, {"x": (0.6, 0.62, 0.65), "y": (0.5, 0.6, 0.61)}),
    (
        {"check": "decreasing", "values": ["m[*].y", "m[*].x", "m[*].z"]},
        {"x": (0.6, 0.62, 0.65), "y": (0.7, 0.7, 0.72), "z": (0.5, 0.4, 0.41)},
    ),
    ({"check": "exponent_between", "value": "m[*].x", "low": 0.55, "high": 0.7}, {"x": (0.6, 0.62, 0.65)}),
    ({"check": "finite", "value": "m[*].x"}, {"x": (0.6, 0.62, 0.65)}),
]


@pytest.mark.parametrize("spec, cols", KINDS, ids=[f"{k['check']}-{i}" for i, (k, _) in enumerate(KINDS)])
def test_the_margin_lies_inside_its_reported_interval(spec, cols):
    n = len(next(iter(cols.values())))
    meas = {"m": {f"seed={i}": {k: v[i] for k, v in cols.items()} for i in range(n)}}
    r = run(spec, meas)
    ev = r.evidence
    assert "margin" in ev, r.reason
    if ev.get("lo") is not None:
        assert ev["lo"] <= ev["margin"] <= ev["hi"], (spec, ev)
        # holds exactly when the margin's interval lies above 0, fails when below
        if r.verdict == "holds":
            assert ev["lo"] >= 0
        if r.verdict == "fails":
            assert ev["hi"] <= 0


def test_close_reports_the_tolerance_left_and_its_interval():
    meas = {"m": {f"seed={i}": {"a": 0.5 + d, "b": 0.5} for i, d in enumerate((0.001, -0.002, 0.0035))}}
    r = run({"check": "close", "a": "m[*].a", "b": "m[*].b", "tolerance": 0.03}, meas)
    ev = r.evidence
    mean = np.mean([0.001, -0.002, 0.0035])
    assert ev["margin"] == pytest.approx(0.03 - abs(mean), abs=1e-6)
    assert ev["lo"] == pytest.approx(0.03 - max(abs(ev["mean_lo"]), abs(ev["mean_hi"])), abs=1e-6)
    assert ev["hi"] == pytest.approx(
        0.03, abs=1e-6
    )  # the mean's interval covers 0: the best case is the whole tolerance


# -- 6. of: median, the typical seed by the exact sign test -------------------------------------------


def test_of_median_tests_the_typical_seed_distribution_free():
    spec = {"check": "at_least", "value": "m[*].acc", "than": 0.95, "of": "median"}
    r = run(spec, {"m": seeds(1.0, 1.0, 1.0)})
    assert r.verdict == "inconclusive" and r.evidence["method"] == "median"
    assert r.evidence["p_holds"] == pytest.approx(0.125)  # 3 of 3 above: 0.5 ** 3
    assert "3 of 3 on the claim's side" in r.reason and "about 6 seeds decide it" in r.reason
    r = run(spec, {"m": seeds(*[1.0] * 6)})
    assert r.verdict == "holds" and r.evidence["p_holds"] == pytest.approx(0.5**6)
    assert "in most seeds (median)" in r.expected
    # 9 of 10 seeds solve it, one does not: the typical seed solves it (p = 11/1024); the mean, 0.9, does not
    mixed = [1.0] * 9 + [0.0]
    r = run(spec, {"m": seeds(*mixed)})
    assert r.verdict == "holds" and r.evidence["p_holds"] == pytest.approx(11 / 1024, rel=1e-5)
    r = run(spec | {"of": "mean"}, {"m": seeds(*mixed)})
    assert r.verdict == "inconclusive" and r.evidence["mean"] == pytest.approx(-0.05)
    r = run(spec, {"m": seeds(*[0.5] * 6)})
    assert r.verdict == "fails" and r.evidence["p_fails"] == pytest.approx(0.5**6)


def test_of_median_counts_a_seed_on_the_edge_and_a_diverged_seed_against_the_claim():
    spec = {"check": "at_least", "value": "m[*].acc", "than": 0.9, "of": "median"}
    r = run(spec, {"m": seeds(*[1.0] * 5, 0.9)})  # on the edge: not past it
    assert r.verdict == "inconclusive" and r.evidence["p_holds"] == pytest.approx(sps.binomtest(5, 6).pvalue / 2)
    r = run(spec, {"m": seeds(*[1.0] * 6, math.nan)})
    assert r.evidence["p_holds"] == pytest.approx(sps.binomtest(6, 7).pvalue / 2)


def test_of_median_interval_is_the_order_statistics_one():
    d = None
    with stats.summary("median"):
        d = stats.decide(stats.one_sample([0.1 * i for i in range(1, 11)]), 0.0)
    ci = sps.quantile_test(np.array([0.1 * i for i in range(1, 11)]), q=d.estimate.mean).confidence_interval(0.95)
    assert (d.lo, d.hi) == pytest.approx((ci.low, ci.high)) and d.estimate.mean == pytest.approx(0.55)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"of": "mode"}, "'of' is 'mean' (the default"),
        ({"of": "median", "paired": False}, "cannot take 'paired: false'"),
    ],
)
def test_of_takes_mean_or_median_and_says_so(extra, said):
    from components.report.vocabulary import ScorecardError

    spec = {"check": "beats", "a": "m[*].acc", "b": "n[*].acc"} | extra
    with pytest.raises(ScorecardError, match=said.replace("(", r"\(")):
        validate_check(spec, "expect[0].checks[0]")
