"""A toy translation task: a fixed lexicon plus local reordering, BLEU measurable at any length."""

from __future__ import annotations

from typing import Literal

import numpy as np

from components.bounds import Count, Size, Symbols
from components.data.bpe import train_wordlevel
from components.data.errors import DataError
from components.data.tasks import check_counts, split_rng
from components.data.translation import write_translation
from components.registry import component


def translate(words: list[str], lexicon: dict[str, str], reorder: str) -> list[str]:
    """Map each word through the lexicon, then swap neighbours (1<->2, 3<->4, ...) if ``pairs``."""
    out = [lexicon[w] for w in words]
    if reorder == "pairs":
        for i in range(0, len(out) - 1, 2):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


@component(
    "data.synthetic_translation",
    outputs=["dataset"],
    bottleneck="B3",
    logged_before=["src_vocab_size", "tgt_vocab_size"],
    renamed_before={"n_": "data/n_"},  # every data step's split sizes (n_train, ...)
)
def synthetic_translation(
    ctx,
    *,
    vocab: Symbols = 40,
    min_len: Size = 5,
    max_len: Size = 40,
    reorder: Literal["pairs", "none"] = "pairs",
    n_train: Count = 20000,
    n_valid: Count = 500,
    n_test: Count = 1000,
    seed: Count = 0,
) -> dict:
    """Generate toy parallel text: target = lexicon permutation of the source, neighbours swapped.

    Args:
        vocab: source words ``s0..s{vocab-1}``, each mapped to one target word ``t<j>`` by a
            seeded permutation (the lexicon, saved in meta.json).
        min_len, max_len: sentence length range in words, uniform (inclusive).
        reorder: ``pairs`` swaps target words 1<->2, 3<->4, ...; ``none`` keeps the order.
        n_train, n_valid, n_test: sentence pairs per split.
        seed: seed for the lexicon and the sentences.

    Returns:
        ``dataset``: a translation dataset (word-level ``tokenizer.json``), same format as ``data.wmt``.
    """
    if vocab < 2:
        raise DataError(f"vocab must be >= 2 words, got {vocab}")
    if not 1 <= min_len <= max_len:
        raise DataError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    check_counts(n_train=n_train, n_valid=n_valid, n_test=n_test)
    src_words = [f"s{i}" for i in range(vocab)]
    perm = np.random.default_rng([seed, 99]).permutation(vocab)
    lexicon = {w: f"t{int(j)}" for w, j in zip(src_words, perm)}
    counts = (("train", n_train), ("valid", n_valid), ("test", n_test))
    splits = {split: _pairs(split_rng(seed, split), n, lexicon, min_len, max_len, reorder) for split, n in counts}
    # Word level: the whole vocabulary appears in any sizeable train split; build it from the lexicon
    # so a tiny split cannot leave words unknown.
    tok = train_wordlevel([" ".join(src_words), " ".join(lexicon.values())])
    meta = {
        "task": "synthetic_translation",
        "lexicon": lexicon,
        "reorder": reorder,
        "min_len": min_len,
        "max_len": max_len,
        "seed": seed,
        "tokenizer": "wordlevel",
        "label_rule": "tgt = lexicon[w] for each src word w, then words 1<->2, 3<->4, ... swapped "
        "when reorder is 'pairs'",
    }
    folder = write_translation(ctx, splits, tok, tok, src_lang="src", tgt_lang="tgt", meta=meta)
    return {"dataset": str(folder)}


def _pairs(rng, n, lexicon, min_len, max_len, reorder) -> list[tuple[str, str]]:
    """Draw ``n`` source sentences of uniform length and pair each with its translation."""
    src_words = list(lexicon)
    pairs = []
    for length in rng.integers(min_len, max_len + 1, size=n):
        words = [src_words[i] for i in rng.integers(0, len(src_words), size=int(length))]
        pairs.append((" ".join(words), " ".join(translate(words, lexicon, reorder))))
    return pairs
