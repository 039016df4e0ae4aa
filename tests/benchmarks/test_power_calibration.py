"""benchmarks/power_calibration.py sets ``stats.power`` beside the real test, simulated: checked here small."""

import json

from tests.support.benchmarks import load

B = load("power_calibration")


def test_the_table_sets_the_old_and_the_new_power_beside_the_simulated_test(tmp_path, capsys):
    out = tmp_path / "power.json"
    code = B.main(["--sims", "200", "--json", str(out)])
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert len(rows) == len(B.cells()) and all(r["sims"] == 200 for r in rows)
    known = {(r["look"], r["n"], r["share"], r["effect"]) for r in rows if r["table"] == "known"}
    assert known == {
        (k, n, s, e) for k in ("single", "first look") for n in B.SEEDS for s in B.SHARES for e in B.EFFECTS
    }
    for r in rows:
        if r["table"] == "known" and r["share"] == 0:  # no shared error: the old formula was exact
            assert abs(r["power"] - r["old_nct"]) < 1e-4, r
    worst = max(rows, key=lambda r: abs(r["old_nct"] - r["power"]))
    assert abs(worst["old_nct"] - worst["power"]) > 0.2  # where the shared error dominates
    assert "old nct" in printed and "simulated" in printed and "first look" in printed
    assert code == (1 if result["missed"] else 0)


def test_a_cell_repeats_exactly_from_its_seed():
    cell = B.cells()[0]
    assert B.simulate(cell, 50) == B.simulate(cell, 50)
