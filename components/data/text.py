"""Read line-aligned parallel text: plain or gzipped lines and WMT ``.sgm`` files."""

from __future__ import annotations

import difflib
import gzip
import math
import re
from pathlib import Path

from components.data.errors import DataError

_SEG = re.compile(r"<seg.*?>(.*)</seg>.*?")  # sacrebleu's FakeSGMLDataset rule
_DOCID = re.compile(r'docid="([^"]*)"')
_SEGID = re.compile(r'id="?([^"\s>]*)"?')


def resolve(path: str, data_dir: str = "") -> Path:
    """Resolve ``path`` against ``data_dir``; a missing file is an error naming near misses."""
    file = Path(data_dir) / path if data_dir and not Path(path).is_absolute() else Path(path)
    if file.is_file():
        return file
    folder = file.parent
    hint = ""
    if folder.is_dir():
        near = difflib.get_close_matches(file.name, [p.name for p in folder.iterdir()], n=3, cutoff=0.5)
        hint = f"; files with similar names there: {', '.join(near)}" if near else ""
    else:
        hint = f"; the folder {folder} does not exist either (is data_dir right?)"
    raise DataError(f"{file}: no such file{hint}")


def decode(file: Path, raw: bytes, encoding: str) -> str:
    """Decode ``raw`` from ``file``; bad bytes are an error naming the line and the fix."""
    utf8 = encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    try:
        return raw.decode("utf-8-sig" if utf8 else encoding)  # a BOM must not stick to the first word
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataError(
            f"{file}: line {line} is not valid {encoding} (byte 0x{raw[e.start]:02x} at offset {e.start}): "
            f"re-encode the file to UTF-8 (e.g. iconv -f latin1 -t utf-8) or set encoding: to the file's encoding"
        ) from None
    except LookupError:
        raise DataError(
            f"unknown encoding {encoding!r} for {file}: use a Python codec name such as utf-8 or latin-1"
        ) from None


def read_bytes(file: Path) -> bytes:
    """Return the file's bytes, gunzipped when it starts with the gzip magic."""
    raw = file.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise DataError(f"{file}: broken gzip data ({e}): download or copy the file again") from None
    return raw


def normalise(line: str) -> str:
    """Strip and collapse internal whitespace (what sacrebleu does to WMT segments)."""
    return " ".join(line.split())


def read_lines(file: Path, encoding: str = "utf-8") -> list[str]:
    """Read a plain (or gzipped) text file as whitespace-normalised lines."""
    text = decode(file, read_bytes(file), encoding)
    lines = text.split("\n")  # not splitlines(): a U+2028 inside a line must not shift the alignment
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return [normalise(line) for line in lines]


def read_sgm(file: Path, encoding: str = "utf-8") -> tuple[list[str], list[tuple[str, str]]]:
    """Read a WMT ``.sgm`` file: segment texts and their ``(docid, segid)``."""
    text = decode(file, read_bytes(file), encoding)
    segments, ids = [], []
    doc = ""
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("<doc "):
            m = _DOCID.search(line)
            doc = m.group(1) if m else ""
        elif line.startswith("<seg "):
            segments.append(normalise(_SEG.sub(r"\1", line)))
            m = _SEGID.search(line[len("<seg") :])
            ids.append((doc, m.group(1) if m else str(len(ids) + 1)))
    if not segments:
        raise DataError(f"{file}: no <seg> lines found: is it really a WMT .sgm file?")
    return segments, ids


def read_text(file: Path, encoding: str = "utf-8") -> tuple[list[str], list[tuple[str, str]] | None]:
    """Read lines from plain/gz text or ``.sgm``; the second item is the sgm ids (or None)."""
    if ".sgm" in file.suffixes:
        return read_sgm(file, encoding)
    return read_lines(file, encoding), None


def _cost(a: str, b: str) -> float:
    return abs(math.log((len(a) + 1) / (len(b) + 1)))


def first_divergence(src: list[str], tgt: list[str]) -> int:
    """Guess the 0-based line where one file gained or lost a line (best single break point).

    Before the break, line k pairs with line k; after it, the longer file is ahead by one. The
    break minimises the total length mismatch of the pairs (lengths of translations correlate).
    """
    extra_src = len(src) > len(tgt)
    short, long_ = (tgt, src) if extra_src else (src, tgt)
    n = len(short)
    if n == 0:
        return 0
    aligned = [_cost(short[k], long_[k]) for k in range(n)]
    shifted = [_cost(short[k], long_[k + 1]) if k + 1 < len(long_) else 0.0 for k in range(n)]
    total = sum(shifted)  # break at 0: everything shifted
    best, best_at = total, 0
    for d in range(1, n + 1):  # move pair d-1 from shifted to aligned
        total += aligned[d - 1] - shifted[d - 1]
        if total < best - 1e-9:
            best, best_at = total, d
    return best_at


def read_parallel(src_path: Path, tgt_path: Path, encoding: str = "utf-8") -> list[tuple[str, str]]:
    """Read two line-aligned files into pairs; unequal counts name both and where they diverge."""
    src, src_ids = read_text(src_path, encoding)
    tgt, tgt_ids = read_text(tgt_path, encoding)
    if src_ids is not None and tgt_ids is not None and src_ids != tgt_ids:
        i = next((k for k, (a, b) in enumerate(zip(src_ids, tgt_ids)) if a != b), min(len(src_ids), len(tgt_ids)))
        a = src_ids[i] if i < len(src_ids) else "end of file"
        b = tgt_ids[i] if i < len(tgt_ids) else "end of file"
        raise DataError(
            f"{src_path} and {tgt_path} have different (docid, segid) sequences "
            f"({len(src)} vs {len(tgt)} segments), first difference at segment {i + 1}: "
            f"{a} vs {b}: pair the matching src/ref files"
        )
    if len(src) != len(tgt):
        i = first_divergence(src, tgt)
        show = lambda lines: repr(lines[i][:60]) if i < len(lines) else "(end of file)"  # noqa: E731
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: they must be line-aligned; "
            f"they appear to diverge around line {i + 1} (src: {show(src)}, tgt: {show(tgt)}): "
            f"fix the missing or extra line there, or pass the matching pair of files"
        )
    return list(zip(src, tgt))
