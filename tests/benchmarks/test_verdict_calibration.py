"""benchmarks/verdict_calibration.py measures the verdicts' error rates by simulation: checked here small.

The full run (10000 sims a cell) takes about 20 minutes; here two kinds at 5 seeds, 300 sims a cell,
go through the real ``checks.evaluate`` in this process, with loose bounds on what they must show.
"""

import json
from pathlib import Path

from tests.support.benchmarks import load

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load("verdict_calibration")


B = _bench()


def test_null_rates_are_near_their_level_and_power_shows_at_five_seeds(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    code = B.main(["--sims", "300", "--kinds", "at_least,beats", "--seeds", "5", "--workers", "1", "--json", str(out)])
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    rows = {(r["kind"], r["own"]): r for r in result["grid"]}
    assert set(rows) == {(k, own) for k in ("at_least", "beats") for own in (False, True)}
    for (kind, own), r in rows.items():
        assert r["sims"] == 300 and r["errors"] == 0, (kind, own, r)
        assert r["false_holds"] < 0.08 and r["false_fails"] < 0.08, (kind, own, r)  # 2.5% by design
    assert rows[("at_least", False)]["power"] > 0.6  # about 90% at 2 sd with 5 seeds
    assert rows[("beats", False)]["power"] > 0.6
    assert result["machine"]["rng_seed"] == B.RNG_SEED and result["family"] == [] and result["bleu"] == []
    assert "false holds" in printed and "numpy" in printed and f"seed {B.RNG_SEED}" in printed
    assert code == (1 if result["missed"] else 0)


def test_skipping_the_seeds_needed_hint_leaves_every_verdict_as_it_was():
    task = dict(
        row="grid",
        cell="at_least|3|no|null",
        chunk=0,
        sims=40,
        seed=B.RNG_SEED,
        kind="at_least",
        seeds=3,
        own=False,
        scenario="null",
        cost=1.0,
    )
    from components import stats

    real = stats.seeds_needed
    full = B.run_grid(task)["counts"]
    with B.seeds_needed_skipped():
        assert stats.seeds_needed is not real
        stubbed = B.run_grid(task)["counts"]
    assert stats.seeds_needed is real
    assert stubbed == full and full.get("inconclusive", 0) > 30  # the stub only ever ran on inconclusive ones
