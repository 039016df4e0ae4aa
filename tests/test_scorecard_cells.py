"""Architecture cells: a single measurement (a count) can be judged under a multi-seed scorecard."""
import json

from components import Context, get

EXPECT = [{"id": 1, "claim": "counts do not change", "check": "equals", "value": "params.spread", "to": 0,
           "min_seeds": 1}]


def card(tmp_path, cell):
    out = get("report.scorecard")(Context(tmp_path), measurements={"params": {"spread": 0}}, expect=EXPECT,
                                  architectures={"rnn": {"B1": cell}}, min_seeds=3)
    return json.loads(open(out["scorecard"]).read())["architectures"]["rnn"]["B1"]


def test_cell_min_seeds_lets_a_single_measurement_be_judged(tmp_path):
    cell = {"check": "equals", "value": "params.spread", "to": 0, "label": "constant", "min_seeds": 1}
    assert card(tmp_path / "a", cell)["verdict"] == "holds"


def test_without_it_the_scorecard_wide_seed_count_applies(tmp_path):
    cell = {"check": "equals", "value": "params.spread", "to": 0, "label": "constant"}
    assert card(tmp_path / "b", cell)["verdict"] == "not measured"
