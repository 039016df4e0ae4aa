"""Compact token arrays: uint16 ids on disk, read memory-mapped, giving the list path's batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components import Context, get
from components.data.token_arrays import TokenArrays, id_dtype
from components.train.tasks import Task, TranslationBatches
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("arrays")
    return get("data.synthetic_translation")(
        Context(root), vocab=30, min_len=2, max_len=20, n_train=300, n_valid=20, n_test=20
    )["dataset"]


def _lists(folder):
    task = Task(folder, "cpu")
    ds = task.dataset["train"]
    return task, list(ds["src_ids"]), list(ds["tgt_ids"])


def test_the_trainer_reads_memory_mapped_uint16_arrays_equal_to_the_arrow_lists(folder):
    task, src, tgt = _lists(folder)
    a_src, a_tgt = task.split("train")
    assert isinstance(a_src, TokenArrays) and isinstance(a_src.ids, np.memmap) and a_src.ids.dtype == np.uint16
    assert [a_src[i] for i in range(len(src))] == src and [a_tgt[i] for i in range(len(tgt))] == tgt
    assert task.dataset["train"].features["src_ids"].feature.dtype == "uint16"


@pytest.mark.parametrize("max_tokens", [None, 90])
def test_compact_arrays_give_the_same_batches_as_lists_for_a_seed(folder, max_tokens):
    task, src, tgt = _lists(folder)
    a_src, a_tgt = task.split("train")
    lists = TranslationBatches(src, tgt, task.pad_id, seed=5, batch_size=16, max_tokens=max_tokens)
    arrays = TranslationBatches(a_src, a_tgt, task.pad_id, seed=5, batch_size=16, max_tokens=max_tokens)
    for step in range(40):  # across epoch boundaries
        x, y = lists(step), arrays(step)
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x), step


def test_pack_and_pad_round_trip_and_dtype_by_vocabulary():
    seqs = [[5, 6, 7], [1], [9, 9, 9, 9, 2], [3, 4]]
    arr = TokenArrays.from_lists(seqs, vocab_size=10)
    padded, lengths = arr.pad([2, 1, 3], pad_id=0)
    assert padded.tolist() == [[9, 9, 9, 9, 2], [1, 0, 0, 0, 0], [3, 4, 0, 0, 0]] and lengths.tolist() == [5, 1, 2]
    assert padded.dtype == torch.long and arr.max_id() == 9
    assert id_dtype(37000) == np.uint16 and id_dtype(65536) == np.uint16 and id_dtype(65537) == np.uint32


@pytest.mark.slow
@pytest.mark.skipif(shared_data() is None, reason="needs the shared Multi30k files")
def test_parallel_encoding_gives_the_ids_of_one_process(tmp_path):
    base = shared_data() / "multi30k"
    kw = dict(
        source="files",
        files={"train": [[str(base / "train.en.gz"), str(base / "train.de.gz")]]},
        vocab_size=2000,
        max_pairs=21000,
    )
    one = get("data.wmt")(Context(tmp_path / "one"), **kw)["dataset"]
    two = get("data.wmt")(Context(tmp_path / "two"), num_proc=2, **kw)["dataset"]
    a, b = Task(one, "cpu").split("train"), Task(two, "cpu").split("train")
    assert np.array_equal(a[0].ids, b[0].ids) and np.array_equal(a[1].offsets, b[1].offsets)
