"""Task kinds: each is one class in a registry, chosen once from the data's meta.json; a new one is
a class and its registration, and trains through ``train.model`` with nothing else edited."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.train import tasks
from components.train.build import TrainError, data_overrides
from components.train.tasks import Task, choose, lookup, register
from components.train.tasks.base import logits
from components.train.tasks.sequence import Sequence

sys.path.insert(0, str(Path(__file__).parent))
from test_train_standins import write_sequence_data  # noqa: E402

FORWARDS: list[tuple[int, ...]] = []  # the input shapes the new kind's forward saw


class SeqFirst(Sequence):
    """Many-to-one on the first token: the model reads the sequence reversed, so it ends there."""

    kind, target = "seq_first", "first"

    @classmethod
    def config_from(cls, meta):
        return super().config_from(meta) | {"hidden": 24}

    def forward(self, model, x, y, lengths):
        FORWARDS.append(tuple(x.shape))
        return logits(model(x.flip(1))), y


@pytest.fixture
def seq_first(monkeypatch):
    """Register ``SeqFirst`` for one test (the registry as it was afterwards)."""
    monkeypatch.setattr(tasks.registry, "KINDS", dict(tasks.registry.KINDS))
    FORWARDS.clear()
    return register(SeqFirst)


def first_token_data(path: Path) -> Path:
    data = write_sequence_data(path, n=64, target="first")
    meta = json.loads((data / "meta.json").read_text())
    (data / "meta.json").write_text(json.dumps(meta | {"target": "first"}))
    return data


def test_a_new_kind_is_one_class_and_its_registration(tmp_path, seq_first):
    data = first_token_data(tmp_path / "data")
    assert type(Task(data, "cpu")) is SeqFirst
    assert data_overrides(json.loads((data / "meta.json").read_text()), "test_train_standins:tiny_rnn")["hidden"] == 24
    ctx = Context(tmp_path / "run")
    s = get("train.model")(
        ctx, data=str(data), model="test_train_standins:tiny_rnn", steps=4, batch_size=16, eval_every=2
    )["summary"]
    assert s["steps"] == 4 and not s["diverged"] and 0 <= s["test_acc"] <= 1
    assert ctx.params["task_kind"] == "seq_first"
    assert len(FORWARDS) > 4 and set(FORWARDS) == {(16, 6)}  # its forward ran the steps and the evaluations


def test_an_unknown_kind_is_an_error_that_names_the_known_ones(tmp_path):
    with pytest.raises(TrainError, match=r"unknown task kind 'seq_clasify': the known kinds are image_classify, "):
        lookup("seq_clasify")
    with pytest.raises(TrainError, match="did you mean 'seq_classify'"):
        choose({"task_kind": "seq_clasify"})
    data = first_token_data(tmp_path / "data")  # target "first": no kind reads it until one registers
    with pytest.raises(TrainError, match=r"no task kind reads this data \(meta.json kind 'sequence', target 'first'\)"):
        get("train.model")(Context(tmp_path / "run"), data=str(data), model="test_train_standins:tiny_rnn", steps=2)
    with pytest.raises(TrainError, match="the known kinds are .*seq_classify, seq_generate, seq_regress, seq_tag"):
        choose({"kind": "audio"})


def test_a_name_registered_twice_is_an_error(seq_first):
    with pytest.raises(TrainError, match="task kind 'seq_first' is registered twice: SeqFirst and Again"):
        register(type("Again", (SeqFirst,), {}))


@pytest.mark.parametrize(
    "meta,kind",
    [
        ({"kind": "sequence"}, "seq_classify"),
        ({"kind": "sequence", "target": "tag"}, "seq_tag"),
        ({"kind": "sequence", "target": "regress"}, "seq_regress"),
        ({"kind": "sequence", "target": "generate", "out_len": 4}, "seq_generate"),
        ({"kind": "translation"}, "translation"),
        ({"kind": "images", "digits_per_strip": 2}, "image_seq"),
        ({"kind": "images"}, "image_classify"),
        ({"kind": "images", "task_kind": "image_seq"}, "image_seq"),  # named outright
    ],
)
def test_the_meta_chooses_one_kind(meta, kind):
    assert choose(meta).kind == kind


def test_images_without_a_strip_count_are_strips_when_their_targets_are_sequences():
    strips = lambda: {"y": torch.zeros(4, 3, dtype=torch.long)}  # noqa: E731  (N, k): an older strips folder
    assert choose({"kind": "images"}, strips).kind == "image_seq"
