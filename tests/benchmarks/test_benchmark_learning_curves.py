"""benchmarks/learning_curves.py measures the default learning curve inside one run, beside a run without it."""

import argparse
from pathlib import Path

import pytest
import torch

from tests.support.benchmarks import load

pytestmark = pytest.mark.slow  # trains twice on a quick-profile data folder

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load("learning_curves")


def test_the_share_is_measured_in_the_default_run_and_the_summary_is_unchanged():
    torch.set_num_threads(1)
    args = argparse.Namespace(only=["lstm"], steps=12, eval_batches=None, eval_bleu=None)
    (row,) = _bench().measure(args)
    assert row["config"] == "lstm" and row["steps"] == 12
    assert 0.0 < row["eval_s"] < row["loop_s"] and row["eval_share"] == round(row["eval_s"] / row["loop_s"], 3)
    assert row["same_valid_loss"]  # the end's evaluation, with and without the curve
