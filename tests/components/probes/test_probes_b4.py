"""Position and attention probes: permutation, attention entropy, parameter count, ViT positions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.probes.common import ProbeError

sys.path.insert(0, str(Path(__file__).parents[1] / "train"))


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_self_attention_without_positions_is_permutation_equivariant(tmp_path):
    s = get("probe.permutation")(
        Context(tmp_path),
        models={"none": "transformer-encoder-tiny", "sinusoidal": "transformer-encoder-tiny"},
        overrides={"none": {"positions": "none"}},
    )["summary"]
    assert s["error/none"] < 1e-10 and s["error/sinusoidal"] > 1e-2


def test_unscaled_softmax_saturates_as_dk_grows(tmp_path):
    s = get("probe.attention_entropy")(Context(tmp_path), d_k=[16, 64, 256])["summary"]
    assert s["entropy/unscaled/dk_16"] > s["entropy/unscaled/dk_64"] > s["entropy/unscaled/dk_256"]
    assert abs(s["entropy/scaled/dk_16"] - s["entropy/scaled/dk_256"]) < 0.02
    assert s["unscaled_drop"] < 0.5 and s["scaled_min"] > 0.9  # layer init: scaled attention stays spread
    unit = get("probe.attention_entropy")(Context(tmp_path / "u"), d_k=[16, 256], init="unit")["summary"]
    assert unit["entropy/unscaled/dk_256"] < unit["entropy/unscaled/dk_16"] < unit["entropy/scaled/dk_16"]


def test_param_count_is_constant_for_an_rnn_and_grows_with_learned_positions(tmp_path):
    rnn = get("probe.param_count")(Context(tmp_path / "r"), model="rnn-tiny", lengths=[8, 64])["summary"]
    assert rnn["params_constant"] == 1 and rnn["runs_all"] == 1 and rnn["params/T_8"] > 0
    learned = get("probe.param_count")(
        Context(tmp_path / "t"),
        model="transformer-encoder-tiny",
        overrides={"positions": "learned"},
        length_field="max_len",
        lengths=[8, 64],
    )["summary"]
    assert learned["params/T_64"] - learned["params/T_8"] == 56 * 32  # one d_model row per position
    with pytest.raises(ProbeError, match="no config field 'max_lenn'"):
        get("probe.param_count")(Context(tmp_path / "x"), model="rnn-tiny", length_field="max_lenn")


def test_position_similarity_separates_grid_like_from_scrambled_embeddings(tmp_path):
    grid = get("probe.position_similarity")(Context(tmp_path / "g"), model="test_train_standins:grid_positions")
    scrambled = get("probe.position_similarity")(
        Context(tmp_path / "s"), model="test_train_standins:grid_positions", overrides={"scrambled": True}
    )
    assert grid["summary"]["neighbour_minus_far"] > 0.3
    assert scrambled["summary"]["neighbour_minus_far"] < grid["summary"]["neighbour_minus_far"] - 0.3
    assert Path(grid["plot"]).exists()
    vit = get("probe.position_similarity")(Context(tmp_path / "v"), model="vit-tiny")["summary"]
    assert vit["grid_h"] >= 3 and "neighbour_cos" in vit
