"""Fixtures of the trainer's tests: one thread, and a small toy translation folder."""

from __future__ import annotations

import pytest
import torch

from components import Context, get


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def mt(tmp_path_factory):
    root = tmp_path_factory.mktemp("mt")
    return get("data.synthetic_translation")(
        Context(root), vocab=12, min_len=2, max_len=12, n_train=200, n_valid=16, n_test=16
    )["dataset"]
