"""benchmarks/history_calibration.py measures history's false alarms and power by simulation: checked here
small (a few hundred simulated nights through the real judge, loose bounds on what they must show)."""

import json

import numpy as np
import pytest

from flows.ops import history
from tests.support.benchmarks import load

B = load("history_calibration")


@pytest.mark.slow  # about 300 simulated nights through the judge: a few seconds
def test_unchanged_nights_rarely_alarm_and_a_three_sd_drop_is_found_with_five_seeds():
    rng = np.random.default_rng(B.RNG_SEED)
    with B.fast_judging():
        null = B.seeded_row(history, rng, seeds=5, metrics=1, shift=0.0, sims=200)
        drop = B.seeded_row(history, rng, seeds=5, metrics=1, shift=-3.0, sims=40)
        steady = B.one_seed_row(history, rng, cv=0.02, sims=20)
    assert null["regression"] < 0.07 and null["improvement"] < 0.07  # 2.5% each by design
    assert drop["shift_found"] > 0.8  # about 99% for Welch's t over 5 and 5 seeds at 3 sd
    assert steady["any"] == 0.0  # a 25% threshold is 12 seed sds away at a 2% spread


def test_the_script_prints_its_table_and_settings_and_exits_by_its_targets(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    code = B.main(["--sims", "3", "--seeds", "3", "--json", str(out)])
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert [(r["seeds"], r["metrics"], r["shift"]) for r in result["seeded"]][:4] == [
        (3, 1, 0.0),
        (3, 1, -1.0),
        (3, 1, -2.0),
        (3, 1, -3.0),
    ]
    assert [r["cv"] for r in result["one_seed"]] == list(B.CVS)
    assert "false regression" in printed and "scipy" in printed and f"rng seed {B.RNG_SEED}" in printed
    assert code == (1 if result["missed"] else 0)
