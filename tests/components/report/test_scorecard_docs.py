"""docs/scorecard.md stays true: its YAML validates, and its 18 claims judge hand-made measurements."""

import json
import re
from pathlib import Path

import yaml

from components import Context, get
from components.report import validate_expectations
from components.report.rows import validate_architectures

DOC = Path(__file__).resolve().parents[3] / "docs" / "scorecard.md"
BLOCKS = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)]


def _find(tree, key):
    """Yield every value stored under ``key`` anywhere in a parsed YAML tree."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == key:
                yield v
            yield from _find(v, key)
    elif isinstance(tree, list):
        for v in tree:
            yield from _find(v, key)


def test_every_yaml_example_validates():
    expects = [e for b in BLOCKS for e in _find(b, "expect")]
    archs = [a for b in BLOCKS for a in _find(b, "architectures")]
    assert len(expects) >= 3 and len(archs) >= 2
    for e in expects:
        validate_expectations(e)
    for a in archs:
        validate_architectures(a)


def seeds(axis_values: dict[str, tuple], key: str, extra: str = "") -> dict:
    """Instances ``<axis>,seed=i`` -> {key: value_i} for each labelled tuple of seed values."""
    return {f"{lab}{extra},seed={i}": {key: v} for lab, vals in axis_values.items() for i, v in enumerate(vals)}


def merge(*parts):
    out: dict = {}
    for p in parts:
        for lab, summary in p.items():
            out.setdefault(lab, {}).update(summary)
    return out


# Prototype-scale numbers in the spirit of the calibration notes (three seeds each), each claim clear of
# its threshold by several standard errors of the seeds' mean (3 seeds: t = 4.30 on 2 df).
MEASUREMENTS = {
    "varlen": {"rnn": {"n_params/T_10": 4232, "n_params/T_100": 4232}},
    "bleu": merge(
        seeds({"arch=seq2seq": (57, 53, 58)}, "bleu/5_10"),
        seeds({"arch=seq2seq": (30, 27, 28)}, "bleu/11_20"),
        seeds({"arch=seq2seq": (12, 10, 9)}, "bleu/31_40"),
        seeds({"arch=seq2seq": (30, 28, 30)}, "bleu/all"),
        seeds({"arch=luong": (99, 100, 99)}, "bleu/5_10"),
        seeds({"arch=luong": (99, 99, 99)}, "bleu/11_20"),
        seeds({"arch=luong": (98, 99, 98)}, "bleu/31_40"),
        seeds({"arch=seq2seq_reversed": (8, 9, 7)}, "bleu/all"),
    ),
    "grad": seeds(
        {
            "arch=rnn": (0.50, 0.49, 0.51),
            "arch=lstm": (0.62, 0.62, 0.63),
            "arch=gru": (0.63, 0.63, 0.64),
            "arch=transformer": (1.0, 0.999, 1.0),
        },
        "rho",
    ),
    "lag": merge(
        seeds(
            {
                "arch=rnn": (0.13, 0.16, 0.13),
                "arch=lstm": (0.99, 0.99, 0.99),
                "arch=gru": (1.0, 1.0, 1.0),
                "arch=rnn_clip": (0.12, 0.13, 0.12),
            },
            "acc",
            ",lag=50",
        ),
        seeds({"arch=rnn_clip": (2.07, 2.08, 2.07)}, "loss", ",lag=50"),
    ),
    "bias": merge(
        seeds({"forget_bias=0": (0.12, 0.13, 0.12), "forget_bias=1": (1.0, 0.999, 1.0)}, "acc", ",lag=15"),
        seeds({"forget_bias=0": (0.12, 0.13, 0.13), "forget_bias=3": (0.99, 1.0, 0.99)}, "acc", ",lag=50"),
    ),
    "align": merge(
        seeds({"arch=luong": (0.81, 0.78, 0.84)}, "diagonal_mass"),
        seeds({"arch=luong": (0.12, 0.12, 0.12)}, "diagonal_mass_uniform"),
    ),
    "timing": {"T": 512, "seq_steps/rnn": 512, "seq_steps/attention_per_layer": 1, "speedup/T_2048": 0.7},
    "cost": {
        "mem/naive/T_256": 30.0,
        "mem/naive/T_512": 110.0,
        "mem/naive/T_1024": 420.0,
        "mem/naive/T_2048": 1800.0,
        "mem_exponent/rnn": 1.02,
        "mem_exponent/sdpa": 0.79,
        "flops_exponent/sdpa": 1.95,
        # each reported fit's own 95% half-width (the timing probe's ``*_exp_ci``): one run, judged on it
        "mem_exponent_ci/rnn": 0.1,
        "mem_exponent_ci/sdpa": 0.05,
        "flops_exponent_ci/sdpa": 0.1,
    },
    "perm": {"max_diff/no_positions": 7e-7, "max_diff/positions": 3.5},
    "pos": seeds({"kind=learned": (1.0, 0.995, 0.99), "kind=sinusoidal": (0.995, 0.99, 0.99)}, "acc"),
    "heads": seeds(
        {"n_heads=1": (0.92, 0.95, 0.93), "n_heads=4": (1.0, 1.0, 1.0), "n_heads=16": (1.0, 0.999, 1.0)}, "acc"
    ),
    "entropy": {  # at initialisation, over seeds
        f"seed={i}": {"unscaled/d_16": a, "unscaled/d_64": b, "unscaled/d_256": c, "scaled/d_256": d}
        for i, (a, b, c, d) in enumerate(
            [(0.80, 0.45, 0.235, 0.99), (0.79, 0.46, 0.22, 0.98), (0.81, 0.44, 0.24, 0.99)]
        )
    },
    "images": merge(
        seeds({"arch=cnn": (0.980, 0.987, 0.983), "arch=vit": (0.944, 0.958, 0.950)}, "acc"),
        seeds({"arch=vit": (0.20, 0.24, 0.26)}, "pos_neighbour_gap"),
    ),
    "caption": {
        "seed=0": {"gaze_x/digit_0": 4.0, "gaze_x/digit_1": 12.5, "gaze_x/digit_2": 21.0},
        "seed=1": {"gaze_x/digit_0": 3.5, "gaze_x/digit_1": 13.0, "gaze_x/digit_2": 20.0},
        "seed=2": {"gaze_x/digit_0": 4.5, "gaze_x/digit_1": 11.0, "gaze_x/digit_2": 22.5},
    },
}


# a parameter count, a count of sequential steps, a float64 structural test: single values no seed moves
EXACT_CLAIMS = {1, 10, 13}


def test_the_issues_18_claims_are_judged_on_cpu(tmp_path):
    claims = next(e for b in BLOCKS for e in _find(b, "expect") if len(e) == 18)
    claims = [c | {"exact": True} if c["id"] in EXACT_CLAIMS else c for c in claims]
    out = get("report.scorecard")(Context(work_dir=tmp_path), measurements=MEASUREMENTS, expect=claims, min_seeds=3)
    card = json.loads(Path(out["scorecard"]).read_text())
    by_id = {c["id"]: c for c in card["claims"]}
    verdicts = {c["id"]: c["verdict"] for c in card["claims"]}
    assert verdicts.pop("8") == "fails", by_id["8"]["reason"]  # reversal hurt on the toy task in calibration
    assert verdicts.pop("12") == "device-dependent"  # judged on a GPU only
    # identical seeds are not exact: "LSTM and GRU solve it" is said of the typical run (of: median), whose
    # sign test needs 6 seeds at 1.0; three finite runs likewise (the sign test, 6 seeds)
    assert verdicts.pop("4") == "inconclusive" and "the median of 3 seeds, 3 of 3" in by_id["4"]["reason"]
    assert verdicts.pop("5") == "inconclusive" and "exact sign test" in by_id["5"]["reason"]
    assert set(verdicts.values()) == {"holds"}, {k: by_id[k]["reason"] for k, v in verdicts.items() if v != "holds"}
    assert out["summary"]["device_independent"] == 17 and out["summary"]["device_independent_holds"] == 14
    assert "exact value" in by_id["1"]["reason"] and "its own interval" in by_id["11"]["reason"]
    assert "A does not beat B in seed 0, seed 1, seed 2" in by_id["8"]["reason"]


def test_a_count_without_exact_is_inconclusive_not_holds(tmp_path):
    claims = next(e for b in BLOCKS for e in _find(b, "expect") if len(e) == 18)
    one = [{k: v for k, v in c.items() if k != "exact"} for c in claims if c["id"] == 1]
    out = get("report.scorecard")(Context(work_dir=tmp_path), measurements=MEASUREMENTS, expect=one, min_seeds=3)
    claim = json.loads(Path(out["scorecard"]).read_text())["claims"][0]
    assert claim["verdict"] == "inconclusive" and "needs at least 2 seeds" in claim["reason"]


def test_the_doc_marks_its_count_and_structural_claims_exact():
    # docs/scorecard.md: "Exact quantities (exact: true on a check or a claim): a parameter count, a count
    # of sequential steps, a float64 structural test"; pipelines/four_bottlenecks.yaml marks its claims so
    claims = next(e for b in BLOCKS for e in _find(b, "expect") if len(e) == 18)
    unmarked = sorted(c["id"] for c in claims if c["id"] in EXACT_CLAIMS and c.get("exact") is not True)
    assert unmarked == [], f"docs/scorecard.md: mark claims {unmarked} `exact: true`, or they read inconclusive"


def test_a_missing_probe_leaves_its_claims_not_measured(tmp_path):
    claims = next(e for b in BLOCKS for e in _find(b, "expect") if len(e) == 18)
    partial = {k: v for k, v in MEASUREMENTS.items() if k != "bleu"}
    out = get("report.scorecard")(Context(work_dir=tmp_path), measurements=partial, expect=claims, min_seeds=3)
    card = json.loads(Path(out["scorecard"]).read_text())
    assert {c["id"] for c in card["claims"] if c["verdict"] == "not measured"} == {"2", "7", "8"}
    assert "no source 'bleu'" in next(c["reason"] for c in card["claims"] if c["id"] == "7")
