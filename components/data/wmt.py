"""Parallel text (WMT, Multi30k, any line-aligned corpus) to a tokenised translation dataset."""

from __future__ import annotations

from typing import Literal

from components.bounds import Count, Fraction, Positive, Size
from components.data.bpe import check_vocab, train_bpe
from components.data.clean import clean_pairs, split_pairs
from components.data.errors import DataError
from components.data.hub import default_config, load_hub_pairs
from components.data.io import SPLITS
from components.data.text import read_parallel, resolve
from components.data.translation import write_translation
from components.registry import component

HUB_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def _read_files(files: dict[str, list[list[str]]], data_dir: str, encoding: str) -> dict[str, list]:
    """Read each split's list of ``[src_file, tgt_file]`` pairs."""
    unknown = set(files) - set(SPLITS)
    if unknown:
        raise DataError(f"files has unknown splits {sorted(unknown)}: use train, valid and test")
    out = {}
    for split, pairs_of_files in files.items():
        out[split] = []
        for entry in pairs_of_files:
            if len(entry) != 2:
                raise DataError(f"files.{split} entry {entry} must be [src_file, tgt_file]")
            out[split] += read_parallel(resolve(entry[0], data_dir), resolve(entry[1], data_dir), encoding)
    return out


def _read_hub(dataset, config, src_lang, tgt_lang, hf_splits, streaming, max_pairs, seed, cache_dir):
    """Load each of ``hf_splits`` from the Hub; ``max_pairs`` samples train only."""
    unknown = set(hf_splits) - set(SPLITS)
    if unknown or "train" not in hf_splits:
        raise DataError(f"hf_splits needs a 'train' entry and only train/valid/test, got {sorted(hf_splits)}")
    raw = {
        ours: load_hub_pairs(
            dataset,
            config,
            spec,
            src_lang,
            tgt_lang,
            streaming=streaming,
            max_pairs=max_pairs if ours == "train" else None,
            seed=seed,
            cache_dir=cache_dir,
        )
        for ours, spec in hf_splits.items()
    }
    return raw, {"source": "hf", "dataset": dataset, "config": config, "hf_splits": dict(hf_splits)}


def _read_local(files, data_dir, encoding, max_pairs, seed):
    """Read local files; ``max_pairs`` keeps a seeded sample of train."""
    if "train" not in files:
        raise DataError("source: files needs files.train (a list of [src_file, tgt_file]) to train the tokenizer")
    raw = _read_files(files, data_dir, encoding)
    if max_pairs is not None and max_pairs < len(raw["train"]):
        raw["train"] = split_pairs(raw["train"], {"sample": max_pairs / len(raw["train"])}, seed)["sample"]
    return raw, {"source": "files", "files": {k: [list(e) for e in v] for k, v in files.items()}}


def _clean_and_split(raw, max_len, max_ratio, dedup, valid_fraction, test_fraction, seed):
    """Clean train, then carve the splits not given from it; return the splits and the drop counts."""
    train, dropped = clean_pairs(raw.pop("train"), max_len, max_ratio, dedup)
    if not train:
        raise DataError(
            f"no training pairs left after cleaning (removed: {dropped}): check the files "
            f"or loosen max_len={max_len} / max_ratio={max_ratio}"
        )
    carve = {name: frac for name, frac in (("valid", valid_fraction), ("test", test_fraction)) if name not in raw}
    return {**split_pairs(train, carve, seed), **raw}, dropped


def _train_tokenizers(ctx, texts, joint, vocab_size, min_frequency, lowercase):
    """Train one joint BPE or one per side; warn when a vocabulary outgrows its budget."""
    if joint:
        src_tok = tgt_tok = train_bpe([t for pair in texts for t in pair], vocab_size, min_frequency, lowercase)
    else:
        src_tok = train_bpe([s for s, _ in texts], vocab_size, min_frequency, lowercase)
        tgt_tok = train_bpe([t for _, t in texts], vocab_size, min_frequency, lowercase)
    for side, tok in (("src", src_tok), ("tgt", tgt_tok)):
        if tok.get_vocab_size() > vocab_size:  # BPE keeps every character it saw, whatever the budget
            ctx.log.warning(
                "%s vocabulary has %d entries, more than vocab_size=%d: the training text has "
                "that many distinct characters",
                side,
                tok.get_vocab_size(),
                vocab_size,
            )
    return src_tok, tgt_tok


@component("data.wmt", outputs=["dataset"], bottleneck="B3", logged_before=["dropped"])
def wmt(
    ctx,
    *,
    source: Literal["hf", "files"] = "hf",
    src_lang: str = "en",
    tgt_lang: str = "de",
    dataset: str = "wmt14",
    config: str | None = None,
    hf_splits: dict[str, str] = HUB_SPLITS,
    streaming: bool = False,
    max_pairs: Size | None = None,
    cache_dir: str | None = None,
    data_dir: str = "",
    files: dict[str, list[list[str]]] = {},
    encoding: str = "utf-8",
    max_len: Size | None = 100,
    max_ratio: Positive | None = 3.0,
    dedup: bool = True,
    valid_fraction: Fraction = 0.05,
    test_fraction: Fraction = 0.05,
    vocab_size: Size = 8000,
    joint: bool = True,
    min_frequency: Count = 2,
    lowercase: bool = False,
    num_proc: Size | None = None,
    seed: Count = 0,
) -> dict:
    """Prepare parallel text as a BPE-tokenised translation dataset.

    Args:
        source: ``hf`` loads with ``datasets.load_dataset(dataset, config)``; ``files`` reads local
            line-aligned plain/gzipped text or WMT ``.sgm`` files.
        src_lang, tgt_lang: language codes, also the keys of the Hub's ``translation`` column.
        dataset, config: Hub dataset and config (default config: ``de-en`` style for the pair).
        hf_splits: our split -> Hub split spec, slicing allowed (``train[:5%]``).
        streaming: stream the Hub split instead of downloading it whole.
        max_pairs: keep at most this many training pairs (a seeded sample; the first when streaming).
        cache_dir: where ``datasets`` caches downloads (default: its own cache).
        data_dir: folder that relative paths in ``files`` start from.
        files: split -> list of ``[src_file, tgt_file]``; missing valid/test are carved from train.
        encoding: text encoding of the files.
        max_len: drop training pairs with a side longer than this many words (None: keep).
        max_ratio: drop training pairs whose word-length ratio exceeds this (None: keep).
        dedup: drop repeated training pairs.
        valid_fraction, test_fraction: shares of train carved off when a split is not given.
        vocab_size: BPE vocabulary size (per side unless ``joint``), including 4 special tokens.
        joint: one vocabulary for both sides (``tokenizer.json``) or two.
        min_frequency: BPE merges need at least this many occurrences.
        lowercase: lowercase before tokenising.
        num_proc: encode with ``datasets.map`` in this many processes (WMT14's 4.5M pairs: one per core).
        seed: seed for sampling and splitting.

    Returns:
        ``dataset``: folder with ``data/`` (splits train/valid/test), tokenizer(s) and ``meta.json``.
    """
    check_vocab(vocab_size)  # before any download or reading
    if max_pairs is not None and max_pairs < 1:
        raise DataError(f"max_pairs must be >= 1 (or null for all pairs), got {max_pairs}")
    with ctx.progress(total=4, description="data: read") as bar:  # read, clean, BPE, encode
        if source == "hf":
            hub = (dataset, config or default_config(src_lang, tgt_lang), src_lang, tgt_lang)
            raw, origin = _read_hub(*hub, hf_splits, streaming, max_pairs, seed, cache_dir)
        else:
            raw, origin = _read_local(files, data_dir, encoding, max_pairs, seed)
        bar.update(completed=1, description="data: clean")
        splits, dropped = _clean_and_split(raw, max_len, max_ratio, dedup, valid_fraction, test_fraction, seed)
        bar.update(completed=2, description=f"data: BPE on {len(splits['train'])} pairs")
        src_tok, tgt_tok = _train_tokenizers(ctx, splits["train"], joint, vocab_size, min_frequency, lowercase)
        ctx.log_metrics({f"dropped/{k}": v for k, v in dropped.items()})
        bar.update(completed=3, description="data: encode")
        meta = {**origin, "dropped": dropped, "seed": seed, "tokenizer": "bpe", "requested_vocab_size": vocab_size}
        langs = {"src_lang": src_lang, "tgt_lang": tgt_lang}
        folder = write_translation(ctx, splits, src_tok, tgt_tok, **langs, meta=meta, num_proc=num_proc)
        bar.update(completed=4)
        return {"dataset": str(folder)}
