"""benchmarks/train.py --families compares like with like: its bare loop trains the trainer's model.

The throughput ratio it prints means something only if the bare loop does the trainer's work per
step (the same batches, teacher forcing, loss on real tokens, Adam, clipping, warm-up). Here each
data kind's bare loop and ``train.model`` start from one seed, train a few steps and must end with
the same weights.
"""

import time
from pathlib import Path

import pytest
import torch

from components import Context, get
from tests.support.benchmarks import load

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load("train")


B = _bench()
FAMILIES = {label: (spec, model, kw) for label, spec, model, kw in B.FAMILIES}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return {"root": tmp_path_factory.mktemp("data"), "made": {}}


@pytest.mark.parametrize(
    "label, small_data",
    [
        ("lstm", {"n_train": 256, "n_valid": 32, "n_test": 32}),  # sequence classification
        ("transformer", {"n_train": 256, "n_valid": 32, "n_test": 32}),  # translation, kept projection, warm-up
        ("tagger", {"n_train": 256, "n_valid": 32, "n_test": 32}),  # several lookups per position
        ("cnn", {}),  # images
    ],
)
def test_the_bare_loop_trains_the_trainers_model(tmp_path, made, label, small_data):
    (name, data_kw), model, kw = FAMILIES[label]
    data = B._family_data(made["root"], (name, {**data_kw, **small_data}), made["made"])
    kept: list = []
    B.bare_family_loop(data, model, kw, 4, time.perf_counter, keep=kept)
    out = get("train.model")(Context(tmp_path), data=data, model=model, steps=4, checkpoint_every=0, **kw)
    ours = torch.load(out["checkpoint"], weights_only=False)["state_dict"]
    bare = kept[0].state_dict()
    assert set(bare) == set(ours)
    for key, value in bare.items():
        torch.testing.assert_close(ours[key], value, rtol=1e-5, atol=1e-6, msg=f"{label}: {key} differs")
    # four steps of Adam moved the weights away from their initialisation in both loops
    torch.manual_seed(0)
    from components.train.build import build_model, data_overrides
    from components.train.tasks import Task

    meta = Task(data, "cpu").meta
    init = build_model(model, {**data_overrides(meta, model), **kw.get("overrides", {})}).state_dict()
    assert any(not torch.equal(init[k], bare[k]) for k in bare if bare[k].is_floating_point())


def test_every_family_the_quick_profile_trains_is_in_the_table():
    import yaml

    text = (ROOT / "pipelines" / "four_bottlenecks.yaml").read_text()
    steps = yaml.safe_load(text)["steps"]
    trained = {
        s["with"]["model"]
        for s in steps.values()
        if s.get("uses") == "train.model" and not str(s["with"]["model"]).startswith("${")
    }
    listed = {model for _, _, model, _ in B.FAMILIES}
    assert trained <= listed, f"trained in the quick profile but not benchmarked: {sorted(trained - listed)}"
