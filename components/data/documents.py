"""data.documents: long real sources from short pairs (k consecutive pairs per document), and the
papers' RNNencdec-N design (train only on pairs up to N words, test on every length)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from components.bounds import Count, Size
from components.data.errors import DataError
from components.data.io import SPLITS, load_translation
from components.data.tasks import split_rng
from components.data.translation import write_translation
from components.registry import component

# meta.json keys write_translation computes afresh for the new pairs
_DERIVED = {
    "kind",
    "src_lang",
    "tgt_lang",
    "joint",
    "src_vocab_size",
    "tgt_vocab_size",
    "pad_id",
    "unk_id",
    "bos_id",
    "eos_id",
    "counts",
    "length_histogram",
    "longest_ids",
}


def group(pairs: list[tuple[str, str]], k_min: int, k_max: int, rng) -> list[tuple[str, str]]:
    """Join runs of k consecutive pairs (k uniform in [k_min, k_max]) into one pair, the same k on both sides."""
    docs, i = [], 0
    while i < len(pairs):
        k = int(rng.integers(k_min, k_max + 1))
        run = pairs[i : i + k]
        docs.append((" ".join(s for s, _ in run), " ".join(t for _, t in run)))
        i += k
    return docs


def _tokenizers(folder: Path, joint: bool):
    from tokenizers import Tokenizer

    if joint:  # one object for both sides: write_translation keeps the vocabulary joint
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        return tok, tok
    return (
        Tokenizer.from_file(str(folder / "tokenizer.src.json")),
        Tokenizer.from_file(str(folder / "tokenizer.tgt.json")),
    )


@component("data.documents", outputs=["dataset"], bottleneck="B3")
def documents(
    ctx,
    *,
    data: str,
    k_min: Size = 1,
    k_max: Size = 1,
    max_words: Count = 0,
    filter_splits: list[Literal["train", "valid", "test"]] = ["train"],  # noqa: B006 - test on all lengths
    group_splits: list[Literal["train", "valid", "test"]] = ["train", "valid", "test"],  # noqa: B006
    seed: Count = 0,
) -> dict:
    """Build documents of k consecutive pairs and/or drop long training pairs, from a translation dataset.

    Args:
        data: a translation dataset folder (``data.wmt``, ``data.synthetic_translation``). Its
            pairs are taken in file order, so consecutive Multi30k pairs stay together.
        k_min, k_max: each document joins k consecutive pairs, k drawn uniformly from
            [k_min, k_max] (seeded, per split); sources and targets are joined alike, so a
            document is still aligned, real text. k_min = k_max = 1 keeps single pairs.
        max_words: > 0 keeps only pairs (documents) whose source has at most this many words in
            ``filter_splits`` (RNNencdec-N: train on pairs up to N words, test on every length).
        group_splits: the splits made into documents; the others keep single pairs (train on
            single sentences, test on documents: ``group_splits: [valid, test]``).
        seed: seed for the document sizes.

    Returns:
        ``dataset``: a translation dataset with the input's tokenizer (the input folder itself
        when nothing changes); meta.json records ``documents`` and the pairs per split.
    """
    if not 1 <= k_min <= k_max:
        raise DataError(f"data.documents: need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    if max_words < 0:
        raise DataError(f"data.documents: max_words must be >= 0 (0: no filter), got {max_words}")
    if k_max == 1 and max_words == 0:
        return {"dataset": str(data)}  # nothing to change: no copy of a large corpus
    folder = Path(data)
    ds, meta = load_translation(folder)
    splits, pairs_in = _documents(ds, k_min, k_max, max_words, filter_splits, group_splits, seed)
    src_tok, tgt_tok = _tokenizers(folder, bool(meta.get("joint")))
    extra = {k: v for k, v in meta.items() if k not in _DERIVED}
    extra["documents"] = {
        "k_min": k_min,
        "k_max": k_max,
        "group_splits": list(group_splits),
        "max_words": max_words,
        "filter_splits": list(filter_splits),
        "seed": seed,
        "pairs_in": pairs_in,
    }
    out = write_translation(
        ctx, splits, src_tok, tgt_tok, src_lang=meta["src_lang"], tgt_lang=meta["tgt_lang"], meta=extra
    )
    return {"dataset": str(out)}


def _documents(ds, k_min, k_max, max_words, filter_splits, group_splits, seed):
    """Group each split's pairs into documents and filter long ones; return them and the pairs read per split."""
    splits, pairs_in = {}, {}
    for name in SPLITS:
        pairs = list(zip(ds[name]["src"], ds[name]["tgt"]))
        pairs_in[name] = len(pairs)
        docs = group(pairs, k_min, k_max, split_rng(seed, name)) if k_max > 1 and name in group_splits else pairs
        if max_words and name in filter_splits:
            docs = [d for d in docs if len(d[0].split()) <= max_words]
            if not docs:
                raise DataError(f"data.documents: no {name} pair has at most {max_words} source words; raise max_words")
        splits[name] = docs
    return splits, pairs_in
