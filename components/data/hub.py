"""Load WMT-style parallel text from the Hugging Face Hub with ``datasets.load_dataset``."""

from __future__ import annotations

from components.data.errors import DataError


def default_config(src_lang: str, tgt_lang: str) -> str:
    """WMT configs on the Hub name the non-English side first (``de-en``, ``fr-en``)."""
    if tgt_lang == "en":
        return f"{src_lang}-en"
    if src_lang == "en":
        return f"{tgt_lang}-en"
    return f"{src_lang}-{tgt_lang}"


def load_hub_pairs(
    dataset: str,
    config: str,
    split: str,
    src_lang: str,
    tgt_lang: str,
    *,
    streaming: bool,
    max_pairs: int | None,
    seed: int,
    cache_dir: str | None,
) -> list[tuple[str, str]]:
    """Return ``(src, tgt)`` pairs of one Hub split (``train``, ``train[:1%]``, ``validation``...).

    ``max_pairs`` keeps a seeded random sample (the first pairs when streaming, which cannot
    sample without reading everything).
    """
    import datasets

    where = f"{dataset}/{config} split {split!r}"
    try:
        data = datasets.load_dataset(dataset, config, split=split, streaming=streaming, cache_dir=cache_dir)
    except ConnectionError as e:  # offline mode and unreachable hosts both end here
        raise DataError(
            f"could not reach the Hugging Face Hub to load {where} ({e}): this machine looks offline. "
            f"Use `source: files` with local line-aligned or .sgm files (and data_dir), "
            f"or prefetch the dataset into cache_dir on a machine with network access"
        ) from None
    except datasets.exceptions.DatasetNotFoundError as e:
        raise DataError(f"the Hub has no dataset {dataset!r} ({e}): check the name, e.g. wmt14, wmt16, wmt19") from None
    except ValueError as e:  # unknown config or split: datasets lists the valid ones
        raise DataError(f"cannot load {where}: {e}") from None
    if streaming:
        rows = data.take(max_pairs) if max_pairs is not None else data
    else:
        if max_pairs is not None and max_pairs < len(data):
            rows = data.shuffle(seed=seed).select(range(max_pairs))
        else:
            rows = data
    pairs = []
    for row in rows:
        pair = row.get("translation", row)
        if src_lang not in pair or tgt_lang not in pair:
            raise DataError(
                f"{where} rows have languages {sorted(pair)}, not {src_lang} and {tgt_lang}: "
                f"set src_lang/tgt_lang to match or pick another config"
            )
        pairs.append((" ".join(pair[src_lang].split()), " ".join(pair[tgt_lang].split())))
    return pairs
