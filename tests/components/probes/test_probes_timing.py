"""probe.timing (B4): sequential steps, Table-1 FLOPs, time and memory against T per model."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

from components import Context, get
from components.probes.common import ProbeError
from tests.support.recording import RecordingContext

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_timing_counts_steps_flops_and_memory_per_model(tmp_path):
    ctx = RecordingContext(tmp_path)
    out = get("probe.timing")(
        ctx,
        models={"rnn": "rnn-tiny", "naive": "transformer-encoder-tiny", "sdpa": "transformer-encoder-tiny"},
        overrides={"naive": {"naive": True, "num_layers": 2}, "sdpa": {"num_layers": 2}},
        lengths=[128, 512, 1024],
        batch=4,
        repeats=3,  # a time is the best of its repeats: one preemption on a loaded machine does not count
        warmup=1,
    )
    s = out["summary"]
    for T in (128, 512, 1024):
        assert s[f"seq_steps_per_layer/rnn/T_{T}"] == T and s[f"seq_steps/rnn/T_{T}"] == T
        assert s[f"seq_steps_per_layer/sdpa/T_{T}"] == 1 and s[f"seq_steps/sdpa/T_{T}"] == 2
    # Table 1: self-attention n^2 d (d_model 32), recurrent n d^2 (hidden 16)
    assert s["flops_per_layer/sdpa/T_512"] == 512 * 512 * 32 and s["flops_per_layer/rnn/T_512"] == 512 * 16 * 16
    # the explicit T x T weights cost memory that the fused kernel never materialises
    assert s["memory_mb/naive/T_1024"] > 2 * s["memory_mb/sdpa/T_1024"]
    # known growth: the RNN's activations and the fused kernel's memory are linear in T, the explicit
    # T x T weights quadratic (measured 1.05, 1.02 and 1.82 here)
    assert 0.8 <= s["memory_exp/rnn"] <= 1.3 and 0.8 <= s["memory_exp/sdpa"] <= 1.3
    assert s["memory_exp/naive"] > 1.6
    # each exponent carries its 95% half-width, which the scorecard reads as its own uncertainty
    # (``memory_exp_ci/<label>`` beside ``memory_exp/<label>``), and its t degrees of freedom: the
    # memory fit's from its residuals (3 lengths: 1 df), the time's from its 3 repeats' fits (2 df)
    for label in ("rnn", "naive", "sdpa"):
        for what, df in (("time_exp", 2), ("memory_exp", 1)):
            assert math.isfinite(s[f"{what}_ci/{label}"]) and s[f"{what}_ci/{label}"] >= 0, (what, label)
            assert s[f"{what}_df/{label}"] == df, (what, label)
    assert all(s[f"time_s_df/{lab}/T_128"] == 2 for lab in ("rnn", "naive", "sdpa") if f"time_s_ci/{lab}/T_128" in s)
    # T steps one after the other: 8x the length costs the RNN well over 2x the time (measured 11-13x)
    assert s["time_s/rnn/T_1024"] > 2 * s["time_s/rnn/T_128"] > 0
    assert s["threads"] == 1 and s["memory_method"].startswith("VmHWM")
    assert Path(out["plot"]).exists() and Path(out["table"]).exists()
    assert ctx.params["device"] == "cpu" and ctx.params["dtype"] == "float32"
    (bar,) = ctx.handles  # progress: one model at a time, all three done
    assert (bar.total, bar.completed, bar.description) == (3, 3, "timing sdpa")


def test_timing_rejects_overrides_for_unknown_labels(tmp_path):
    with pytest.raises(ProbeError, match="name no model"):
        get("probe.timing")(Context(tmp_path), models={"rnn": "rnn-tiny"}, overrides={"rn": {}})


def test_the_time_exponent_is_the_mean_of_each_repeats_fit_with_their_spread_on_t():
    from scipy import stats

    from components.probes.timing import _repeated_fit

    Ts = [256, 512, 1024]
    # three sweeps whose exponents are exactly 1.4, 1.5 and 1.6
    times = [[1e-6 * T**k for k in (1.4, 1.5, 1.6)] for T in Ts]
    k, half, df = _repeated_fit(Ts, times)
    assert k == pytest.approx(1.5) and df == 2
    assert half == pytest.approx(stats.t.ppf(0.975, 2) * 0.1 / 3**0.5)  # sd 0.1 over 3 fits
    # one repeat leaves no spread to judge by: the caller falls back to the residuals' fit
    assert math.isnan(_repeated_fit(Ts, [[t[0]] for t in times])[0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked measurements are Linux's")
def test_a_measurement_that_fails_in_its_fork_names_the_model_and_the_next_one_still_runs():
    from components.probes.timing import _Measurers

    spec = {"lengths": [8], "batch": 1, "warmup": 0, "repeats": 1, "threads": 1, "dtype": "float32"}
    spec |= {"device": "cpu", "seed": 0, "mode": "time", "overrides": {}}
    measurers = _Measurers("cpu")
    assert measurers.fork
    try:
        with pytest.raises(
            ProbeError, match=r"(?s)timing no-such-model failed \(the measuring process exited with 1\).*no-such-model"
        ):
            measurers.run({**spec, "model": "no-such-model"})
        rows = measurers.run({**spec, "model": "rnn-tiny"})["rows"]
        (template,) = [proc for proc, _ in measurers.templates.values()]
    finally:
        measurers.close()
    assert [r["T"] for r in rows] == [8] and rows[0]["seconds"] > 0
    assert template.returncode == 0  # the template outlived the failed fork and left when closed
