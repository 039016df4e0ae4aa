"""Length buckets under a token budget, padding, patching round trips, loader errors."""

import numpy as np
import pytest
import torch

from components.data.batching import bucket_batches, pad, padding_fraction, padding_mask
from components.data.errors import DataError
from components.data.images import patchify, unpatchify
from components.data.io import load_meta, load_split


def lengths(n=500, seed=0):
    return np.random.default_rng(seed).integers(1, 60, size=n).tolist()


def test_buckets_cover_every_index_once_within_budget():
    lens = lengths()
    batches = bucket_batches(lens, max_tokens=256, seed=1)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lens)))
    for b in batches:
        assert len(b) * max(lens[i] for i in b) <= 256


def test_buckets_are_deterministic_for_a_seed_and_differ_across_seeds():
    lens = lengths()
    assert bucket_batches(lens, 256, seed=3) == bucket_batches(lens, 256, seed=3)
    assert bucket_batches(lens, 256, seed=3) != bucket_batches(lens, 256, seed=4)
    unshuffled = bucket_batches(lens, 256, seed=0, shuffle=False)
    maxima = [max(lens[i] for i in b) for b in unshuffled]
    assert maxima == sorted(maxima)  # without shuffling, batches come shortest first


def test_buckets_pad_less_than_random_batches():
    lens = lengths(2000)
    bucketed = bucket_batches(lens, 512, seed=0)
    perm = np.random.default_rng(0).permutation(len(lens))
    random_batches = np.array_split(perm, len(bucketed))
    assert padding_fraction(bucketed, lens) < 0.1 < padding_fraction([b.tolist() for b in random_batches], lens)


def test_buckets_respect_max_sentences_and_reject_too_long():
    batches = bucket_batches([3] * 10, max_tokens=100, max_sentences=4, shuffle=False)
    assert [len(b) for b in batches] == [4, 4, 2]
    with pytest.raises(ValueError, match=r"example 1 has 70 tokens, more than max_tokens=64"):
        bucket_batches([5, 70, 3], max_tokens=64)


def test_pad_and_mask():
    x, n = pad([[5, 6, 7], [8]], pad_id=0)
    assert torch.equal(x, torch.tensor([[5, 6, 7], [8, 0, 0]])) and torch.equal(n, torch.tensor([3, 1]))
    assert torch.equal(padding_mask(n), torch.tensor([[True, True, True], [True, False, False]]))


@pytest.mark.parametrize("shape,patch", [((2, 1, 28, 28), 7), ((3, 3, 8, 12), 4), ((1, 2, 6, 6), 1)])
def test_patch_round_trip(shape, patch):
    x = torch.randn(shape)
    p = patchify(x, patch)
    n, c, h, w = shape
    assert p.shape == (n, (h // patch) * (w // patch), c * patch * patch)
    assert torch.equal(unpatchify(p, patch, (h, w)), x)


def test_patch_layout_is_row_major_channel_first():
    x = torch.arange(2 * 4 * 4, dtype=torch.float).reshape(1, 2, 4, 4)
    p = patchify(x, 2)
    assert torch.equal(p[0, 1], torch.cat([x[0, 0, 0:2, 2:4].flatten(), x[0, 1, 0:2, 2:4].flatten()]))
    conv = torch.nn.functional.conv2d(x, torch.eye(8).reshape(8, 2, 2, 2), stride=2)  # (1, 8, 2, 2)
    assert torch.equal(conv.flatten(2).transpose(1, 2), p)


def test_patch_that_does_not_divide_is_a_clear_error():
    with pytest.raises(
        DataError, match=r"patch size 5 does not divide the image size 28x28: use one of \[1, 2, 4, 7, 14, 28\]"
    ):
        patchify(torch.zeros(1, 1, 28, 28), 5)
    with pytest.raises(DataError, match="expects images"):
        patchify(torch.zeros(28, 28), 7)


def test_loaders_name_the_folder(tmp_path):
    with pytest.raises(DataError, match="not a prepared dataset"):
        load_meta(tmp_path)
    (tmp_path / "meta.json").write_text('{"kind": "sequence"}')
    with pytest.raises(DataError, match="unknown split 'dev'"):
        load_split(tmp_path, "dev")
