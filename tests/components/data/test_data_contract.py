"""The data contract (docs/contracts.md, "The fields of meta.json" and "Checked where the data is
made"): the doc's table is the one the check reads, and data that breaks it fails at the step that
wrote it, naming the file and the field."""

import json
import re
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from components import Context, get
from components.data.contract import KINDS, META, WHEN, DataContractError, check_dataset, datasets_in
from tests.support.doc_tables import table
from tests.support.files import write

N = 6


def _sequence(folder: Path, meta: dict, x: torch.Tensor | None = None, y: torch.Tensor | None = None, **broken) -> Path:
    """A token classify dataset (ids 0..3, pad 4, vocab_size 5); ``broken`` replaces one split's tensors."""
    folder.mkdir(parents=True)
    x = torch.randint(0, 4, (N, 3)) if x is None else x
    y = torch.randint(0, 2, (N,)) if y is None else y
    for split in ("train", "valid", "test"):
        tensors = {"x": x, "y": y, "lengths": torch.full((N,), x.shape[1])} | broken.get(split, {})
        torch.save(tensors, folder / f"{split}.pt")
    meta = {"kind": "sequence", "vocab_size": 5, "pad_id": 4, "num_classes": 2} | meta
    (folder / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if v is not None}))
    return folder


def _refused(folder: Path) -> DataContractError:
    with pytest.raises(DataContractError) as e:
        check_dataset(folder)
    return e.value


def test_the_doc_table_is_the_contract_the_check_reads():
    doc = [(r["kind"], r["field"], r["type"], r["required"]) for r in table("### The fields of meta.json")]
    assert doc == [(f.kind, f.name, f.type, f.required) for f in META]
    assert {f.required for f in META} - {"yes", "no"} == set(WHEN)  # every condition the doc names is checked
    assert KINDS == ("sequence", "translation", "images")


def test_minimal_data_of_each_kind_passes(tmp_path):
    _sequence(tmp_path / "tokens", {})
    _sequence(tmp_path / "floats", {"vocab_size": 0, "input_dim": 2, "pad_id": None}, x=torch.randn(N, 3, 2))
    _sequence(tmp_path / "ids-from-1", {"vocab_size": 5, "pad_id": 0}, x=torch.randint(1, 5, (N, 3)))
    (tmp_path / "audio").mkdir()  # a kind a task of the user's own reads: only shared ids are checked
    (tmp_path / "audio" / "meta.json").write_text('{"kind": "audio", "vocab_size": 3, "pad_id": 2}')
    for name in ("tokens", "floats", "ids-from-1", "audio"):
        check_dataset(tmp_path / name)


def test_ids_equal_to_vocab_size_name_the_split_file_and_vocab_size(tmp_path):
    x = torch.randint(0, 4, (N, 3))
    x[0, 0] = 5  # pad_id 4, and one symbol too many
    e = _refused(_sequence(tmp_path / "d", {}, x=x))
    assert (e.file, e.field) == ("train.pt", "vocab_size")
    assert (
        "train.pt: x holds token id 5, not below meta.json's vocab_size 5: token ids must be in [0, vocab_size)"
        in str(e)
    )
    assert "vocab_size counts the pad token" in str(e) and "raise vocab_size to at least 6" in str(e)


@pytest.mark.parametrize(
    ("meta", "broken", "file", "field", "words"),
    [
        ({"pad_id": 5}, {}, "meta.json", "vocab_size", "pad_id 5 is not below vocab_size 5"),
        ({"pad_id": None}, {}, "meta.json", "pad_id", "field 'pad_id' is missing (required for padded token inputs)"),
        ({"kind": None}, {}, "meta.json", "kind", "field 'kind' is missing"),
        ({"vocab_size": "5"}, {}, "meta.json", "vocab_size", "field 'vocab_size' must be int, got '5' (str)"),
        ({"vocab_size": 0}, {}, "meta.json", "input_dim", "field 'input_dim' is missing"),
        (
            {},
            {"valid": {"y": torch.full((N,), 2)}},
            "valid.pt",
            "num_classes",
            "y holds class 2, outside [0, num_classes)",
        ),
        ({}, {"test": {"x": torch.randn(N, 3)}}, "test.pt", "vocab_size", "x is torch.float32 but vocab_size is 5"),
        ({}, {"train": {"lengths": torch.full((N,), 4)}}, "train.pt", "lengths", "each must be in [1, 3]"),
        ({"target": "generate", "out_len": 2}, {}, "train.pt", "out_len", "target generate needs (N, out_len 2)"),
    ],
)
def test_a_broken_dataset_names_the_file_and_the_field(tmp_path, meta, broken, file, field, words):
    e = _refused(_sequence(tmp_path / "d", meta, **broken))
    assert (e.file, e.field) == (file, field) and words in str(e)


def test_a_missing_split_and_images_that_disagree_with_their_meta(tmp_path):
    folder = _sequence(tmp_path / "d", {})
    (folder / "test.pt").unlink()
    assert _refused(folder).file == "test.pt"
    images = tmp_path / "images"
    images.mkdir()
    for split in ("train", "valid", "test"):
        torch.save({"x": torch.randn(N, 3, 4, 4), "y": torch.randint(0, 3, (N,))}, images / f"{split}.pt")
    (images / "meta.json").write_text(
        json.dumps({"kind": "images", "image_size": [4, 4], "channels": 1, "num_classes": 3})
    )
    assert _refused(images).field == "channels"


def test_translation_ids_above_the_vocabulary_name_the_column_and_the_size(tmp_path):
    made = get("data.synthetic_translation")(
        Context(work_dir=tmp_path / "w"), vocab=6, min_len=2, max_len=6, n_train=32, n_valid=8, n_test=8
    )
    folder = Path(made["dataset"])
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps(meta | {"tgt_vocab_size": meta["tgt_vocab_size"] - 1}))
    e = _refused(folder)
    assert (e.file, e.field) == ("data/train", "tgt_vocab_size") and "tgt_ids holds id" in str(e)


def test_the_engine_checks_the_folders_a_step_wrote_and_only_those(tmp_path):
    own = _sequence(tmp_path / "work" / "dataset", {})
    other = _sequence(tmp_path / "elsewhere", {})
    outputs = {"dataset": str(own), "source": str(other), "text": "not a path\n", "many": {"a": [str(own)]}}
    assert list(datasets_in(outputs, tmp_path / "work")) == [("dataset", own), ("many['a'][0]", own)]


USER_DATA = '''\
import json

import torch

from components import Context, component


@component("mylab.csv_tokens", outputs=["dataset"])
def csv_tokens(ctx: Context, *, rows: int = 8) -> dict:
    """Token rows of ids 1..5 with pad 0, and vocab_size 5: the pad not counted."""
    out = ctx.path("dataset")
    out.mkdir()
    for split in ("train", "valid", "test"):
        x = torch.arange(rows * 4).reshape(rows, 4) % 5 + 1
        torch.save({"x": x, "y": x[:, 0] % 2, "lengths": torch.full((rows,), 4)}, out / f"{split}.pt")
    (out / "meta.json").write_text(json.dumps({"kind": "sequence", "vocab_size": 5, "pad_id": 0, "num_classes": 2}))
    return {"dataset": str(out)}
'''


@pytest.mark.slow  # a pipeline through Prefect and MLflow (its steps in threads)
def test_a_users_data_component_writing_ids_equal_to_vocab_size_fails_at_its_own_step(tmp_path, home, monkeypatch):
    from flows.cli import app

    (tmp_path / "mydata.py").write_text(USER_DATA)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")
    path = write(
        tmp_path,
        """\
        name: user-data
        steps:
          data: {uses: "mydata:csv_tokens"}
          train: {uses: train.model, with: {data: "${data.dataset}", model: rnn-tiny, steps: 2}}
        """,
    )
    result = CliRunner().invoke(app, ["run", str(path)])
    said = " ".join(result.output.split())
    assert result.exit_code == 1, said
    assert "step data failed: DataContractError: output 'dataset' breaks the data contract:" in said
    assert re.search(
        r"dataset/train\.pt: x holds token id 5, not below meta\.json's vocab_size 5: token ids must be in "
        r"\[0, vocab_size\), and vocab_size counts the pad token: ids 0\.\.V-1 with pad_id V make vocab_size V \+ 1; "
        r"raise vocab_size to at least 6 or fix the ids",
        said,
    ), said
    assert "not run because an upstream step failed: train" in said
