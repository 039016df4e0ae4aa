"""data.documents: k consecutive pairs per document, aligned on both sides; RNNencdec-N's length filter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components import Context, get
from components.data.documents import group
from components.data.errors import DataError
from components.data.io import load_meta, load_translation
from components.probes.decode import bucket_names


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    return get("data.synthetic_translation")(
        Context(root / "data"), vocab=8, min_len=2, max_len=9, reorder="none", n_train=400, n_valid=30, n_test=90
    )["dataset"]


def test_group_joins_the_same_consecutive_pairs_on_both_sides():
    pairs = [(f"a{i} b{i}", f"A{i}") for i in range(50)]
    docs = group(pairs, 1, 4, np.random.default_rng(0))
    for src, tgt in docs:  # the k sources and the k targets of a document are the same k pairs
        assert [w[1:] for w in src.split()][::2] == [w[1:] for w in tgt.split()]
        assert 1 <= len(tgt.split()) <= 4
    assert " ".join(s for s, _ in docs) == " ".join(s for s, _ in pairs)
    assert " ".join(t for _, t in docs) == " ".join(t for _, t in pairs)
    assert {len(t.split()) for _, t in docs} == {1, 2, 3, 4}
    assert docs == group(pairs, 1, 4, np.random.default_rng(0))  # seeded


def test_documents_dataset_is_aligned_and_its_length_buckets_count_every_test_document(pairs, tmp_path):
    out = get("data.documents")(Context(tmp_path / "docs"), data=pairs, k_min=2, k_max=3)["dataset"]
    ds, meta = load_translation(out)
    base, _ = load_translation(pairs)
    assert " ".join(ds["test"]["src"]) == " ".join(base["test"]["src"])
    assert " ".join(ds["test"]["tgt"]) == " ".join(base["test"]["tgt"])
    assert meta["counts"]["test"] == len(ds["test"]) < 90 / 2 + 1
    assert meta["documents"]["pairs_in"] == {"train": 400, "valid": 30, "test": 90}
    assert meta["src_vocab_size"] == load_meta(pairs)["src_vocab_size"]  # the input's tokenizer
    torch.set_num_threads(1)
    ckpt = get("train.model")(Context(tmp_path / "m"), data=pairs, model="seq2seq-tiny", steps=5)["checkpoint"]
    buckets = [1, 10, 20]
    s = get("eval.bleu")(
        Context(tmp_path / "bleu"), checkpoints={"s": ckpt}, data=out, buckets=buckets, tokenize="none", n_bootstrap=0
    )["summary"]
    assert sum(s[f"count/len_{b}"] for b in bucket_names(buckets)) == s["n"] == len(ds["test"])
    assert s["count/len_20-inf"] > 0  # documents reach lengths single pairs (at most 9 words) never do


def test_max_words_drops_long_training_pairs_and_keeps_every_test_length(pairs, tmp_path):
    out = get("data.documents")(Context(tmp_path / "n"), data=pairs, max_words=5)["dataset"]
    ds, meta = load_translation(out)
    base, _ = load_translation(pairs)
    assert max(len(s.split()) for s in ds["train"]["src"]) == 5
    assert len(ds["train"]) == sum(len(s.split()) <= 5 for s in base["train"]["src"])
    assert ds["test"]["src"] == base["test"]["src"]
    assert meta["documents"]["max_words"] == 5


def test_nothing_to_change_returns_the_input_and_bad_ranges_are_errors(pairs, tmp_path):
    assert get("data.documents")(Context(tmp_path / "same"), data=pairs)["dataset"] == pairs
    with pytest.raises(DataError, match="need 1 <= k_min <= k_max, got k_min=3, k_max=2"):
        get("data.documents")(Context(tmp_path / "bad"), data=pairs, k_min=3, k_max=2)
    with pytest.raises(DataError, match="no train pair has at most 1 source words"):
        get("data.documents")(Context(tmp_path / "none"), data=pairs, max_words=1)


def test_train_on_single_pairs_and_test_on_documents(pairs, tmp_path):
    """RNNencdec-N on documents: training keeps every single pair up to N words, only the test
    splits are grouped (grouping first and then filtering would drop most training pairs)."""
    out = get("data.documents")(
        Context(tmp_path / "docs"), data=pairs, k_min=1, k_max=4, max_words=9, group_splits=["valid", "test"]
    )["dataset"]
    ds, meta = load_translation(out)
    base, _ = load_translation(pairs)
    assert list(ds["train"]["src"]) == [s for s in base["train"]["src"] if len(s.split()) <= 9]
    assert len(ds["test"]) < 90 and " ".join(ds["test"]["src"]) == " ".join(base["test"]["src"])
    assert max(len(s.split()) for s in ds["test"]["src"]) > 9  # longer than any training source
    assert meta["documents"]["group_splits"] == ["valid", "test"]
