"""The model factory contract (docs/contracts.md, "What a model factory receives"): the keywords
``train.model`` calls a user's ``package.module:function`` with, for each task kind, recorded through
the real build path (``prepare``) on tiny data of every kind, shipped and minimal (meta.json's
required fields only), and held equal to the doc's table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.data.contract import check_dataset
from components.train.config import TrainConfig
from components.train.prepare import prepare
from tests.support import recording_models
from tests.support.doc_tables import table

pytestmark = pytest.mark.slow  # a dozen tiny datasets, translation's tokenizer among them
RECORD = "tests.support.recording_models:record"
SMALL = {"n_train": 16, "n_valid": 8, "n_test": 8}
N = 8


def _write(folder: Path, meta: dict, x: torch.Tensor, y: torch.Tensor, lengths: bool = True) -> Path:
    """A dataset of the user's own: the same ``N`` examples in every split, and ``meta``."""
    folder.mkdir(parents=True)
    split = {"x": x, "y": y} | ({"lengths": torch.full((len(x),), x.shape[1])} if lengths else {})
    for name in ("train", "valid", "test"):
        torch.save(split, folder / f"{name}.pt")
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def _minimal(root: Path) -> dict[str, list[tuple[str, Path]]]:
    """Datasets whose meta.json holds only what the contract requires (pad_id where it is optional too)."""
    tok, flt = torch.randint(0, 4, (N, 3)), torch.randn(N, 3, 2)
    cls, reg, tags = torch.randint(0, 2, (N,)), torch.randn(N), torch.randint(0, 4, (N, 3))
    seq = {"kind": "sequence"}
    tokens = seq | {"vocab_size": 5, "pad_id": 4}
    floats = seq | {"vocab_size": 0, "input_dim": 2}
    return {
        "seq_classify": [
            ("tokens", _write(root / "classify-tokens", tokens | {"num_classes": 2}, tok, cls)),
            ("floats", _write(root / "classify-floats", floats | {"num_classes": 2}, flt, cls)),
        ],
        "seq_tag": [
            ("tokens", _write(root / "tag-tokens", tokens | {"target": "tag", "num_classes": 4}, tok, tags)),
            ("floats", _write(root / "tag-floats", floats | {"target": "tag", "num_classes": 4}, flt, tags)),
        ],
        "seq_regress": [
            ("tokens", _write(root / "regress-tokens", tokens | {"target": "regress"}, tok, reg)),
            ("floats", _write(root / "regress-floats", floats | {"target": "regress"}, flt, reg)),
        ],
        "seq_generate": [
            (
                f"pad_id {pad}",
                _write(
                    root / f"generate-{pad}",
                    seq | {"target": "generate", "vocab_size": 6, "num_classes": 3, "out_len": 2} | pad,
                    torch.randint(0, 5, (N,)),
                    torch.randint(0, 3, (N, 2)),
                    lengths=False,
                ),
            )
            for pad in ({}, {"pad_id": 5})
        ],
        "image_classify": [
            (
                "square",
                _write(
                    root / "images",
                    {"kind": "images", "image_size": [4, 4], "channels": 1, "num_classes": 3},
                    torch.randn(N, 1, 4, 4),
                    torch.randint(0, 3, (N,)),
                    lengths=False,
                ),
            )
        ],
        "image_seq": [
            (
                "strips",
                _write(
                    root / "strips",
                    {"kind": "images", "image_size": [4, 8], "channels": 1, "num_classes": 3}
                    | {"digits_per_strip": 2, "bos_id": 3, "eos_id": 4, "vocab_size": 5},
                    torch.randn(N, 1, 4, 8),
                    torch.randint(0, 3, (N, 2)),
                    lengths=False,
                ),
            )
        ],
    }


def _shipped(root: Path) -> dict[str, list[tuple[str, Path]]]:
    """Tiny datasets of the shipped data components, by the task kind train.model reads them as."""

    def made(name: str, label: str, **params) -> tuple[str, Path]:
        return f"{name} {label}".strip(), Path(
            get(name)(Context(work_dir=root / f"{name}-{label}"), **params)["dataset"]
        )

    digits = made("data.digits", "")
    return {
        "seq_classify": [
            made("data.delayed_recall", "", lag=2, vocab=4, **SMALL),
            made("data.variable_length", "", min_len=2, max_len=5, **SMALL),
            made("data.agreement", "", nouns=2, adjectives=2, **SMALL),
            made("data.patches", "", images=str(digits[1]), patch=4),
        ],
        "seq_tag": [
            made("data.delayed_recall", "tag", lag=2, vocab=4, target="tag", **SMALL),
            made("data.multi_lookup", "", seq_len=8, vocab=4, offsets=[1, 2], **SMALL),
        ],
        "seq_regress": [made("data.adding", "", seq_len=20, **SMALL)],
        "seq_generate": [made("data.spell", "", base=3, length=2, **SMALL)],
        "translation": [
            made("data.synthetic_translation", "", vocab=6, min_len=2, max_len=6, n_train=64, n_valid=8, n_test=8)
        ],
        "image_classify": [digits],
        "image_seq": [made("data.digit_strips", "", images=str(digits[1]), digits=2, **SMALL)],
    }


def _build(root: Path, data: Path, model: str = RECORD, overrides: dict | None = None) -> tuple[str, dict]:
    """(task kind, the factory's keywords) of building ``model`` for ``data`` as train.model does."""
    cfg = TrainConfig(data=str(data), model=model, overrides=overrides, steps=1)
    run = prepare(Context(work_dir=root / "run" / data.name, component="train.model"), cfg)
    return run.task.kind, recording_models.CALLS[-1]


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> dict[str, list[tuple[str, dict]]]:
    """Task kind -> (dataset, the keywords a ``**kwargs`` factory received) for every dataset."""
    root = tmp_path_factory.mktemp("factory")
    found: dict[str, list[tuple[str, dict]]] = {}
    for made in (_shipped(root), _minimal(root)):
        for kind, folders in made.items():
            for label, folder in folders:
                check_dataset(folder)  # each meets the data contract: the minimal ones with its required fields
                got, kwargs = _build(root, folder)
                assert got == kind, f"{label}: read as {got}, not {kind}"
                found.setdefault(kind, []).append((label, kwargs))
    return found


def test_the_doc_says_which_keywords_each_task_kind_gives(received):
    rows = table("### What a model factory receives")
    doc: dict[str, dict[str, dict[str, str]]] = {}
    for row in rows:
        doc.setdefault(row["task kind"], {})[row["keyword"]] = row
    assert set(doc) == set(received), "the doc's task kinds are the kinds train.model reads"
    for kind, calls in received.items():
        given = [set(kwargs) for _, kwargs in calls]
        always = {k for k, row in doc[kind].items() if row["given"].startswith("always")}
        assert set(doc[kind]) == set().union(*given), f"{kind}: the keywords some dataset of it gives"
        assert always == set.intersection(*given), f"{kind}: the keywords every dataset of it gives ('always')"
        for label, kwargs in calls:
            for k, v in kwargs.items():
                types = {t.split("[")[0].strip() for t in doc[kind][k]["type"].split(" or ")}  # tuple[int, int]: tuple
                assert type(v).__name__ in types, f"{kind} ({label}): {k} is a {type(v).__name__}, the doc says {types}"


def test_data_values_the_doc_states(received):
    """The values the doc's table words: a pad id of 0 is given, vocab_size 0 for real-valued inputs,
    one class for regress, a square image's side as an int and a strip's (H, W) as a tuple."""
    calls = {(kind, label): kwargs for kind, found in received.items() for label, kwargs in found}
    assert (
        calls["seq_classify", "data.patches"]["vocab_size"] == 0
        and calls["seq_classify", "data.patches"]["pad_id"] == 0
    )
    assert calls["seq_regress", "data.adding"]["num_classes"] == 1
    assert calls["seq_tag", "data.multi_lookup"]["num_classes"] == 4 * 2  # classes x outputs per step
    assert calls["image_classify", "data.digits"]["image_size"] == 8
    assert calls["image_seq", "data.digit_strips"]["image_size"] == (8, 16)
    assert calls["image_seq", "data.digit_strips"]["tgt_vocab_size"] == 12  # digits, BOS and EOS
    assert calls["translation", "data.synthetic_translation"]["pad_id"] == 0


def test_a_factory_gets_the_keywords_it_declares_and_the_overrides_as_written(tmp_path):
    data = _minimal(tmp_path / "data")["seq_classify"][0][1]
    assert _build(tmp_path, data, "tests.support.recording_models:declared")[1] == {"vocab_size": 5, "num_classes": 2}
    _, kwargs = _build(tmp_path, data, "tests.support.recording_models:declared", {"hidden": 7, "num_classes": 3})
    assert kwargs == {"vocab_size": 5, "num_classes": 3, "hidden": 7}  # overrides replace the data's values
    _, kwargs = _build(tmp_path, data, RECORD, {"width": 9})
    assert kwargs == {"vocab_size": 5, "pad_id": 4, "num_classes": 2, "width": 9}
