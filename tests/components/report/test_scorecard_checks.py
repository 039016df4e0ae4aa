"""Every check kind, on hand-made measurements: holds, fails, inconclusive, not measured, diverged seeds.

Seeds are judged by a t interval at 95% (3 seeds: t = 4.30), so a case that holds or fails does so by a
clear margin against the seeds' spread; a single value with no uncertainty of its own is judged only
when the check says ``exact: true`` (a count, a structural fact), or on its own recorded interval."""

import math

import pytest

from components.report.checks import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, evaluate
from components.report.refs import Resolver
from components.report.vocabulary import validate_check

NAN = math.nan
EXACT = {"exact": True}


def seeds(*values, axis="arch=x"):
    return {f"{axis},seed={i}": v for i, v in enumerate(values)}


MEAS = {
    "grad": {"rnn": {"rho": 0.50}, "lstm": {"rho": 0.62}, "tf": {"rho": 0.999}, "gru": {"rho": 0.63}},
    "lag": {
        **{f"arch=rnn,seed={i}": {"acc": v} for i, v in enumerate((0.13, 0.26, 0.13))},
        **{f"arch=lstm,seed={i}": {"acc": v} for i, v in enumerate((0.99, 0.99, 1.0))},
        **{f"arch=clip,seed={i}": {"acc": v} for i, v in enumerate((0.12, NAN, 0.13))},
        **{f"arch=nan,seed={i}": {"acc": NAN} for i in range(3)},
    },
    "bleu": {
        f"arch={a},seed={i}": {"short": s, "long": lo}
        for a, rows in {
            "s2s": [(57, 12), (23, 6), (58, 9)],
            "att": [(99, 98), (100, 99), (99, 98)],
            "weak": [(10, 2), (12, 3), (9, 1)],
        }.items()
        for i, (s, lo) in enumerate(rows)
    },
    # the seeds' series differ a little, so the t test has a spread to scale by (identical changes in every
    # seed would be counted by the sign test instead, which needs 6 seeds)
    "gap": {f"seed={i}": {"b1": 1.0 + i, "b2": 5.0 + 1.1 * i, "b3": 20.0 + 1.3 * i} for i in range(3)},
    "runs6": {
        **{f"arch=ok,seed={i}": {"loss": 0.5 + 0.01 * i} for i in range(6)},
        **{f"arch=dead,seed={i}": {"loss": NAN} for i in range(6)},
    },
    "mem": {
        # a reported exponent with its fit's own 95% half-width (``exp_ci``, as the timing probe writes it)
        "naive": {"t64": 1.0, "t128": 4.1, "t256": 15.8, "t512": 64.0, "exp": 1.9, "exp_ci": 0.1},
        "rnn": {"t64": 1.0, "t128": 2.0, "t256": 4.1, "t512": 8.0},
    },
    "params": {"T=10": {"n": 1234}, "T=100": {"n": 1234}, "T=5": {"n": 1240}},
    "heads": {
        f"h={h},seed={i}": {"acc": v}
        for h, vals in {1: (0.92, 0.95, 0.93), 4: (1.0, 1.0, 1.0), 8: (1.0, 0.999, 1.0)}.items()
        for i, v in enumerate(vals)
    },
}


def run(spec, **kw):
    return evaluate(validate_check(spec, "test"), Resolver(MEAS, {"grad": {"rnn": "r1"}}), **kw)


# single measurements (grad, params) carry no uncertainty of their own: these cases say ``exact``
@pytest.mark.parametrize(
    "spec, verdict",
    [
        ({"check": "below", "value": "grad[rnn].rho", "than": 1.0, **EXACT}, HOLDS),
        ({"check": "below", "value": "grad[tf].rho", "than": 0.99, **EXACT}, FAILS),
        ({"check": "above", "value": "grad[lstm].rho", "than": "grad[rnn].rho", **EXACT}, HOLDS),
        ({"check": "below", "value": "params[T=10].n", "than": 1234, **EXACT}, FAILS),  # below is strict
        ({"check": "at_most", "value": "params[T=10].n", "than": 1234, **EXACT}, HOLDS),  # at_most is not
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.5}, HOLDS),  # t 7.5 over 3 seeds
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.25}, INCONCLUSIVE),  # 2 of 3 seeds
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.1}, INCONCLUSIVE),  # every seed, inside spread
        ({"check": "at_most", "value": "lag[arch=lstm].acc", "than": 0.9}, FAILS),  # far beyond the spread
        ({"check": "at_least", "value": "lag[arch=lstm].acc", "than": 0.95}, HOLDS),
        ({"check": "between", "value": "grad[tf].rho", "low": 0.99, "high": 1.01, **EXACT}, HOLDS),
        ({"check": "between", "value": "grad[lstm].rho", "low": 0.99, **EXACT}, FAILS),
        ({"check": "between", "value": "lag[arch=lstm].acc", "low": 0.95, "high": 1.05}, HOLDS),  # both one-sided tests
        ({"check": "between", "value": "lag[arch=lstm].acc", "low": 0.95, "high": 1.0}, INCONCLUSIVE),  # 1.0 in reach
        ({"check": "between", "value": "heads[h=1].acc", "low": 0.99}, FAILS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=100].n", **EXACT}, HOLDS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=5].n", **EXACT}, FAILS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=5].n", "tolerance": 10, **EXACT}, HOLDS),
        ({"check": "close", "a": "heads[h=4].acc", "b": "heads[h=8].acc", "tolerance": 0.01}, HOLDS),
        ({"check": "close", "a": "heads[h=1].acc", "b": "heads[h=8].acc", "tolerance": 0.01}, FAILS),
        ({"check": "close", "a": "grad[lstm].rho", "b": "grad[gru].rho", "rel": 0.02, **EXACT}, HOLDS),
        ({"check": "beats", "a": "lag[arch=lstm].acc", "b": "lag[arch=rnn].acc"}, HOLDS),
        ({"check": "beats", "a": "lag[arch=rnn].acc", "b": "lag[arch=lstm].acc"}, FAILS),
        ({"check": "beats", "a": "heads[h=1].acc", "b": "heads[h=4].acc", "better": "lower"}, HOLDS),
        ({"check": "beats", "a": "grad[gru].rho", "b": "grad[lstm].rho", "margin": 0.05, **EXACT}, FAILS),
        ({"check": "flat", "value": "bleu[arch=att].long", "base": "bleu[arch=att].short", "base_at_least": 80}, HOLDS),
        ({"check": "flat", "value": "bleu[arch=s2s].long", "base": "bleu[arch=s2s].short"}, FAILS),
        (
            {"check": "cliff", "value": "bleu[arch=s2s].long", "base": "bleu[arch=s2s].short", "base_at_least": 20},
            HOLDS,
        ),
        ({"check": "cliff", "value": "bleu[arch=att].long", "base": "bleu[arch=att].short"}, FAILS),
        ({"check": "increasing", "values": ["gap[*].b1", "gap[*].b2", "gap[*].b3"]}, HOLDS),
        ({"check": "decreasing", "values": ["gap[*].b1", "gap[*].b2", "gap[*].b3"]}, FAILS),
        ({"check": "decreasing", "values": ["gap[*].b3", "gap[*].b2"], "minus": ["gap[*].b1", "gap[*].b1"]}, HOLDS),
        (
            {
                "check": "exponent_between",
                "x": [64, 128, 256, 512],
                "y": ["mem[naive].t64", "mem[naive].t128", "mem[naive].t256", "mem[naive].t512"],
                "low": 1.7,
            },
            HOLDS,
        ),
        (
            {
                "check": "exponent_between",
                "x": [64, 128, 256, 512],
                "y": ["mem[rnn].t64", "mem[rnn].t128", "mem[rnn].t256", "mem[rnn].t512"],
                "low": 1.7,
            },
            FAILS,
        ),
        (
            {
                "check": "exponent_between",
                "x": [64, 128, 256, 512],
                "y": ["mem[rnn].t64", "mem[rnn].t128", "mem[rnn].t256", "mem[rnn].t512"],
                "low": 0.8,
                "high": 1.3,
            },
            HOLDS,
        ),
        # a reported exponent is judged on its own interval: 1.9 +- 0.1
        ({"check": "exponent_between", "value": "mem[naive].exp", "low": 1.7, "high": 2.2}, HOLDS),
        ({"check": "exponent_between", "value": "mem[naive].exp", "low": 1.85}, INCONCLUSIVE),
        ({"check": "exponent_between", "value": "mem[naive].exp", "high": 1.7}, FAILS),
        # finite: the seeds are counted (exact sign test), which decides from 6 seeds pointing one way
        ({"check": "finite", "value": "lag[arch=lstm].acc"}, INCONCLUSIVE),  # 3 finite seeds: p = 0.125
        ({"check": "finite", "value": "lag[arch=clip].acc"}, INCONCLUSIVE),  # one seed of three diverged
        ({"check": "finite", "value": "lag[arch=nan].acc"}, INCONCLUSIVE),  # every seed of 3 diverged
        ({"check": "finite", "value": "runs6[arch=ok].loss"}, HOLDS),  # 6 finite seeds: p = 0.016
        ({"check": "finite", "value": "runs6[arch=dead].loss"}, FAILS),  # 6 diverged seeds
    ],
)
def test_check_kinds(spec, verdict):
    r = run(spec)
    assert r.verdict == verdict, r.reason
    assert r.expected and r.reason


@pytest.mark.parametrize(
    "spec",
    [
        {"check": "below", "value": "grad[rnn].rho", "than": 1.0},
        {"check": "above", "value": "grad[lstm].rho", "than": "grad[rnn].rho"},
        {"check": "between", "value": "grad[tf].rho", "low": 0.99, "high": 1.01},
        {"check": "equals", "value": "params[T=10].n", "to": "params[T=100].n"},
        {"check": "close", "a": "grad[lstm].rho", "b": "grad[gru].rho", "rel": 0.02},
        {"check": "beats", "a": "grad[gru].rho", "b": "grad[lstm].rho", "margin": 0.05},
    ],
)
def test_a_single_measurement_without_exact_is_inconclusive_and_asks_for_seeds(spec):
    r = run(spec)
    assert r.verdict == INCONCLUSIVE, r.reason
    assert "needs at least 2 seeds" in r.reason
    assert r.evidence["method"] == "single" and r.evidence["seeds_needed"] == 2
    assert run(spec, exact=True).verdict in (HOLDS, FAILS)  # a claim's ``exact: true`` decides it


def test_an_exact_check_fails_on_any_seed_outside_and_says_it_is_exact():
    r = run({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.25, **EXACT})
    assert r.verdict == FAILS and "not at most in seed 1: 0.26 vs 0.25" in r.reason
    assert "exact in every seed" in r.reason and r.evidence["method"] == "exact"
    assert run({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.26, **EXACT}).verdict == HOLDS


def test_every_seed_against_the_claim_but_inside_the_spread_is_inconclusive_with_the_t_statistic():
    # margins -0.03, -0.16, -0.03: every seed above 0.1, but t = 1.69 against the critical 4.30 (2 df)
    r = run({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.1})
    assert r.verdict == INCONCLUSIVE
    assert r.reason.startswith("not at most in seed 0: 0.13 vs 0.1; seed 1: 0.26 vs 0.1; seed 2: 0.13 vs 0.1")
    assert "t = 1.69 below the critical 4.3" in r.reason and "(t, 2 df, 3 seeds" in r.reason
    assert r.evidence["hi"] > 0 > r.evidence["mean"] and r.evidence["seeds_needed"] > 3


def test_a_clear_result_reports_its_interval_and_p_value():
    r = run({"check": "at_least", "value": "lag[arch=lstm].acc", "than": 0.95})
    assert r.reason.startswith("at least in every seed (seed 0: 0.99 vs 0.95; seed 1: 0.99 vs 0.95; seed 2: 1 vs 0.95)")
    ev = r.evidence
    assert ev["method"] == "t" and ev["seeds"] == 3 and ev["df"] == 2
    assert ev["mean"] == pytest.approx(0.04333, abs=1e-5) and ev["lo"] > 0
    assert ev["values"] == pytest.approx({"0": 0.04, "1": 0.04, "2": 0.05})
    assert ev["p_holds"] < 0.025 < ev["p_fails"] and ev["region"] == [0.0, None]


SPREAD = {
    "m": {
        f"arch={a},seed={i}": {"x": v}
        for a, vals in {"a": (1.0, 1.4, 1.2), "b": (0.9, 1.35, 1.0)}.items()
        for i, v in enumerate(vals)
    }
}


@pytest.mark.parametrize("factor", [0, 0.2, 3, 100])
def test_spread_factor_is_still_accepted_and_no_longer_changes_the_verdict(factor):
    # A ahead in every seed by 0.1, 0.05, 0.2: paired t = 2.65 < 4.30, inconclusive. Under the earlier
    # rule spread_factor 0.2 (or 0) made this hold; pipelines written for it must still validate.
    spec = {"check": "beats", "a": "m[arch=a].x", "b": "m[arch=b].x"}
    plain = evaluate(validate_check(spec, "t"), Resolver(SPREAD))
    with_factor = evaluate(validate_check({**spec, "spread_factor": factor}, "t"), Resolver(SPREAD))
    assert plain.verdict == with_factor.verdict == INCONCLUSIVE
    assert with_factor.reason == plain.reason and "t = 2.65 below the critical 4.3" in plain.reason
    assert with_factor.evidence == plain.evidence


def test_a_base_below_its_floor_leaves_the_shape_not_measured_and_says_why():
    # A model that never learned the short case says nothing about a cliff (or flatness).
    r = run({"check": "cliff", "value": "bleu[arch=weak].long", "base": "bleu[arch=weak].short", "base_at_least": 20})
    assert r.verdict == NOT_MEASURED and "did not learn the easy case" in r.reason
    assert "seed 0: base 10" in r.reason
    assert r.measured["ratio"]["0"] == pytest.approx(0.2)  # the values still reach the report


RATIO_SEEDS = {
    "bleu": {f"arch=x,seed={i}": {"short": s, "long": lo} for i, (s, lo) in enumerate([(90, 89), (95, 40), (10, 9)])}
}
FLAT = {"check": "flat", "value": "bleu[arch=x].long", "base": "bleu[arch=x].short"}


def test_a_seed_that_breaks_the_ratio_beside_one_that_keeps_it_is_inconclusive_whatever_the_floor():
    r = evaluate(validate_check({**FLAT, "base_at_least": 50}, "t"), Resolver(RATIO_SEEDS, {}))
    assert r.verdict == INCONCLUSIVE and "0.4211" in r.reason
    assert "not judged: seed 2: base 10 (below the floor 50)" in r.reason
    # the seed below the floor is not judged: log(ratio / 0.85) of seeds 0 and 1 only
    assert r.evidence["values"] == pytest.approx(
        {"0": math.log(89 / 90 / 0.85), "1": math.log(40 / 95 / 0.85)}, abs=1e-6
    )
    assert r.evidence["quantity"] == "log-ratio margin" and r.evidence["seeds"] == 2
    # without a floor all three seeds are judged, and the broken one still keeps it from holding
    r = evaluate(validate_check(FLAT, "t"), Resolver(RATIO_SEEDS, {}))
    assert r.verdict == INCONCLUSIVE and r.evidence["values"].keys() == {"0", "1", "2"}


def test_a_broken_ratio_is_named_by_its_seed():
    r = evaluate(validate_check({**FLAT, "base_at_least": 50}, "t"), Resolver(RATIO_SEEDS, {}))
    assert "seed 1: ratio 0.4211" in r.reason


def test_a_diverged_seed_counts_against_a_threshold_and_is_reported_by_name():
    r = run({"check": "at_most", "value": "lag[arch=clip].acc", "than": 0.3})
    assert r.verdict == INCONCLUSIVE and "not at most in seed 1: nan vs 0.3" in r.reason  # 2 of 3 seeds
    assert r.measured["lag[arch=clip].acc"] == {"0": 0.12, "1": "nan", "2": 0.13}


def test_missing_measurement_is_not_measured_with_the_reason():
    r = run({"check": "beats", "a": "lag[arch=gru].acc", "b": "lag[arch=rnn].acc"})
    assert r.verdict == NOT_MEASURED and "no instance matches [arch=gru]" in r.reason
    assert "lag[arch=rnn].acc" in r.measured  # what was measured is still shown


def test_too_few_seeds_is_not_measured():
    r = run({"check": "below", "value": "grad[rnn].rho", "than": 1}, min_seeds=3)
    assert r.verdict == NOT_MEASURED and "has 1 seed: the claim needs 3" in r.reason
    assert run({"check": "at_least", "value": "lag[arch=lstm].acc", "than": 0.9}, min_seeds=3).verdict == HOLDS


def test_run_ids_of_the_measurements_are_kept():
    assert run({"check": "below", "value": "grad[rnn].rho", "than": 1}).run_ids == ["r1"]


def test_fitted_exponents_are_reported():
    r = run({"check": "exponent_between", "x": [64, 512], "y": ["mem[rnn].t64", "mem[rnn].t512"], "high": 1.3})
    assert r.measured["exponent"][""] == pytest.approx(1.0)


def test_expected_text_can_be_overridden():
    assert run({"check": "below", "value": "grad[rnn].rho", "than": 1, "expected": "rho < 1"}).expected == "rho < 1"
