"""The group-sequential design (components/report/sequential.py): boundaries against published tables,
the planned looks, the walk over them, and the stage-wise p-value.

Published boundaries (one-sided alpha 0.025, equally spaced looks; the same as the upper boundaries
of the symmetric two-sided 0.05 designs to the digits printed):

- Lan-DeMets O'Brien-Fleming-type spending, K = 3: 3.710, 2.511, 1.993 (gsDesign R package,
  ``gsDesign(k=3, test.type=1, sfu=sfLDOF)``); K = 5: 4.877, 3.357, 2.680, 2.290, 2.031 (DeMets & Lan
  1994, Statistics in Medicine 13, Table I; Jennison & Turnbull 2000, Table 7.6).
- Lan-DeMets Pocock-type spending, K = 5: 2.438, 2.427, 2.410, 2.397, 2.386 (the same tables).
- Classical designs (Jennison & Turnbull 2000, Tables 2.1 and 2.3, two-sided 0.05): Pocock's constant
  boundary C_P(3) = 2.289, C_P(5) = 2.413; O'Brien & Fleming's C_B(3) = 2.004, boundary
  C_B * sqrt(K / k).
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from components.report import sequential
from components.report.sequential import Design, boundaries, crossings, looks, spend, validate_design, walk


@pytest.mark.parametrize(
    "spending, t, published",
    [
        ("obrien-fleming", [1 / 3, 2 / 3, 1], [3.710, 2.511, 1.993]),
        ("obrien-fleming", [0.2, 0.4, 0.6, 0.8, 1], [4.877, 3.357, 2.680, 2.290, 2.031]),
        ("pocock", [0.2, 0.4, 0.6, 0.8, 1], [2.438, 2.427, 2.410, 2.397, 2.386]),
    ],
)
def test_boundaries_match_the_published_tables(spending, t, published):
    assert boundaries(t, 0.025, spending) == pytest.approx(published, abs=0.0015)


def test_the_crossing_probabilities_give_the_classical_pocock_and_obrien_fleming_constants():
    for k, c_p in ((3, 2.289), (5, 2.413)):
        t = [(i + 1) / k for i in range(k)]
        constant = optimize.brentq(lambda c, t=t, k=k: sum(crossings([c] * k, t)) - 0.025, 1.5, 4.0)
        assert constant == pytest.approx(c_p, abs=0.001)
    t = [1 / 3, 2 / 3, 1]
    obf = optimize.brentq(lambda c: sum(crossings([c * math.sqrt(3 / (i + 1)) for i in range(3)], t)) - 0.025, 1, 4)
    assert obf == pytest.approx(2.004, abs=0.001)


def test_the_recursive_integration_agrees_with_scipys_multivariate_normal():
    t = [0.3, 0.6, 1.0]
    bounds = boundaries(t)
    cov = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in t] for a in t])
    none = stats.multivariate_normal.cdf(bounds, cov=cov, abseps=1e-7, releps=0, rng=np.random.default_rng(0))
    assert sum(crossings(bounds, t)) == pytest.approx(1 - none, abs=2e-6)
    assert sum(crossings(bounds, t)) == pytest.approx(0.025, abs=1e-9)  # the spending, met exactly


def test_spending_functions():
    assert spend(1.0) == pytest.approx(0.025)
    assert spend(1.0, spending="pocock") == pytest.approx(0.025)
    assert spend(0.5) == pytest.approx(2 * stats.norm.sf(stats.norm.isf(0.0125) / math.sqrt(0.5)))
    assert spend(0.5, spending="pocock") == pytest.approx(0.025 * math.log(1 + (math.e - 1) / 2))
    with pytest.raises(ValueError, match="spending must be one of"):
        spend(0.5, spending="haybittle")


@pytest.mark.parametrize(
    "first, most, planned",
    [
        (3, 10, [3, 6, 10]),
        (6, 10, [6, 10]),
        (5, 10, [5, 10]),
        (2, 20, [2, 4, 8, 20]),  # 16 then 20 adds a fifth of 20: 16 is dropped
        (5, 11, [5, 11]),  # 10 then 11 adds one seed: 10 is dropped
        (2, 40, [2, 5, 15, 40]),  # doubling gives 5 looks: 4, evenly spaced on a log scale
        (3, 5, [3, 5]),
        (10, 10, [10]),
        (12, 10, [12]),
    ],
)
def test_looks(first, most, planned):
    assert looks(first, most) == planned
    assert len(planned) <= sequential.MOST_LOOKS


def test_looks_refuses_nonsense():
    with pytest.raises(ValueError, match="at least 1"):
        looks(0, 10)
    with pytest.raises(ValueError, match="whole numbers"):
        looks(2.5, 10)


def test_the_design_3_6_10_levels_and_spending():
    d = Design.planned(3, 10)
    assert d.looks == (3, 6, 10)
    assert d.bounds == pytest.approx([3.9286, 2.6700, 1.9810], abs=1e-4)
    # interim levels from the Lan-DeMets boundaries; the last is what they leave (the union bound)
    assert d.levels[0] == pytest.approx(stats.norm.sf(d.bounds[0]))
    assert d.levels[1] == pytest.approx(stats.norm.sf(d.bounds[1]))
    assert d.levels == pytest.approx([4.273e-5, 0.003793, 0.021164], rel=1e-3)
    assert sum(d.levels) == pytest.approx(0.025)
    assert d.spent == pytest.approx(np.cumsum(d.levels).tolist())
    assert Design.planned(10, 10).levels == (pytest.approx(0.025),)  # one look: the fixed design


def test_the_stagewise_p_decides_where_the_look_does():
    d = Design.planned(3, 10)
    assert d.stagewise_p(0, 0.01) == pytest.approx(0.01)
    assert d.stagewise_p(1, 0.002) == pytest.approx(d.levels[0] + 0.002)
    for k, level in enumerate(d.levels):
        assert d.stagewise_p(k, level) == pytest.approx(d.spent[k])  # on the boundary: the error spent
        assert d.stagewise_p(k, level * 1.01) > d.spent[k]
    assert d.stagewise_p(2, 0.999) == 1.0  # capped: 0.0038 + 0.999
    assert d.stagewise_p(1, None) is None


def test_the_stagewise_p_is_a_valid_p_value_under_the_null():
    """P(p <= u) <= u for a walk of t tests over 3 -> 6 -> 10 seeds at the null (simulated)."""
    d = Design.planned(3, 10)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((40000, 10))
    p_stage = np.ones(len(x))
    alive = np.ones(len(x), bool)
    for k, n in enumerate(d.looks):
        y = x[:, :n]
        p = stats.t.sf(y.mean(1) / (y.std(1, ddof=1) / math.sqrt(n)), n - 1)
        stop = alive & ((p <= d.levels[k]) | (k == len(d.looks) - 1))
        p_stage[stop] = [d.stagewise_p(k, v) for v in p[stop]]
        alive &= ~stop
    for u in (0.005, 0.025, 0.05, 0.2):
        rate = (p_stage <= u).mean()
        assert rate <= u + 3 * math.sqrt(u * (1 - u) / len(x))


def _t_judge(values, calls=None):
    """judge_at over per-seed values: the one-sided t test of the mean > 0 and its mirror, at the level."""

    def judge_at(n, level):
        if calls is not None:
            calls.append((n, level))
        y = np.asarray(values[:n], float)
        t = y.mean() / (y.std(ddof=1) / math.sqrt(n))
        p_holds, p_fails = float(stats.t.sf(t, n - 1)), float(stats.t.cdf(t, n - 1))
        verdict = "holds" if p_holds <= level else "fails" if p_fails <= level else "inconclusive"
        return verdict, p_holds, p_fails

    return judge_at


LARGE = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0]  # t = 173 at 3 seeds
MODERATE = [0.9, 1.4, 0.2, 1.6, 0.5, 1.1, 0.8, 1.3, 0.4, 1.2]  # t = 2.3 at 3 seeds, 5.6 at 6
SMALL = [0.3, -0.5, 0.8, -0.2, 0.6, -0.4, 0.9, -0.1, 0.5, -0.3]  # mean 0.16, sd 0.5
NULLISH = [0.5, -0.5, 0.1, -0.1, 0.4, -0.4, 0.2, -0.2, 0.05, -0.05]


def test_a_large_effect_decides_at_the_first_look():
    calls = []
    w = walk(_t_judge(LARGE, calls), Design.planned(3, 10), 10)
    assert (w.verdict, w.stopped, w.taken, w.seeds, w.next_seeds) == ("holds", "decided", [3], 3, None)
    assert calls == [(3, pytest.approx(4.2726e-5, rel=1e-3))]
    assert w.spent == pytest.approx(4.2726e-5, rel=1e-3)
    assert w.p_holds == pytest.approx(stats.t.sf(np.mean(LARGE[:3]) / (np.std(LARGE[:3], ddof=1) / math.sqrt(3)), 2))


def test_a_moderate_effect_goes_on_and_decides_at_a_later_look():
    d = Design.planned(3, 10)
    w = walk(_t_judge(MODERATE), d, 10)
    assert (w.verdict, w.stopped, w.taken, w.seeds) == ("holds", "decided", [3, 6], 6)
    assert w.level == pytest.approx(d.levels[1])
    assert w.spent == pytest.approx(d.spent[1])
    assert w.p_holds <= d.spent[1]  # the stage-wise p agrees with the look that decided
    assert w.p == pytest.approx(2 * w.p_holds)


def test_too_few_seeds_for_the_next_look_leave_the_claim_open():
    w = walk(_t_judge(SMALL), Design(looks=(3, 6, 10), futility=0), 8)
    assert (w.verdict, w.stopped, w.taken, w.seeds, w.next_seeds) == ("inconclusive", "open", [3, 6], 6, 10)
    block = w.block()
    assert block["looks"] == [3, 6, 10] and block["taken"] == [3, 6] and block["next_seeds"] == 10
    assert block["spent"] == pytest.approx(0.0038356, rel=1e-4)


def test_undecided_at_the_last_look_is_max_seeds():
    w = walk(_t_judge(SMALL), Design(looks=(3, 6, 10), futility=0), 10)
    assert (w.verdict, w.stopped, w.taken, w.seeds, w.next_seeds) == ("inconclusive", "max_seeds", [3, 6, 10], 10, None)
    assert w.spent == pytest.approx(0.025)
    assert w.power == (None, None)  # no conditional power at the last look


def test_futility_stops_a_claim_neither_verdict_can_reach():
    d = Design.planned(3, 10)  # futility 0.05 by default
    w = walk(_t_judge(NULLISH), d, 10)
    assert (w.stopped, w.taken, w.next_seeds, w.verdict) == ("futile", [3], None, "inconclusive")
    assert max(w.power) < 0.05
    # without futility the same seeds go on to the last look
    assert walk(_t_judge(NULLISH), Design.planned(3, 10, futility=0), 10).stopped == "max_seeds"
    # a moderate effect is not futile at its first look
    assert walk(_t_judge(MODERATE), d, 3).stopped == "open"


def test_conditional_power_under_the_current_trend():
    d = Design.planned(3, 10)
    z, t = 1.0, 0.3
    expected = stats.norm.sf((stats.norm.isf(d.levels[-1]) - z / math.sqrt(t)) / math.sqrt(1 - t))
    assert d.conditional_power(0, stats.norm.sf(z)) == pytest.approx(expected)
    assert d.conditional_power(2, 0.01) is None


def test_a_rerun_with_the_same_seeds_walks_the_same_looks():
    d = Design.planned(3, 10)
    first = walk(_t_judge(MODERATE), d, 10).block()
    assert walk(_t_judge(MODERATE), Design.planned(3, 10), 10).block() == first
    # more seeds than the decision needed change nothing: the looks re-read the first n_k seeds
    assert walk(_t_judge(MODERATE + [5.0, -9.0]), d, 12).block() == first


def test_fewer_seeds_than_the_first_look_spend_nothing():
    calls = []
    w = walk(_t_judge(LARGE, calls), Design.planned(5, 10), 3)
    assert (w.stopped, w.taken, w.next_seeds, w.spent) == ("open", [], 5, 0.0)
    assert calls == [(3, sequential.BEFORE_FIRST)]


def test_the_walk_reads_a_claim_entry_as_well():
    w = walk(lambda n, level: {"verdict": "not measured", "p_holds": None, "p_fails": None}, Design((3, 6)), 6)
    assert (w.stopped, w.taken, w.p) == ("not_measured", [3], None)


def test_validate_design():
    assert validate_design({"max_seeds": 10, "first_look": {"m": 3}}) == {
        "max_seeds": 10,
        "first_look": {"m": 3},
        "spending": "obrien-fleming",
        "futility": 0.05,
    }
    for bad, match in (
        ([], "must be a mapping"),
        ({"first_look": {"m": 3}}, "needs max_seeds"),
        ({"max_seeds": 1}, "at least 2"),
        ({"max_seeds": True}, "whole number"),
        ({"max_seeds": 10, "first_look": {"m": 0}}, r"first_look\['m'\]"),
        ({"max_seeds": 10, "first_look": [3]}, "first_look must map"),
        ({"max_seeds": 10, "spending": "linear"}, "spending must be one of"),
        ({"max_seeds": 10, "futility": 1.5}, "futility"),
        ({"max_seeds": 10, "looks": [3, 6]}, "unknown key"),
    ):
        with pytest.raises(ValueError, match=match):
            validate_design(bad)
