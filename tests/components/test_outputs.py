"""A step's summary: its headline numbers as metrics, every value in its summary.json table."""

import json

import pytest

from components import Context
from components.outputs import charted, log_summary


@pytest.mark.parametrize(
    "key",
    [
        "time_s/lstm/T_64",
        "bleu/lstm/len_1-10",
        "acc/lag_50",
        "grad/d_5",
        "entropy/scaled/dk_16",
        "count/len_11-20",
        "bleu_ci/transformer",
        "time_exp_ci/rnn",
        "time_s_df/rnn/T_8",
    ],
)
def test_a_point_of_an_axis_or_an_uncertainty_is_a_table_row(key):
    assert not charted(key)


@pytest.mark.parametrize(
    "key", ["rho", "time_exp/rnn", "bleu/seq2seq-small", "bleu/bahdanau-small/longest", "params_spread", "n_train"]
)
def test_a_headline_number_is_charted(key):
    assert charted(key)


def test_log_summary_logs_the_headlines_and_writes_every_value(tmp_path):
    ctx = Context(tmp_path, component="probe.timing")
    summary = {"time_exp/rnn": 1.02, "time_s/rnn/T_16": 0.5, "time_exp_ci/rnn": 0.1, "label": "x", "nan": float("nan")}
    log_summary(ctx, summary)
    assert set(ctx.metrics) == {"probe/timing/time_exp/rnn", "probe/timing/nan"}
    table = json.loads((tmp_path / "summary.json").read_text())
    assert table == {"time_exp/rnn": 1.02, "time_s/rnn/T_16": 0.5, "time_exp_ci/rnn": 0.1, "label": "x", "nan": None}
    assert tmp_path / "summary.json" in ctx.artifacts
