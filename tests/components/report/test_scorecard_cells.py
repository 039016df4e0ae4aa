"""Architecture cells: a single measurement (a count) can be judged under a multi-seed scorecard."""

import json

import pytest

from components import Context, get

EXPECT = [
    {"id": 1, "claim": "counts do not change", "check": "equals", "value": "params.spread", "to": 0, "min_seeds": 1}
]


def card(tmp_path, cell):
    out = get("report.scorecard")(
        Context(tmp_path),
        measurements={"params": {"spread": 0}},
        expect=EXPECT,
        architectures={"rnn": {"B1": cell}},
        min_seeds=3,
    )
    return json.loads(open(out["scorecard"]).read())["architectures"]["rnn"]["B1"]


@pytest.mark.slow
def test_cell_min_seeds_lets_a_single_measurement_be_judged(tmp_path):
    # a count is compared as it is when the cell says exact
    cell = {"check": "equals", "value": "params.spread", "to": 0, "label": "constant", "min_seeds": 1, "exact": True}
    got = card(tmp_path / "a", cell)
    assert got["verdict"] == "holds" and "equal: 0 vs 0" in got["reason"] and "exact value" in got["reason"]
    # without exact it is judged too, but one value with no uncertainty of its own cannot decide
    got = card(tmp_path / "c", {k: v for k, v in cell.items() if k != "exact"})
    assert got["verdict"] == "inconclusive" and "needs at least 2 seeds" in got["reason"]


def test_without_it_the_scorecard_wide_seed_count_applies(tmp_path):
    cell = {"check": "equals", "value": "params.spread", "to": 0, "label": "constant"}
    assert card(tmp_path / "b", cell)["verdict"] == "not measured"


def test_a_flat_cell_shows_the_ratio_per_seed_not_the_raw_value(tmp_path):
    bleu = {f"arch=x,seed={i}": {"long": lo, "short": sh} for i, (lo, sh) in enumerate([(45, 50), (40, 50), (30, 60)])}
    cell = {"check": "flat", "value": "bleu[*].long", "base": "bleu[*].short", "ratio": 0.85, "label": "long / short"}
    out = get("report.scorecard")(
        Context(tmp_path),
        measurements={"params": {"spread": 0}, "bleu": bleu},
        expect=EXPECT,
        architectures={"s2s": {"B3": cell}},
        min_seeds=3,
    )
    got = json.loads(open(out["scorecard"]).read())["architectures"]["s2s"]["B3"]
    assert sorted(got["measured"].values()) == [0.5, 0.8, 0.9]
    assert abs(got["mean"] - 2.2 / 3) < 1e-9 and got["verdict"] == "inconclusive"  # flat in 1 seed of 3
