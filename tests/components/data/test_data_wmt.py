"""Translation datasets: data.wmt (files and the Hub path) and data.synthetic_translation."""

import os
from pathlib import Path

import datasets
import huggingface_hub.constants
import pytest

from components import ComponentError, Context, get
from components.data.clean import clean_pairs
from components.data.errors import DataError
from components.data.io import detokenize, load_translation
from components.data.text import read_lines

DATA = Path(os.environ.get("BOTTLENECKS_DATA", Path(__file__).resolve().parents[3].parent / "shared" / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data not found at {DATA} (set BOTTLENECKS_DATA)")
M30K = {
    "train": [["train.en.gz", "train.de.gz"]],
    "valid": [["val.en.gz", "val.de.gz"]],
    "test": [["test_2016_flickr.en.gz", "test_2016_flickr.de.gz"]],
}
NOCLEAN = {"max_len": None, "max_ratio": None, "dedup": False}


def wmt(tmp_path, sub="a", **params):
    out = get("data.wmt")(Context(work_dir=tmp_path / sub), **{"vocab_size": 300, **params})
    return load_translation(out["dataset"]) + (out["dataset"],)


@pytest.mark.slow
@needs_data
def test_newstest2014_gives_3003_pairs_equal_to_the_plain_extraction(tmp_path):
    nt = DATA / "wmt14-newstest"
    ds, meta, folder = wmt(
        tmp_path,
        source="files",
        data_dir=str(nt),
        files={
            "train": [["newstest2014.en-de.en.gz", "newstest2014.en-de.de.gz"]],
            "test": [["sgm/newstest2014-deen-src.en.sgm.gz", "sgm/newstest2014-deen-ref.de.sgm.gz"]],
        },
    )
    assert meta["counts"]["test"] == 3003 and len(ds["test"]) == 3003
    assert list(ds["test"]["src"]) == read_lines(nt / "newstest2014.en-de.en.gz")
    assert list(ds["test"]["tgt"]) == read_lines(nt / "newstest2014.en-de.de.gz")
    # The English length buckets PROVENANCE.md reports for newstest2014 en-de.
    assert meta["length_histogram"]["test"] == {
        "0-9": 405,
        "10-19": 1260,
        "20-29": 833,
        "30-39": 379,
        "40-49": 101,
        "50-59": 20,
        "60-69": 5,
    }
    assert meta["counts"]["train"] + meta["counts"]["valid"] + sum(meta["dropped"].values()) == 3003


@pytest.mark.slow
@needs_data
def test_multi30k_train_has_29000_pairs_and_ids_follow_the_contract(tmp_path):
    ds, meta, folder = wmt(tmp_path, source="files", data_dir=str(DATA / "multi30k"), files=M30K, **NOCLEAN)
    assert meta["counts"] == {"train": 29000, "valid": 1014, "test": 1000}
    assert (meta["pad_id"], meta["unk_id"], meta["bos_id"], meta["eos_id"]) == (0, 1, 2, 3)
    assert meta["joint"] and meta["src_vocab_size"] == meta["tgt_vocab_size"] == 300
    assert (Path(folder) / "tokenizer.json").is_file()
    row = ds["valid"][0]
    assert row["src"].startswith("A group of men") or row["src"] == read_lines(DATA / "multi30k" / "val.en.gz")[0]
    assert row["src_ids"][-1] == 3 and 2 not in row["src_ids"]
    assert row["tgt_ids"][0] == 2 and row["tgt_ids"][-1] == 3
    # Detokenising (with padding and junk after EOS, as a decoder produces) gives the raw text back.
    batch = [ids + [0, 0, 7] for ids in ds["valid"]["tgt_ids"][:200]]
    assert detokenize(folder, batch) == ds["valid"]["tgt"][:200]
    assert detokenize(folder, ds["valid"]["src_ids"][:50], side="src") == ds["valid"]["src"][:50]


@needs_data
def test_cleaning_drops_duplicates_and_bad_ratios():
    en, de = (read_lines(DATA / "multi30k" / f"train.{s}.gz") for s in ("en", "de"))
    pairs = list(zip(en, de)) + [("", "leer"), (" ".join(["w"] * 120), " ".join(["w"] * 120))]
    kept, dropped = clean_pairs(pairs, max_len=100, max_ratio=3.0, dedup=True)
    unique = set(pairs[:29000])
    ratio = sum(max(len(a.split()), len(b.split())) / min(len(a.split()), len(b.split())) > 3 for a, b in unique)
    assert dropped == {"empty": 1, "too_long": 1, "ratio": ratio, "duplicate": 29000 - len(unique)}
    assert ratio > 0 and len(kept) == len(pairs) - sum(dropped.values()) and len(set(kept)) == len(kept)
    first = {}
    for i, pair in enumerate(pairs):
        first.setdefault(pair, i)
    assert [first[p] for p in kept] == sorted(first[p] for p in kept)  # original order kept


@needs_data
def test_separate_vocabularies_and_seeded_carving(tmp_path):
    files = {"train": [["val.en.gz", "val.de.gz"]]}
    carved = dict(source="files", data_dir=str(DATA / "multi30k"), files=files, joint=False, **NOCLEAN)
    carved |= {"valid_fraction": 0.1, "test_fraction": 0.2}  # valid and test carved from train
    a, meta, folder = wmt(tmp_path, "a", seed=1, **carved)
    b, _, _ = wmt(tmp_path, "b", seed=1, **carved)
    c, _, _ = wmt(tmp_path, "c", seed=2, **carved)
    assert meta["counts"] == {"train": 710, "valid": 101, "test": 203}
    assert not meta["joint"] and (Path(folder) / "tokenizer.src.json").is_file()
    assert list(a["test"]["src"]) == list(b["test"]["src"]) != list(c["test"]["src"])
    assert sorted([*a["train"]["src"], *a["valid"]["src"], *a["test"]["src"]]) == sorted(
        read_lines(DATA / "multi30k" / "val.en.gz")
    )
    # Characters never seen in 710 training sentences become <unk> and cannot come back.
    known = [(ids, t) for ids, t in zip(a["test"]["tgt_ids"], a["test"]["tgt"]) if 1 not in ids]
    assert len(known) > 0.9 * len(a["test"])
    assert detokenize(folder, [ids for ids, _ in known]) == [t for _, t in known]


def test_empty_corpus_after_filtering_and_small_vocab_are_errors(tmp_path):
    (tmp_path / "s.txt").write_text("a b c\nd e f g\n")
    (tmp_path / "t.txt").write_text("x y z\nu v w q\n")
    files = {"train": [["s.txt", "t.txt"]]}
    with pytest.raises(DataError, match=r"no training pairs left after cleaning \(removed: .*'too_long': 2.*max_len=2"):
        wmt(tmp_path, source="files", data_dir=str(tmp_path), files=files, max_len=2)
    with pytest.raises(DataError, match=r"vocab_size 3 leaves no room .*<pad>"):
        wmt(
            tmp_path,
            source="files",
            data_dir=str(tmp_path),
            files=files,
            vocab_size=3,
            valid_fraction=0.0,
            test_fraction=0.0,
        )
    with pytest.raises(ComponentError, match="max_pairs must be at least 1; got 0"):  # the declared bound
        wmt(tmp_path, source="files", data_dir=str(tmp_path), files=files, max_pairs=0)
    with pytest.raises(DataError, match="hf_splits needs a 'train' entry"):
        wmt(tmp_path, source="hf", hf_splits={"test": "test"})
    with pytest.raises(DataError, match="needs files.train"):
        wmt(tmp_path, source="files", data_dir=str(tmp_path), files={"test": [["s.txt", "t.txt"]]})
    with pytest.raises(DataError, match=r"entry \['s.txt'\] must be \[src_file, tgt_file\]"):
        wmt(tmp_path, source="files", data_dir=str(tmp_path), files={"train": [["s.txt"]]})
    with pytest.raises(DataError, match=r"split 'valid' is empty"):
        wmt(tmp_path, source="files", data_dir=str(tmp_path), files=files, valid_fraction=0.0)


def test_hub_offline_is_a_clear_error_suggesting_files(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # no network in tests, ever
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        DataError, match=r"could not reach the Hugging Face Hub to load wmt14/de-en .*offline.*source: files"
    ):
        wmt(tmp_path, source="hf", dataset="wmt14", cache_dir=str(tmp_path / "cache"))


@needs_data
def test_hub_rows_become_pairs(tmp_path, monkeypatch):
    en, de = (read_lines(DATA / "multi30k" / f"val.{s}.gz") for s in ("en", "de"))
    rows = datasets.Dataset.from_dict({"translation": [{"de": d, "en": e} for e, d in zip(en, de)]})
    calls = []

    def fake_load_dataset(name, config, split, streaming, cache_dir):
        calls.append((name, config, split, streaming))
        return rows.to_iterable_dataset() if streaming else rows

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    ds, meta, _ = wmt(tmp_path, source="hf", dataset="wmt16", max_pairs=300, **NOCLEAN)
    assert calls == [
        ("wmt16", "de-en", "train", False),
        ("wmt16", "de-en", "validation", False),
        ("wmt16", "de-en", "test", False),
    ]
    assert meta["counts"] == {"train": 300, "valid": 1014, "test": 1014}
    assert set(list(ds["train"]["src"])) <= set(en) and list(ds["test"]["tgt"]) == de
    calls.clear()
    ds, meta, _ = wmt(
        tmp_path,
        "b",
        source="hf",
        src_lang="de",
        tgt_lang="en",
        streaming=True,
        max_pairs=50,
        hf_splits={"train": "train[:10%]", "valid": "validation", "test": "test"},
        **NOCLEAN,
    )
    assert calls[0] == ("wmt14", "de-en", "train[:10%]", True)
    assert list(ds["train"]["src"]) == de[:50] and list(ds["train"]["tgt"]) == en[:50]
    with pytest.raises(DataError, match=r"rows have languages \['de', 'en'\], not en and fr"):
        wmt(tmp_path, "c", source="hf", tgt_lang="fr")


HUB_CARD = """\
---
configs:
- config_name: de-en
  data_files:
  - {split: train, path: de-en/train-*.parquet}
  - {split: validation, path: de-en/validation-*.parquet}
  - {split: test, path: de-en/test-*.parquet}
---
"""


@needs_data
def test_the_real_load_dataset_reads_a_local_dataset_laid_out_like_the_hub(tmp_path, monkeypatch):
    """The unpatched ``datasets.load_dataset(dataset, config, split=...)`` call on a dataset folder
    with Parquet shards and a card naming the config, as wmt14 is stored on the Hub."""
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # a local folder needs no network
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    en, de = (read_lines(DATA / "multi30k" / f"val.{s}.gz") for s in ("en", "de"))
    repo = tmp_path / "wmt-local"
    (repo / "de-en").mkdir(parents=True)
    (repo / "README.md").write_text(HUB_CARD)
    for split, (a, b) in {"train": (0, 600), "validation": (600, 800), "test": (800, 1014)}.items():
        rows = [{"de": d, "en": e} for e, d in zip(en[a:b], de[a:b])]
        datasets.Dataset.from_dict({"translation": rows}).to_parquet(
            str(repo / "de-en" / f"{split}-00000-of-00001.parquet")
        )
    ds, meta, _ = wmt(tmp_path, source="hf", dataset=str(repo), cache_dir=str(tmp_path / "cache"), **NOCLEAN)
    assert (meta["source"], meta["dataset"], meta["config"]) == ("hf", str(repo), "de-en")
    assert meta["counts"] == {"train": 600, "valid": 200, "test": 214}
    assert list(ds["test"]["src"]) == en[800:] and list(ds["test"]["tgt"]) == de[800:]
    assert sorted(ds["train"]["src"]) == sorted(en[:600])
    sampled, meta, _ = wmt(
        tmp_path,
        "b",
        source="hf",
        dataset=str(repo),
        cache_dir=str(tmp_path / "cache"),
        src_lang="de",
        tgt_lang="en",
        max_pairs=100,
        hf_splits={"train": "train[:50%]", "valid": "validation", "test": "test"},
        **NOCLEAN,
    )
    assert meta["counts"]["train"] == 100 and set(sampled["train"]["src"]) <= set(de[:300])
    with pytest.raises(DataError, match=r"cannot load .*wmt-local/fr-en"):
        wmt(tmp_path, "c", source="hf", dataset=str(repo), config="fr-en", cache_dir=str(tmp_path / "cache"))


def test_synthetic_translation_follows_the_lexicon_rule(tmp_path):
    def run(sub, seed):
        out = get("data.synthetic_translation")(
            Context(work_dir=tmp_path / sub),
            vocab=12,
            min_len=3,
            max_len=9,
            n_train=200,
            n_valid=20,
            n_test=30,
            seed=seed,
        )
        return load_translation(out["dataset"]) + (out["dataset"],)

    ds, meta, folder = run("a", 0)
    lex = meta["lexicon"]
    assert sorted(lex) == sorted(f"s{i}" for i in range(12)) and len(set(lex.values())) == 12
    for split in ("train", "valid", "test"):
        for src, tgt in zip(list(ds[split]["src"]), list(ds[split]["tgt"])):
            words = src.split()
            assert 3 <= len(words) <= 9
            mapped = [lex[w] for w in words]
            oracle = [mapped[i ^ 1] if (i ^ 1) < len(mapped) else mapped[i] for i in range(len(mapped))]
            assert tgt.split() == oracle
    assert detokenize(folder, list(ds["test"]["tgt_ids"])) == list(ds["test"]["tgt"])
    again, _, _ = run("b", 0)
    other, _, _ = run("c", 1)
    assert list(again["test"]["tgt"]) == list(ds["test"]["tgt"]) != list(other["test"]["tgt"])
