"""Tokenise parallel text and save it as a translation dataset (``datasets`` Arrow + tokenizers)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from components.data.bpe import BOS_ID, EOS_ID, PAD_ID, UNK_ID, encode
from components.data.clean import length_histogram
from components.data.errors import DataError
from components.data.io import SPLITS, write_meta


def write_translation(ctx, splits: dict[str, list[tuple[str, str]]], src_tok, tgt_tok, *,
                      src_lang: str, tgt_lang: str, meta: dict[str, Any]) -> Path:
    """Encode every split and write ``data/``, the tokenizer file(s) and ``meta.json``.

    ``tgt_tok is src_tok`` means a joint vocabulary (one ``tokenizer.json``).
    """
    import datasets
    from datasets import Dataset, DatasetDict

    datasets.disable_progress_bars()  # a save per split would flood the step's log
    folder = ctx.path("dataset")
    joint = tgt_tok is src_tok
    parts, counts, hist, longest = {}, {}, {}, {}
    for name in SPLITS:
        pairs = splits.get(name, [])
        if not pairs:
            raise DataError(f"split {name!r} is empty: give it files or a non-zero fraction to carve from train")
        src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
        src_ids, tgt_ids = encode(src_tok, src, bos=False), encode(tgt_tok, tgt, bos=True)
        parts[name] = Dataset.from_dict({"src": src, "tgt": tgt, "src_ids": src_ids, "tgt_ids": tgt_ids})
        counts[name] = len(pairs)
        hist[name] = length_histogram(src)
        longest[name] = [max(map(len, src_ids)), max(map(len, tgt_ids))]  # [src, tgt] ids per example
    DatasetDict(parts).save_to_disk(str(folder / "data"))
    if joint:
        src_tok.save(str(folder / "tokenizer.json"))
    else:
        src_tok.save(str(folder / "tokenizer.src.json"))
        tgt_tok.save(str(folder / "tokenizer.tgt.json"))
    meta = {"kind": "translation", "src_lang": src_lang, "tgt_lang": tgt_lang, "joint": joint,
            "src_vocab_size": src_tok.get_vocab_size(), "tgt_vocab_size": tgt_tok.get_vocab_size(),
            "pad_id": PAD_ID, "unk_id": UNK_ID, "bos_id": BOS_ID, "eos_id": EOS_ID, "counts": counts,
            "length_histogram": hist, "longest_ids": longest, **meta}
    write_meta(folder, meta)
    ctx.log_metrics({f"n_{k}": v for k, v in counts.items()})
    ctx.log_metrics({"src_vocab_size": meta["src_vocab_size"], "tgt_vocab_size": meta["tgt_vocab_size"]})
    return folder
