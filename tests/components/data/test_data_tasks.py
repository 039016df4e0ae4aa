"""Synthetic probe tasks: determinism per seed, the label rule (checked by an oracle), the format."""

import numpy as np
import pytest
import torch

from components import ComponentError, Context, get
from components.data.errors import DataError
from components.data.io import load_meta, load_split

SMALL = {"n_train": 200, "n_valid": 20, "n_test": 50}


def run(tmp_path, name, sub="a", **params):
    out = get(name)(Context(work_dir=tmp_path / sub), **{**SMALL, **params})
    return out["dataset"]


TASKS = [
    ("data.delayed_recall", {"lag": 7}),
    ("data.delayed_recall", {"lag": 5, "target": "tag"}),
    ("data.adding", {"seq_len": 30}),
    ("data.agreement", {"attractors": 3, "fillers": 2}),
    ("data.multi_lookup", {}),
    ("data.variable_length", {"min_len": 3, "max_len": 12}),
]


@pytest.mark.parametrize("name,params", TASKS)
def test_task_format_and_determinism(tmp_path, name, params):
    a = run(tmp_path, name, "a", seed=3, **params)
    b = run(tmp_path, name, "b", seed=3, **params)
    c = run(tmp_path, name, "c", seed=4, **params)
    meta = load_meta(a)
    assert meta["kind"] == "sequence" and 0 < meta["chance"] < 1 and meta["label_rule"]
    assert meta["counts"] == {"train": 200, "valid": 20, "test": 50}
    for split, n in meta["counts"].items():
        da, db, dc = load_split(a, split), load_split(b, split), load_split(c, split)
        assert len(da["x"]) == len(da["y"]) == len(da["lengths"]) == n
        for key in da:
            assert torch.equal(da[key], db[key]), f"{name} {split} {key} differs for the same seed"
        assert not torch.equal(da["x"], dc["x"]), f"{name} {split}: seeds 3 and 4 give the same data"
        if meta["vocab_size"]:
            real = torch.arange(da["x"].shape[1])[None] < da["lengths"][:, None]
            assert da["x"][real].max() < meta["vocab_size"] and da["x"][real].min() >= 0
            assert (da["x"][real] != meta["pad_id"]).all()
    # Changing the train size must leave the test set alone.
    d = run(tmp_path, name, "d", seed=3, **{**params, "n_train": 10})
    assert torch.equal(load_split(a, "test")["x"], load_split(d, "test")["x"])


def test_delayed_recall_rule(tmp_path):
    data = load_split(run(tmp_path, "data.delayed_recall", lag=9, vocab=8), "train")
    assert data["x"].shape == (200, 10)
    assert torch.equal(data["y"], data["x"][:, 0])  # the token seen lag steps before the readout
    assert set(data["y"].tolist()) == set(range(8))


def test_delayed_recall_tag_rule(tmp_path):
    data = load_split(run(tmp_path, "data.delayed_recall", lag=4, target="tag"), "test")
    x, y = data["x"].numpy(), data["y"].numpy()
    for i in range(len(x)):
        for t in range(x.shape[1]):
            assert y[i, t] == (x[i, t - 4] if t >= 4 else -100)


def test_adding_rule_matches_the_paper(tmp_path):
    folder = run(tmp_path, "data.adding", seq_len=40)
    meta, data = load_meta(folder), load_split(folder, "train")
    x, y, lengths = data["x"].numpy(), data["y"].numpy(), data["lengths"].numpy()
    assert x.shape == (200, 44, 2) and meta["input_dim"] == 2 and meta["target"] == "regress"
    assert lengths.min() >= 40 and lengths.max() <= 44
    for i in range(len(x)):
        seq = x[i, : lengths[i]]
        marked = np.flatnonzero(seq[:, 1] == 1.0)
        assert len(marked) == 2 and marked[0] < 10 and marked[1] < 20
        assert np.all(np.abs(seq[:, 0]) <= 1) and np.all(x[i, lengths[i] :] == 0)
        ends = [p for p in (0, lengths[i] - 1) if p not in marked]
        assert np.all(seq[ends, 1] == -1.0)
        others = np.setdiff1d(np.arange(lengths[i]), np.r_[marked, 0, lengths[i] - 1])
        assert np.all(seq[others, 1] == 0)
        assert y[i] == pytest.approx(0.5 + seq[marked, 0].sum() / 4, abs=1e-6)
    # Chance: always answering 0.5, measured on many sequences, within sampling error.
    big = load_split(run(tmp_path, "data.adding", "big", seq_len=20, n_train=20000), "train")["y"]
    assert (big - 0.5).abs().lt(0.04).float().mean().item() == pytest.approx(meta["chance"], abs=0.01)


def test_agreement_rule(tmp_path):
    folder = run(tmp_path, "data.agreement", attractors=3, fillers=2, nouns=10)
    meta = load_meta(folder)
    lo, hi = meta["plural_ids"]
    sg_lo, sg_hi = meta["singular_ids"]
    for split in ("train", "test"):
        data = load_split(folder, split)
        x, y = data["x"], data["y"]
        assert x.shape[1] == 1 + 2 * 3 + 2
        oracle = ((x[:, 0] >= lo) & (x[:, 0] < hi)).long()
        assert torch.equal(y, oracle)
        nouns = x[:, 1:] < hi
        assert (nouns.sum(1) == 3).all()  # K intervening nouns
        plural_between = ((x[:, 1:] >= lo) & (x[:, 1:] < hi)).sum(1)
        disagree = torch.where(y == 1, 3 - plural_between, plural_between)
        assert torch.equal(disagree, data["attractors"])
    assert (load_split(folder, "test")["attractors"] == 3).all()  # exactly K attractors in test
    train_attr = load_split(folder, "train")["attractors"].float()
    assert 1.0 < train_attr.mean() < 2.0  # half of the intervening nouns disagree in train


def test_multi_lookup_rule(tmp_path):
    folder = run(tmp_path, "data.multi_lookup")
    meta, data = load_meta(folder), load_split(folder, "valid")
    assert meta["target"] == "tag" and meta["num_outputs"] == 3 and meta["chance"] == 1 / 16
    x, y = data["x"], data["y"]
    assert y.shape == (20, 24, 3)
    for j, k in enumerate((1, 3, 6)):
        for t in range(24):
            expected = x[:, t - k] if t >= k else torch.full((20,), -100)
            assert torch.equal(y[:, t, j], expected)


def test_spell_rule_and_format(tmp_path):
    path = run(tmp_path, "data.spell", base=3, length=4, seed=1)
    meta = load_meta(path)
    assert meta["target"] == "generate" and meta["out_len"] == 4 and meta["num_classes"] == 3
    assert meta["vocab_size"] == 81 and meta["chance"] == pytest.approx(1 / 3)
    d = load_split(path, "train")
    assert d["x"].shape == (200,) and d["y"].shape == (200, 4)
    for n, digits in zip(d["x"].tolist(), d["y"].tolist()):  # an independent oracle: repeated division
        expect = []
        for _ in range(4):
            n, r = divmod(n, 3)
            expect.insert(0, r)
        assert digits == expect
    again = load_split(run(tmp_path, "data.spell", "b", base=3, length=4, seed=1), "test")
    assert torch.equal(again["x"], load_split(path, "test")["x"])


def test_variable_length_rule(tmp_path):
    folder = run(tmp_path, "data.variable_length", vocab=3, min_len=2, max_len=9)
    data = load_split(folder, "train")
    assert data["lengths"].min() == 2 and data["lengths"].max() == 9
    for row, label, n in zip(data["x"].tolist(), data["y"].tolist(), data["lengths"].tolist()):
        assert all(t == 3 for t in row[n:])
        counts = {s: row[:n].count(s) for s in range(3)}
        assert counts[label] > max(c for s, c in counts.items() if s != label)


@pytest.mark.parametrize(
    "name,params,match",
    [
        ("data.delayed_recall", {"lag": 0}, "lag must be at least 1; got 0"),  # the declared bound
        ("data.adding", {"seq_len": 10}, "seq_len must be at least 20; got 10"),
        ("data.multi_lookup", {"offsets": [1, 30]}, r"offsets must be .* \[1, 23\]"),
        ("data.variable_length", {"min_len": 9, "max_len": 3}, "min_len <= max_len"),
        ("data.agreement", {"train_attractor_prob": 1.5}, "train_attractor_prob must be at most 1; got 1.5"),
        ("data.delayed_recall", {"n_train": 0, "n_valid": 0, "n_test": 0}, "all example counts are 0"),
        ("data.spell", {"base": 1}, "base must be at least 2; got 1"),
        ("data.spell", {"base": 10, "length": 7}, "10,000,000 numbers is more than 1,000,000 embedding rows"),
    ],
)
def test_bad_parameters(tmp_path, name, params, match):
    with pytest.raises((DataError, ComponentError), match=match):  # ComponentError: a bound the signature declares
        get(name)(Context(work_dir=tmp_path), **{**SMALL, **params})


EXPECTED = {
    "data.wmt",
    "data.synthetic_translation",
    "data.delayed_recall",
    "data.adding",
    "data.agreement",
    "data.multi_lookup",
    "data.variable_length",
    "data.digits",
    "data.mnist",
    "data.digit_strips",
    "data.patches",
    "data.spell",
}


def test_every_data_component_is_registered_and_documented():
    from components.registry import registry

    data = {name: comp for name, comp in registry().items() if name.startswith("data.")}
    assert EXPECTED <= set(data)
    for name, comp in data.items():
        assert comp.outputs == ("dataset",), name
        assert comp.summary and comp.summary.endswith("."), f"{name} needs a one-line docstring"
        assert comp.bottleneck in {"B1", "B2", "B3", "B4"}, name
