"""train.model trains as recorded: within a stated tolerance on any CPU, bit for bit on a recorded one.

What is compared, and why not bits everywhere: tests/README.md (Golden runs) and golden.py.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from golden import FIXTURE, MODEL, TOLERANCE, _train, cases, cpu_fingerprint  # noqa: E402
from test_train_standins import write_sequence_data  # noqa: E402

BF16 = dict(model=MODEL, steps=8, batch_size=8, optimizer="adadelta", lr=1.0, clip="value", clip_value=0.5)
BF16 |= dict(bf16=True, log_every=3, deterministic=True)


def close(got, want, rel: float) -> bool:
    """Equal structures whose floats agree within ``rel`` (NaN equals NaN, inf equals inf)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and sorted(got) == sorted(want) and all(close(got[k], want[k], rel) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(close(g, w, rel) for g, w in zip(got, want))
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=rel, abs_tol=rel)
    return got == want


def weight_gap(got: dict[str, list[float]], want: dict[str, list[float]]) -> float:
    """The largest projection difference of two weight summaries (inf on another shape)."""
    if sorted(got) != sorted(want) or any(got[k][0] != want[k][0] for k in want):
        return math.inf
    return max(_gap(g, w) for k in want for g, w in zip(got[k], want[k]))


def _gap(g: float, w: float) -> float:
    if g == w or (math.isnan(g) and math.isnan(w)):  # a diverged run's weights are NaN or inf both times
        return 0.0
    return math.inf if math.isnan(g) or math.isnan(w) else abs(g - w) / max(1.0, abs(w))  # relative past 1


def mismatches(got: dict, recorded: dict) -> list[str]:
    """The parts of one case that differ from its record, as messages."""
    if got["data"] != recorded["data"]:
        return ["the data changed, not the trainer"]
    out = []
    if got["params"] != recorded["params"]:
        out.append(f"params differs:\n{got['params']}\n!=\n{recorded['params']}")
    if (gap := weight_gap(got["weights"], recorded["weights"])) > TOLERANCE["weights_rms"]:
        out.append(f"weights differs by {gap:.3g} (tolerance {TOLERANCE['weights_rms']})")
    for part in ("summary", "metrics"):
        if not close(got[part], recorded[part], TOLERANCE["values_rel"]):
            out.append(f"{part} differs:\n{got[part]}\n!=\n{recorded[part]}")
    bits = recorded["exact"].get(cpu_fingerprint())
    mine = got["exact"][cpu_fingerprint()]
    if bits is not None and bits != {k: mine[k] for k in bits}:  # a CPU may have its weights' bits alone
        out.append(f"bits differ on a CPU recorded bit for bit ({cpu_fingerprint()}): {mine} != {bits}")
    return out


def test_training_matches_the_recorded_runs(tmp_path):
    want = json.loads(FIXTURE.read_text())
    got = json.loads(json.dumps(cases(tmp_path)))  # the fixture's JSON round trip (NaN stays NaN)
    assert sorted(got) == sorted(want)
    bad = {name: msgs for name in want if (msgs := mismatches(got[name], want[name]))}
    assert not bad, "\n".join(f"{name}: {m}" for name, msgs in bad.items() for m in msgs)


@pytest.mark.parametrize("change", [{"lr": 0.9}, {"steps": 7}, {"clip_value": 0.001}])
def test_the_tolerance_still_catches_a_change_to_training(tmp_path, change):
    """A 10% learning rate, one step fewer or a clip that bites moves the weights far past the tolerance."""
    recorded = json.loads(FIXTURE.read_text())["classify_adadelta_clip_value_bf16"]
    seq = str(write_sequence_data(tmp_path / "seq", n=96))
    got = json.loads(json.dumps(_train(tmp_path, "changed", data=seq, **(BF16 | change))))
    assert weight_gap(got["weights"], recorded["weights"]) > 20 * TOLERANCE["weights_rms"]
    assert any(m.startswith("weights differs by") for m in mismatches(got, recorded))
