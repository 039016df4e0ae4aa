"""Tokenise parallel text and save it as a translation dataset (``datasets`` Arrow + tokenizers).

Encoding runs through ``Dataset.map(batched=True, num_proc=...)`` with the tokenizer's own
``encode_batch``; ids are stored as uint16 when the vocabulary fits, both in the Arrow columns and
as memory-mapped arrays (``arrays/``) that the trainer reads without building Python lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.data.bpe import BOS_ID, EOS_ID, PAD_ID, UNK_ID, encode
from components.data.clean import length_histogram
from components.data.errors import DataError
from components.data.io import SPLITS, write_meta
from components.data.token_arrays import TokenArrays, id_dtype


def _encode(batch: dict, src_tok, tgt_tok) -> dict:
    """Encode one ``map`` batch: the source ends in EOS, the target starts with BOS and ends in EOS."""
    return {"src_ids": encode(src_tok, batch["src"], bos=False), "tgt_ids": encode(tgt_tok, batch["tgt"], bos=True)}


def write_translation(
    ctx,
    splits: dict[str, list[tuple[str, str]]],
    src_tok,
    tgt_tok,
    *,
    src_lang: str,
    tgt_lang: str,
    meta: dict[str, Any],
    num_proc: int | None = None,
) -> Path:
    """Encode every split and write ``data/``, ``arrays/``, the tokenizer file(s) and ``meta.json``.

    ``tgt_tok is src_tok`` means a joint vocabulary (one ``tokenizer.json``). ``num_proc`` encodes
    in that many processes (None: one, where ``encode_batch`` may still use the tokenizer's threads).
    """
    import datasets
    from datasets import DatasetDict

    datasets.disable_progress_bars()  # a save per split would flood the step's log
    folder = ctx.path("dataset")
    vocab = max(src_tok.get_vocab_size(), tgt_tok.get_vocab_size())
    dtype = str(id_dtype(vocab))
    parts, counts, hist, longest = {}, {}, {}, {}
    for name in SPLITS:
        pairs = splits.get(name, [])
        if not pairs:
            raise DataError(f"split {name!r} is empty: give it files or a non-zero fraction to carve from train")
        parts[name] = _encode_split(name, pairs, src_tok, tgt_tok, dtype, num_proc)
        counts[name] = len(pairs)
        hist[name] = length_histogram([p[0] for p in pairs])
        longest[name] = _save_arrays(folder, name, parts[name], vocab)
    DatasetDict(parts).save_to_disk(str(folder / "data"))
    _save_tokenizers(folder, src_tok, tgt_tok)
    meta = _meta(src_tok, tgt_tok, src_lang, tgt_lang) | {
        "counts": counts,
        "length_histogram": hist,
        "longest_ids": longest,
        "id_dtype": dtype,
        **meta,
    }
    write_meta(folder, meta)
    ctx.log_metrics({f"n_{k}": v for k, v in counts.items()})
    ctx.log_metrics({"src_vocab_size": meta["src_vocab_size"], "tgt_vocab_size": meta["tgt_vocab_size"]})
    return folder


def _encode_split(name: str, pairs: list[tuple[str, str]], src_tok, tgt_tok, dtype: str, num_proc: int | None):
    """Encode one split's pairs into a ``Dataset`` of text and ids (a process pool for large splits)."""
    from datasets import Dataset, Features, Sequence, Value

    features = Features(
        {
            "src": Value("string"),
            "tgt": Value("string"),
            "src_ids": Sequence(Value(dtype)),
            "tgt_ids": Sequence(Value(dtype)),
        }
    )
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    procs = num_proc if num_proc and len(pairs) >= 5_000 * num_proc else None  # a pool for small splits costs more
    return Dataset.from_dict({"src": src, "tgt": tgt}).map(
        _encode,
        batched=True,
        batch_size=5_000,
        num_proc=procs,
        features=features,
        fn_kwargs={"src_tok": src_tok, "tgt_tok": tgt_tok},
        new_fingerprint=f"encode-{name}",
    )


def _save_arrays(folder: Path, name: str, part, vocab: int) -> list[int]:
    """Save a split's ids as memory-mapped arrays; return the longest [src, tgt] ids per example."""
    longest = []
    for side in ("src", "tgt"):
        arrays = TokenArrays.from_arrow(part.data.table.column(f"{side}_ids"), vocab)
        arrays.save(folder / "arrays", f"{name}.{side}")
        longest.append(int(arrays.lengths.max()))
    return longest


def _save_tokenizers(folder: Path, src_tok, tgt_tok) -> None:
    """Save one ``tokenizer.json`` for a joint vocabulary, else ``tokenizer.src.json`` and ``.tgt.json``."""
    if tgt_tok is src_tok:
        src_tok.save(str(folder / "tokenizer.json"))
    else:
        src_tok.save(str(folder / "tokenizer.src.json"))
        tgt_tok.save(str(folder / "tokenizer.tgt.json"))


def _meta(src_tok, tgt_tok, src_lang: str, tgt_lang: str) -> dict[str, Any]:
    """The languages, vocabularies and special ids of a translation dataset."""
    return {
        "kind": "translation",
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "joint": tgt_tok is src_tok,
        "src_vocab_size": src_tok.get_vocab_size(),
        "tgt_vocab_size": tgt_tok.get_vocab_size(),
        "pad_id": PAD_ID,
        "unk_id": UNK_ID,
        "bos_id": BOS_ID,
        "eos_id": EOS_ID,
    }
