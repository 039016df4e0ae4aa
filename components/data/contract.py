"""The data contract: what a folder with ``meta.json`` must hold, checked where the data is made.

Every folder a step returns that holds ``meta.json`` is a dataset, whoever wrote it (a shipped
``data.*`` component or a user's): the engine calls ``check_outputs`` on a step's outputs as soon as
its component returns, so data that breaks the contract fails the step that wrote it, naming the
file and the field, instead of a training step later. ``META`` is the table of meta.json's fields
that docs/contracts.md prints ("The fields of meta.json"; a test keeps the two equal).

The checks are cheap: tensors are memory-mapped and only their minimum and maximum are read;
translation ids are read as Arrow columns and id arrays. This module imports no torch until a
dataset is checked (the engine imports it for every step).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from components.data.errors import DataError

SPLITS = ("train", "valid", "test")
DOC = 'docs/contracts.md, "Data on disk"'
PAD_RULE = "vocab_size counts the pad token: ids 0..V-1 with pad_id V make vocab_size V + 1"


class DataContractError(DataError):
    """A dataset folder breaks the data contract; ``file`` (``meta.json``, ``train.pt``, ...) and
    ``field`` (``vocab_size``, ``pad_id``, ...; "" for a file missing or unreadable) say where."""

    def __init__(self, message: str, file: str, field: str):
        super().__init__(message)
        self.file, self.field = file, field


@dataclass(frozen=True)
class Field:
    """One field of meta.json: the kind of dataset it belongs to, its JSON type, when it is required."""

    kind: str  # sequence, translation, images
    name: str
    type: str  # int, float, str, bool, dict, list[int]
    required: str  # "yes", "no", or the condition (a key of WHEN) under which it is


def _target(meta: dict[str, Any]) -> str:
    return meta.get("target", "classify")


def _tokens(meta: dict[str, Any]) -> bool:
    """Token inputs: a positive vocab_size (0 means real-valued inputs)."""
    v = meta.get("vocab_size")
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


# the conditions a field is required under, by the words the table uses
WHEN: dict[str, Callable[[dict[str, Any]], bool]] = {
    "real-valued inputs": lambda m: m.get("vocab_size") == 0,
    "class targets": lambda m: _target(m) != "regress",
    "padded token inputs": lambda m: _tokens(m) and _target(m) != "generate",
    "target generate": lambda m: _target(m) == "generate",
    "digit strips": lambda m: bool(m.get("digits_per_strip")),
}

META: tuple[Field, ...] = tuple(
    Field(*row)
    for row in (
        ("sequence", "kind", "str", "yes"),
        ("sequence", "vocab_size", "int", "yes"),
        ("sequence", "input_dim", "int", "real-valued inputs"),
        ("sequence", "num_classes", "int", "class targets"),
        ("sequence", "pad_id", "int", "padded token inputs"),
        ("sequence", "target", "str", "no"),
        ("sequence", "out_len", "int", "target generate"),
        ("sequence", "num_outputs", "int", "no"),
        ("sequence", "task", "str", "no"),
        ("sequence", "task_kind", "str", "no"),
        ("sequence", "seq_len", "int", "no"),
        ("sequence", "min_len", "int", "no"),
        ("sequence", "max_len", "int", "no"),
        ("sequence", "lag", "int", "no"),
        ("sequence", "tolerance", "float", "no"),
        ("sequence", "chance", "float", "no"),
        ("sequence", "counts", "dict", "no"),
        ("translation", "kind", "str", "yes"),
        ("translation", "src_vocab_size", "int", "yes"),
        ("translation", "tgt_vocab_size", "int", "yes"),
        ("translation", "pad_id", "int", "yes"),
        ("translation", "bos_id", "int", "yes"),
        ("translation", "eos_id", "int", "yes"),
        ("translation", "src_lang", "str", "yes"),
        ("translation", "tgt_lang", "str", "yes"),
        ("translation", "unk_id", "int", "no"),
        ("translation", "joint", "bool", "no"),
        ("translation", "task", "str", "no"),
        ("translation", "task_kind", "str", "no"),
        ("translation", "counts", "dict", "no"),
        ("translation", "length_histogram", "dict", "no"),
        ("images", "kind", "str", "yes"),
        ("images", "image_size", "list[int]", "yes"),
        ("images", "channels", "int", "yes"),
        ("images", "num_classes", "int", "yes"),
        ("images", "digits_per_strip", "int", "no"),
        ("images", "bos_id", "int", "digit strips"),
        ("images", "eos_id", "int", "digit strips"),
        ("images", "vocab_size", "int", "digit strips"),
        ("images", "mean", "float", "no"),
        ("images", "std", "float", "no"),
        ("images", "task", "str", "no"),
        ("images", "task_kind", "str", "no"),
        ("images", "chance", "float", "no"),
        ("images", "counts", "dict", "no"),
    )
)
KINDS = tuple(dict.fromkeys(f.kind for f in META))


def _fail(folder: Path, file: str, field: str, problem: str) -> DataContractError:
    return DataContractError(f"{folder / file}: {problem} ({DOC})", file, field)


# -- the engine's entry ------------------------------------------------------------------------------
def datasets_in(outputs: Any, work_dir: str | Path) -> Iterator[tuple[str, Path]]:
    """(output, folder) for each text in a step's outputs that names a folder holding meta.json inside
    the step's ``work_dir`` (a folder it passes on from another step was checked there)."""
    root = Path(work_dir).resolve()

    def walk(value: Any, where: str):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from walk(v, f"{where}[{k!r}]" if where else str(k))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                yield from walk(v, f"{where}[{i}]")
        elif isinstance(value, str) and value and "\n" not in value and len(value) < 4096:
            try:
                folder = Path(value).resolve()
                if (folder / "meta.json").is_file() and folder.is_relative_to(root):
                    yield where, folder
            except (OSError, ValueError):  # a text that is no path
                return

    yield from walk(outputs, "")


def check_outputs(outputs: Any, work_dir: str | Path) -> None:
    """Check every dataset a step returned (``datasets_in``); the error names the output too."""
    for where, folder in datasets_in(outputs, work_dir):
        try:
            check_dataset(folder)
        except DataContractError as e:
            raise DataContractError(f"output {where!r} breaks the data contract: {e}", e.file, e.field) from None


def check_dataset(folder: str | Path) -> dict[str, Any]:
    """Check a dataset folder against the contract; return its meta. Raises ``DataContractError``."""
    folder = Path(folder)
    meta = read_meta(folder)
    check_meta(folder, meta)
    if meta["kind"] == "sequence":
        for split in SPLITS:
            _check_sequence_split(folder, split, meta)
    elif meta["kind"] == "images":
        for split in SPLITS:
            _check_images_split(folder, split, meta)
    elif meta["kind"] == "translation":
        _check_translation(folder, meta)
    return meta


# -- meta.json ---------------------------------------------------------------------------------------
def _is(value: Any, type_: str) -> bool:
    if isinstance(value, bool):
        return type_ == "bool"
    if type_ == "float":
        return isinstance(value, (int, float))
    if type_ == "list[int]":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    return isinstance(value, {"int": int, "str": str, "dict": dict, "bool": bool}[type_])


def read_meta(folder: str | Path) -> dict[str, Any]:
    """``meta.json`` of ``folder`` as a dict, or an error naming the file."""
    folder = Path(folder)
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except FileNotFoundError:
        raise _fail(folder, "meta.json", "", "missing: every dataset folder holds meta.json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _fail(folder, "meta.json", "", f"is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise _fail(folder, "meta.json", "", f"holds a {type(meta).__name__}; it must be a JSON object")
    return meta


def check_meta(folder: str | Path, meta: dict[str, Any]) -> None:
    """Check ``meta`` (the folder's meta.json) against ``META``: required fields, types, id ranges."""
    folder = Path(folder)
    kind = meta.get("kind")
    if not isinstance(kind, str):
        raise _fail(
            folder,
            "meta.json",
            "kind",
            f"field 'kind' is {'missing' if kind is None else repr(kind)}; it names the dataset's kind: "
            f"{', '.join(KINDS)} (or the kind a task of your own reads)",
        )
    fields = [f for f in META if f.kind == kind]
    if not fields:  # a kind of the user's own (a task registered with @register reads it): shared ids only
        fields = [Field(kind, name, "int", "no") for name in ("vocab_size", "pad_id")]
    for f in fields:
        if f.name not in meta:
            if f.required == "yes" or (f.required in WHEN and WHEN[f.required](meta)):
                when = "" if f.required == "yes" else f" (required for {f.required})"
                raise _fail(folder, "meta.json", f.name, f"field {f.name!r} is missing{when}")
        elif not _is(meta[f.name], f.type):
            got = f"{meta[f.name]!r} ({type(meta[f.name]).__name__})"
            raise _fail(folder, "meta.json", f.name, f"field {f.name!r} must be {f.type}, got {got}")
        elif f.type == "int" and meta[f.name] < 0:
            raise _fail(folder, "meta.json", f.name, f"field {f.name!r} is {meta[f.name]}; it must be >= 0")
    if kind == "sequence" and meta["vocab_size"] == 0 and meta.get("input_dim", 0) < 1:
        raise _fail(
            folder,
            "meta.json",
            "input_dim",
            "vocab_size is 0 (real-valued inputs) but input_dim is not >= 1: give input_dim F for x (N, T, F), "
            "or the vocab_size of token ids",
        )
    if kind == "translation":
        for side in ("src", "tgt"):
            for name in ("pad_id", "eos_id", "unk_id") + (("bos_id",) if side == "tgt" else ()):
                _below(folder, meta, name, f"{side}_vocab_size")
    elif kind == "images":
        size = meta["image_size"]
        if len(size) != 2 or min(size) < 1:
            raise _fail(folder, "meta.json", "image_size", f"image_size is {size}; it must be [H, W], each >= 1")
        if meta.get("digits_per_strip"):
            for name in ("bos_id", "eos_id"):
                _below(folder, meta, name, "vocab_size")
    elif _tokens(meta):  # sequence, or a kind of the user's own
        _below(folder, meta, "pad_id", "vocab_size")


def _below(folder: Path, meta: dict[str, Any], name: str, vocab: str) -> None:
    """``meta[name]``, an id, is below ``meta[vocab]`` (when it is given)."""
    if isinstance(meta.get(name), int) and meta[name] >= meta[vocab]:
        hint = f"; {PAD_RULE}" if name == "pad_id" else ""
        raise _fail(
            folder,
            "meta.json",
            vocab,
            f"{name} {meta[name]} is not below {vocab} {meta[vocab]}: every id must be < {vocab}{hint}",
        )


# -- tensor splits (sequence, images) ----------------------------------------------------------------
def _load(folder: Path, split: str, kind: str) -> dict[str, Any]:
    import torch

    file = f"{split}.pt"
    if not (folder / file).is_file():
        raise _fail(folder, file, "", f"missing: a {kind!r} dataset holds {', '.join(s + '.pt' for s in SPLITS)}")
    try:
        data = torch.load(folder / file, weights_only=True, mmap=True)  # reads only what is looked at
    except RuntimeError:  # a file of torch's legacy format cannot be mapped
        data = torch.load(folder / file, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is the contract's failure
        raise _fail(folder, file, "", f"cannot be read with torch.load(weights_only=True): {e}") from None
    missing = [k for k in ("x", "y") if not isinstance(data, dict) or not isinstance(data.get(k), torch.Tensor)]
    if missing:
        raise _fail(folder, file, missing[0], f"must be a dict of tensors with 'x' and 'y'; {missing[0]!r} is not one")
    if len(data["x"]) != len(data["y"]):
        raise _fail(folder, file, "y", f"x has {len(data['x'])} examples and y {len(data['y'])}")
    return data


def _span(t) -> tuple[int, int] | None:
    """(min, max) of a tensor's values, None when it is empty."""
    return (int(t.min()), int(t.max())) if t.numel() else None


def _labels(folder: Path, file: str, y, meta: dict[str, Any], ignore: bool) -> None:
    """Class labels are integers in [0, num_classes) (-100 too where a step may be unscored)."""
    if y.is_floating_point():
        raise _fail(folder, file, "y", f"y is {y.dtype}; class targets are integer tensors")
    if ignore:
        y = y[y != -100]
    span, n = _span(y), meta["num_classes"]
    if span is not None and (span[0] < 0 or span[1] >= n):
        bad = span[0] if span[0] < 0 else span[1]
        allowed = " (or -100: an unscored step)" if ignore else ""
        raise _fail(
            folder,
            file,
            "num_classes",
            f"y holds class {bad}, outside [0, num_classes) for meta.json's num_classes {n}: labels must be "
            f"0..{n - 1}{allowed}; raise num_classes or fix the labels",
        )


def _check_sequence_split(folder: Path, split: str, meta: dict[str, Any]) -> None:
    file, data = f"{split}.pt", _load(folder, split, "sequence")
    x, y, target = data["x"], data["y"], _target(meta)
    if _tokens(meta):
        if x.is_floating_point():
            raise _fail(
                folder,
                file,
                "vocab_size",
                f"x is {x.dtype} but vocab_size is {meta['vocab_size']}: token ids are "
                "integer tensors; for real-valued inputs write vocab_size 0 and input_dim F",
            )
        span, vocab = _span(x), meta["vocab_size"]
        if span is not None and span[0] < 0:
            raise _fail(folder, file, "vocab_size", f"x holds token id {span[0]}: token ids must be >= 0")
        if span is not None and span[1] >= vocab:
            raise _fail(
                folder,
                file,
                "vocab_size",
                f"x holds token id {span[1]}, not below meta.json's vocab_size {vocab}: token ids must be in "
                f"[0, vocab_size), and {PAD_RULE}; raise vocab_size to at least {span[1] + 1} or fix the ids",
            )
    elif not x.is_floating_point() or x.dim() != 3 or x.shape[-1] != meta["input_dim"]:
        raise _fail(
            folder,
            file,
            "input_dim",
            f"x is {x.dtype} {tuple(x.shape)}; real-valued inputs (vocab_size 0) are a "
            f"float tensor (N, T, input_dim) with input_dim {meta['input_dim']}",
        )
    if target == "generate":
        if y.dim() != 2 or y.shape[1] != meta["out_len"]:
            raise _fail(
                folder, file, "out_len", f"y is {tuple(y.shape)}; target generate needs (N, out_len {meta['out_len']})"
            )
    if target != "regress" and "num_classes" in meta:
        _labels(folder, file, y, meta, ignore=target == "tag")
    lengths = data.get("lengths")
    if lengths is not None and lengths.numel():
        T = x.shape[1] if x.dim() > 1 else 1
        low, high = _span(lengths)
        if low < 1 or high > T:
            raise _fail(folder, file, "lengths", f"lengths run from {low} to {high}; each must be in [1, {T}] (x's T)")


def _check_images_split(folder: Path, split: str, meta: dict[str, Any]) -> None:
    file, data = f"{split}.pt", _load(folder, split, "images")
    x, y = data["x"], data["y"]
    if not x.is_floating_point() or x.dim() != 4:
        raise _fail(
            folder, file, "image_size", f"x is {x.dtype} {tuple(x.shape)}; images are a float tensor (N, C, H, W)"
        )
    if x.shape[1] != meta["channels"]:
        raise _fail(
            folder, file, "channels", f"x has {x.shape[1]} channels, meta.json's channels is {meta['channels']}"
        )
    if list(x.shape[2:]) != list(meta["image_size"]):
        raise _fail(
            folder,
            file,
            "image_size",
            f"x's images are {list(x.shape[2:])}, meta.json's image_size is {meta['image_size']}",
        )
    strips = meta.get("digits_per_strip")
    if strips and (y.dim() != 2 or y.shape[1] != strips):
        raise _fail(folder, file, "digits_per_strip", f"y is {tuple(y.shape)}; digit strips need (N, {strips})")
    if not strips and y.dim() != 1:
        raise _fail(
            folder,
            file,
            "digits_per_strip",
            f"y is {tuple(y.shape)}: one class per image is (N,); for a strip of k "
            "digits, (N, k), write digits_per_strip, bos_id, eos_id and vocab_size in meta.json",
        )
    _labels(folder, file, y, meta, ignore=False)


# -- translation -------------------------------------------------------------------------------------
def _check_translation(folder: Path, meta: dict[str, Any]) -> None:
    if not (folder / "tokenizer.json").is_file() and not all(
        (folder / f"tokenizer.{side}.json").is_file() for side in ("src", "tgt")
    ):
        raise _fail(
            folder,
            "tokenizer.json",
            "",
            "missing: a translation dataset holds tokenizer.json (joint) or tokenizer.src.json and tokenizer.tgt.json",
        )
    if not (folder / "data").is_dir():
        raise _fail(folder, "data", "", "missing: a translation dataset saves its DatasetDict under data/")
    from datasets import load_from_disk

    try:
        ds = load_from_disk(str(folder / "data"))
    except Exception as e:  # noqa: BLE001 - any unreadable folder is the contract's failure
        raise _fail(folder, "data", "", f"cannot be read with datasets.load_from_disk: {e}") from None
    for split in SPLITS:
        if split not in ds:
            raise _fail(folder, f"data/{split}", "", f"missing: data/ holds the splits {', '.join(SPLITS)}")
        columns = ds[split].column_names
        for column in ("src", "tgt", "src_ids", "tgt_ids"):
            if column not in columns:
                raise _fail(folder, f"data/{split}", column, f"has no column {column!r} (it has {columns})")
        for side in ("src", "tgt"):
            _ids(folder, f"data/{split}", f"{side}_ids", _arrow_span(ds[split].data.table.column(f"{side}_ids")), meta)
            ids = folder / "arrays" / f"{split}.{side}.ids.npy"
            if ids.is_file():  # what the trainer reads when the folder has it
                _ids(folder, f"arrays/{ids.name}", f"{side}_ids", _array_span(ids), meta)


def _arrow_span(column) -> tuple[int, int] | None:
    import pyarrow.compute as pc

    found = pc.min_max(pc.list_flatten(column)).as_py()
    return None if found["min"] is None else (int(found["min"]), int(found["max"]))


def _array_span(file: Path) -> tuple[int, int] | None:
    import numpy as np

    ids = np.load(file, mmap_mode="r")
    return (int(ids.min()), int(ids.max())) if len(ids) else None


def _ids(folder: Path, file: str, column: str, span: tuple[int, int] | None, meta: dict[str, Any]) -> None:
    vocab = column.replace("_ids", "_vocab_size")
    if span is None:
        return
    if span[0] < 0:
        raise _fail(folder, file, vocab, f"{column} holds id {span[0]}: ids must be >= 0")
    if span[1] >= meta[vocab]:
        raise _fail(
            folder,
            file,
            vocab,
            f"{column} holds id {span[1]}, not below meta.json's {vocab} {meta[vocab]}: ids must be in "
            f"[0, {vocab}), pad, BOS, EOS and UNK included; raise {vocab} to at least {span[1] + 1} or re-encode",
        )
