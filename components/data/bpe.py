"""Subword (BPE) and word-level tokenizers from Hugging Face ``tokenizers``, special ids fixed."""

from __future__ import annotations

from typing import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from components.data.errors import DataError

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]  # ids 0, 1, 2, 3 in every vocabulary
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)


def check_vocab(vocab_size: int) -> None:
    """Reject a vocabulary with no room beyond the special tokens."""
    if vocab_size <= len(SPECIALS):
        raise DataError(
            f"vocab_size {vocab_size} leaves no room for tokens beyond the {len(SPECIALS)} specials "
            f"{SPECIALS}: use a vocab_size of at least a few hundred for BPE"
        )


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2, lowercase: bool = False) -> Tokenizer:
    """Train a BPE tokenizer whose decode gives back the (whitespace-normalised) text.

    Words are split on whitespace with a ``▁`` marker for word starts (SentencePiece style), so
    ``decode`` restores spaces exactly; characters never seen in training become ``<unk>``.
    """
    check_vocab(vocab_size)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    norms = [normalizers.NFC()] + ([normalizers.Lowercase()] if lowercase else [])
    tok.normalizer = normalizers.Sequence(norms)
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS, show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    _check_specials(tok)
    return tok


def train_wordlevel(texts: Iterable[str]) -> Tokenizer:
    """Build a word-level tokenizer over every whitespace token in ``texts``."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    _check_specials(tok)
    return tok


def _check_specials(tok: Tokenizer) -> None:
    ids = [tok.token_to_id(s) for s in SPECIALS]
    if ids != list(range(len(SPECIALS))):  # the contract fixes <pad>=0 ... </s>=3
        raise DataError(f"special tokens got ids {ids}, expected 0..3: tokenizers changed its trainer order")


def encode(tok: Tokenizer, texts: list[str], bos: bool) -> list[list[int]]:
    """Encode texts to ids ending in ``</s>`` (and starting with ``<s>`` when ``bos``)."""
    head = [BOS_ID] if bos else []
    return [head + enc.ids + [EOS_ID] for enc in tok.encode_batch(texts, add_special_tokens=False)]
