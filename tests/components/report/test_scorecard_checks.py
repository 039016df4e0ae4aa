"""Every check kind, on hand-made measurements: holds, fails, not measured, diverged seeds."""

import math

import pytest

from components.report.checks import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, evaluate
from components.report.refs import Resolver
from components.report.vocabulary import validate_check

NAN = math.nan


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
    "gap": {f"seed={i}": {"b1": 1.0 + i, "b2": 5.0 + i, "b3": 20.0 + i} for i in range(3)},
    "mem": {
        "naive": {"t64": 1.0, "t128": 4.1, "t256": 15.8, "t512": 64.0, "exp": 1.9},
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


@pytest.mark.parametrize(
    "spec, verdict",
    [
        ({"check": "below", "value": "grad[rnn].rho", "than": 1.0}, HOLDS),
        ({"check": "below", "value": "grad[tf].rho", "than": 0.99}, FAILS),
        ({"check": "above", "value": "grad[lstm].rho", "than": "grad[rnn].rho"}, HOLDS),
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.26}, HOLDS),
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.25}, INCONCLUSIVE),  # 2 of 3 seeds
        ({"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.1}, FAILS),  # refuted in every seed
        ({"check": "at_least", "value": "lag[arch=lstm].acc", "than": 0.95}, HOLDS),
        ({"check": "between", "value": "grad[tf].rho", "low": 0.99, "high": 1.01}, HOLDS),
        ({"check": "between", "value": "grad[lstm].rho", "low": 0.99}, FAILS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=100].n"}, HOLDS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=5].n"}, FAILS),
        ({"check": "equals", "value": "params[T=10].n", "to": "params[T=5].n", "tolerance": 10}, HOLDS),
        ({"check": "close", "a": "heads[h=4].acc", "b": "heads[h=8].acc", "tolerance": 0.01}, HOLDS),
        ({"check": "close", "a": "heads[h=1].acc", "b": "heads[h=8].acc", "tolerance": 0.01}, FAILS),
        ({"check": "close", "a": "grad[lstm].rho", "b": "grad[gru].rho", "rel": 0.02}, HOLDS),
        ({"check": "beats", "a": "lag[arch=lstm].acc", "b": "lag[arch=rnn].acc"}, HOLDS),
        ({"check": "beats", "a": "lag[arch=rnn].acc", "b": "lag[arch=lstm].acc"}, FAILS),
        ({"check": "beats", "a": "heads[h=1].acc", "b": "heads[h=4].acc", "better": "lower"}, HOLDS),
        ({"check": "beats", "a": "grad[gru].rho", "b": "grad[lstm].rho", "margin": 0.05}, FAILS),
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
        ({"check": "exponent_between", "value": "mem[naive].exp", "low": 1.7, "high": 2.2}, HOLDS),
        ({"check": "finite", "value": "lag[arch=lstm].acc"}, HOLDS),
        ({"check": "finite", "value": "lag[arch=clip].acc"}, INCONCLUSIVE),  # one seed of three diverged
        ({"check": "finite", "value": "lag[arch=nan].acc"}, FAILS),  # every seed diverged
    ],
)
def test_check_kinds(spec, verdict):
    r = run(spec)
    assert r.verdict == verdict, r.reason
    assert r.expected and r.reason


def test_a_check_can_set_its_own_spread_factor():
    # Overlapping seeds, A ahead in each: gap 0.1 against a seed range of 0.4.
    r = Resolver(
        {
            "m": {
                f"arch={a},seed={i}": {"x": v}
                for a, vals in {"a": (1.0, 1.4, 1.2), "b": (0.9, 1.3, 1.1)}.items()
                for i, v in enumerate(vals)
            }
        }
    )
    spec = {"check": "beats", "a": "m[arch=a].x", "b": "m[arch=b].x"}
    assert evaluate(validate_check(spec, "t"), r).verdict == INCONCLUSIVE  # in every seed, inside the spread
    assert evaluate(validate_check(spec, "t"), r, spread_factor=0.2).verdict == HOLDS
    assert evaluate(validate_check({**spec, "spread_factor": 0}, "t"), r, spread_factor=3).verdict == HOLDS


def test_a_base_below_its_floor_leaves_the_shape_not_measured_and_says_why():
    # A model that never learned the short case says nothing about a cliff (or flatness).
    r = run({"check": "cliff", "value": "bleu[arch=weak].long", "base": "bleu[arch=weak].short", "base_at_least": 20})
    assert r.verdict == NOT_MEASURED and "did not learn the easy case" in r.reason
    assert "seed 0: base 10" in r.reason
    assert r.measured["ratio"]["0"] == pytest.approx(0.2)  # the values still reach the report


def test_a_seed_that_breaks_the_ratio_beside_one_that_keeps_it_is_inconclusive_whatever_the_floor():
    meas = {
        "bleu": {
            **{f"arch=x,seed={i}": {"short": s, "long": lo} for i, (s, lo) in enumerate([(90, 89), (95, 40), (10, 9)])}
        }
    }
    spec = {"check": "flat", "value": "bleu[arch=x].long", "base": "bleu[arch=x].short", "base_at_least": 50}
    r = evaluate(validate_check(spec, "t"), Resolver(meas, {}))
    assert r.verdict == INCONCLUSIVE and "seed 1: ratio 0.42" in r.reason and "seed 2: base 10" in r.reason
    assert r.evidence["margins"].keys() == {"0", "1"}  # the seed below the floor is not judged


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
