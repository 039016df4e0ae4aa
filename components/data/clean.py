"""Clean parallel training text and split it into train/valid/test for a seed."""

from __future__ import annotations

import numpy as np

from components.data.errors import DataError

Pair = tuple[str, str]


def clean_pairs(
    pairs: list[Pair], max_len: int | None, max_ratio: float | None, dedup: bool
) -> tuple[list[Pair], dict[str, int]]:
    """Drop empty, too long, badly proportioned (likely misaligned) and duplicate pairs.

    Lengths are whitespace words; the ratio is longer side over shorter side. Returns the kept
    pairs in their original order and how many each rule removed.
    """
    dropped = {"empty": 0, "too_long": 0, "ratio": 0, "duplicate": 0}
    seen: set[Pair] = set()
    kept = []
    for src, tgt in pairs:
        ns, nt = len(src.split()), len(tgt.split())
        if ns == 0 or nt == 0:
            dropped["empty"] += 1
        elif max_len is not None and max(ns, nt) > max_len:
            dropped["too_long"] += 1
        elif max_ratio is not None and max(ns, nt) / min(ns, nt) > max_ratio:
            dropped["ratio"] += 1
        elif dedup and (src, tgt) in seen:
            dropped["duplicate"] += 1
        else:
            seen.add((src, tgt))
            kept.append((src, tgt))
    return kept, dropped


def split_pairs(pairs: list[Pair], fractions: dict[str, float], seed: int) -> dict[str, list[Pair]]:
    """Carve the named fractions (e.g. ``valid``, ``test``) out of ``pairs`` for ``seed``; the rest is train."""
    total = sum(fractions.values())
    if any(f < 0 for f in fractions.values()) or total >= 1:
        raise DataError(f"split fractions must be >= 0 and sum below 1, got {fractions}")
    order = np.random.default_rng(seed).permutation(len(pairs))
    out, start = {}, 0
    for name, frac in fractions.items():
        n = int(round(frac * len(pairs)))
        out[name] = [pairs[i] for i in sorted(order[start : start + n])]
        start += n
    out["train"] = [pairs[i] for i in sorted(order[start:])]
    return out


def length_histogram(texts: list[str], width: int = 10) -> dict[str, int]:
    """Count texts by word length in bins of ``width`` (``"0-9"``, ``"10-19"``, ...)."""
    hist: dict[int, int] = {}
    for t in texts:
        b = len(t.split()) // width
        hist[b] = hist.get(b, 0) + 1
    return {f"{b * width}-{(b + 1) * width - 1}": hist[b] for b in sorted(hist)}
