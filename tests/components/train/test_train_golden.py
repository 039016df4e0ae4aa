"""train.model trains as recorded, bit for bit: weights, summary, logged params and metric values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from golden import FIXTURE, cases  # noqa: E402


def test_training_matches_the_recorded_runs(tmp_path):
    want = json.loads(FIXTURE.read_text())
    got = json.loads(json.dumps(cases(tmp_path)))  # the fixture's JSON round trip (NaN stays NaN)
    assert sorted(got) == sorted(want)
    for name, recorded in want.items():
        assert got[name]["data"] == recorded["data"], f"{name}: the data changed, not the trainer"
        for part in ("weights", "summary", "params", "metrics"):
            same = json.dumps(got[name][part], sort_keys=True) == json.dumps(recorded[part], sort_keys=True)
            assert same, f"{name}: {part} differs:\n{got[name][part]}\n!=\n{recorded[part]}"
