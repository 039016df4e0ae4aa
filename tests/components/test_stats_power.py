"""``stats.power`` models the test as the scorecard runs it: a test-set error shared by every seed (drawn
once, not shrinking with seeds) beside the seeds' spread, the own term known or on its own df, Welch's
df for two groups. Checked against the noncentral t where there is no shared error, and against a
seeded simulation of the real test (``stats.one_sample`` / ``two_sample`` + ``stats.decide``) where
the noncentral t was far off. benchmarks/power_calibration.py prints the whole table."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from components import stats

FIRST_LOOK = 0.010393380546090722  # the first look of 3 -> 6 -> 10 seeds, Pocock-type (sequential.Design)


def nct_power(effect, sd, n, own_se=0.0, *, groups=1, level=stats.ALPHA / 2):
    """The formula ``stats.power`` used before: a noncentral t on ``groups * (n - 1)`` df."""
    se = math.sqrt(groups * sd**2 / n + own_se**2)
    df = groups * (n - 1)
    return float(sps.nct.sf(sps.t.isf(level, df), df, abs(effect) / se))


def simulated_power(effect, sd, n, u, *, level, own_df=math.inf, groups=1, sims=3000, seed=0):
    """The rate of ``holds`` of the real test over ``sims`` experiments: seed noise ``sd`` per seed, one
    shared error ``u`` per experiment (each group its own ``u / sqrt(2)`` for Welch), the own term
    recorded as ``u`` or estimated on ``own_df`` df."""
    rng = np.random.default_rng(seed)
    holds = 0
    real = stats.seeds_needed
    stats.seeds_needed = lambda d: None  # the hint, after the verdict: verdicts unchanged
    try:
        for _ in range(sims):
            if groups == 2:
                half = u / math.sqrt(2)
                a = effect + sd * rng.standard_normal(n) + half * rng.standard_normal()
                b = sd * rng.standard_normal(n) + half * rng.standard_normal()
                est = stats.two_sample(a, b, [half] * n, [half] * n)
            else:
                vals = effect + sd * rng.standard_normal(n) + u * rng.standard_normal()
                u_hat = u * math.sqrt(rng.chisquare(own_df) / own_df) if math.isfinite(own_df) else u
                est = stats.one_sample(vals, [u_hat] * n, own_df=own_df)
            holds += stats.decide(est, 0.0, level=level).verdict == stats.HOLDS
    finally:
        stats.seeds_needed = real
    return holds / sims


def test_the_first_look_level_is_the_planned_designs():
    from components.report.sequential import Design

    assert Design.planned(3, 10, spending="pocock").levels[0] == pytest.approx(FIRST_LOOK, rel=1e-9)
    assert sps.t.isf(FIRST_LOOK, 2) == pytest.approx(6.83, abs=0.01)  # claim 7's first look, 3 seeds


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("level", [stats.ALPHA / 2, FIRST_LOOK, 4.27e-5])
def test_without_a_shared_error_it_is_the_noncentral_t(n, level):
    for delta in (0.0, 0.5, 2.0, 4.0, 8.0):
        effect = delta / math.sqrt(n)
        assert stats.power(effect, 1.0, n, level=level) == pytest.approx(
            nct_power(effect, 1.0, n, level=level), abs=1e-4
        )


@pytest.mark.parametrize(
    "effect, new, old",
    [
        (4.0, 0.0068, 0.330),  # the noncentral t 50 times too high: the reviewer's case
        (6.0, 0.358, 0.583),
    ],
)
def test_a_dominant_shared_error_follows_the_real_test_not_the_noncentral_t(effect, new, old):
    # 3 seeds at a first look, the shared error 80% of a seed's variance
    sd, u = math.sqrt(0.2), math.sqrt(0.8)
    p = stats.power(effect, sd, 3, u, level=FIRST_LOOK)
    before = nct_power(effect, sd, 3, u, level=FIRST_LOOK)
    assert p == pytest.approx(new, abs=5e-4) and before == pytest.approx(old, abs=5e-3)
    sims = 3000
    sim = simulated_power(effect, sd, 3, u, level=FIRST_LOOK, sims=sims)
    mcse = math.sqrt(p * (1 - p) / sims)
    assert abs(sim - p) < 4 * mcse, (sim, p, mcse)
    assert abs(sim - before) > 20 * mcse, (sim, before, mcse)


def test_an_own_term_on_its_own_df_and_welchs_df_follow_the_real_test():
    sims = 3000
    # own term estimated on 4 df, 10 seeds: the test's df stays at min(9, 4) = 4
    sd, u = math.sqrt(0.2), math.sqrt(0.8)
    p = stats.power(4.0, sd, 10, u, level=stats.ALPHA / 2, own_df=4)
    sim = simulated_power(4.0, sd, 10, u, level=stats.ALPHA / 2, own_df=4, sims=sims, seed=1)
    assert abs(sim - p) < 4 * math.sqrt(p * (1 - p) / sims), (sim, p)
    assert nct_power(4.0, sd, 10, u) - p > 0.05  # nct on 9 df
    # Welch, 3 seeds a side, no shared error: its df falls between 2 and 4, not the pooled 4
    half = math.sqrt(0.5)
    p = stats.power(2.0, half, 3, groups=2)
    sim = simulated_power(2.0, half, 3, 0.0, level=stats.ALPHA / 2, groups=2, sims=sims, seed=2)
    assert abs(sim - p) < 4 * math.sqrt(p * (1 - p) / sims), (sim, p)
    assert nct_power(2.0, half, 3, groups=2) - p > 0.08


def test_power_grows_with_seeds_towards_what_the_shared_error_allows():
    sd, u, effect = 1.0, 0.5, 1.5
    ps = [stats.power(effect, sd, n, u) for n in (2, 3, 5, 10, 30, 100, 1000)]
    assert all(a < b for a, b in zip(ps, ps[1:]))
    ceiling = sps.norm.sf(sps.norm.isf(stats.ALPHA / 2) - effect / u)  # infinitely many seeds: u known
    assert ps[-1] < ceiling and ps[-1] == pytest.approx(ceiling, abs=0.01)
    assert stats.power(effect, 0.0, 2, u) == pytest.approx(ceiling, abs=1e-9)
    # on own_df the limit is the noncentral t on those df
    assert stats.power(effect, 0.0, 2, u, own_df=5) == pytest.approx(
        sps.nct.sf(sps.t.isf(stats.ALPHA / 2, 5), 5, effect / u), abs=1e-5
    )


def test_seeds_needed_reads_the_shared_error_and_its_df():
    d = stats.decide(stats.one_sample([0.05, 0.35, 0.02], [0.03] * 3, own_df=30))
    n = d.seeds_needed
    e = d.estimate
    assert d.verdict == stats.INCONCLUSIVE and n is not None and n > 3
    assert stats.power(0.14, e.sd, n, 0.03, own_df=30) >= stats.POWER > stats.power(0.14, e.sd, n - 1, 0.03, own_df=30)
    # the own term on fewer df: the test never gets past them, so more seeds are needed, or none will do
    d4 = stats.decide(stats.one_sample([0.05, 0.35, 0.02], [0.03] * 3, own_df=4))
    assert d4.seeds_needed > n
    d2 = stats.decide(stats.one_sample([0.05, 0.35, 0.02], [0.03] * 3, own_df=2))
    assert stats.power(0.14, 0.0, 2, 0.03, own_df=2) < stats.POWER and d2.seeds_needed is None
    # a shared error the size of the effect: seeds cannot decide it
    big = stats.decide(stats.one_sample([0.05, 0.35, 0.02], [0.08] * 3))
    assert big.verdict == stats.INCONCLUSIVE and big.seeds_needed is None


def test_seeds_needed_is_the_fewest_with_80_percent_power_for_welch_too():
    d = stats.decide(stats.two_sample([1.0, 1.3, 0.8], [0.9, 1.1, 0.7]))
    n, e = d.seeds_needed, d.estimate
    spread = e.sd / math.sqrt(2)
    assert stats.power(d.margin, spread, n, groups=2) >= stats.POWER > stats.power(d.margin, spread, n - 1, groups=2)
