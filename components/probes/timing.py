"""probe.timing (B4): wall-clock, peak memory, sequential steps and FLOPs against sequence length."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from components import Context, component
from components.bounds import Count, Size, Sizes
from components.colours import colours
from components.model_names import ModelName
from components.probes import common as P
from components.probes.timing_worker import EXACT_MALLOC_ENV
from components.train.build import accepted_fields, build_model


def structure(model) -> dict[str, Any]:
    """Return family, layers and width of a built model (what the analytic counts need)."""
    family = getattr(model, "family", "unknown")
    layers = P.config_value(model, "num_layers", "n_encoder_layers", "n_layers", default=1)
    width = P.config_value(model, "d_model", "hidden_size", "channels", default=0)
    kernel = P.config_value(model, "kernel_size", default=3)
    return {"family": family, "layers": int(layers), "width": int(width), "kernel": int(kernel)}


def sequential_steps(family: str, T: int, layers: int) -> tuple[int, int]:
    """Return (dependent steps per layer, critical path through the stack).

    A recurrent layer waits for step t-1 at every t (T per layer; stacked layers pipeline into
    T + L - 1); self-attention and convolution compute all positions at once (1 per layer).
    """
    if family in ("rnn", "seq2seq"):
        return T, T + layers - 1
    return 1, layers


def flops_per_layer(family: str, T: int, d: int, k: int) -> int:
    """Per-layer complexity from Vaswani et al. (2017) Table 1: n^2 d, n d^2 or k n d^2."""
    if family in ("rnn", "seq2seq"):
        return T * d * d
    if family in ("conv1d", "cnn"):
        return k * T * d * d
    return T * T * d


def _worker_env(extra_env: dict[str, str] | None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **(extra_env or {})}


def _run_worker(spec: dict, extra_env: dict[str, str] | None = None) -> dict:
    """One measurement in a process started for it."""
    res = subprocess.run(
        [sys.executable, "-m", "components.probes.timing_worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=_worker_env(extra_env),
        cwd=str(Path.cwd()),
    )
    if res.returncode != 0:
        raise P.ProbeError(f"timing {spec['model']} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


class _Measurers:
    """Where the measurements run. On a Linux CPU, one process per pass (time, memory) imports torch
    once and forks a child per model (``timing_worker.serve``): each model still runs in a process of
    its own, started from the same state, under the pass's allocator settings. Elsewhere (CUDA, which
    must not be forked, or no ``fork``) each measurement starts a process of its own."""

    def __init__(self, device: str):
        self.fork = device == "cpu" and sys.platform.startswith("linux") and hasattr(os, "fork")
        self.templates: dict[str, tuple[subprocess.Popen, Any]] = {}

    def run(self, spec: dict, extra_env: dict[str, str] | None = None) -> dict:
        if not self.fork:
            return _run_worker(spec, extra_env)
        proc, errors = self._template(spec["mode"], extra_env)
        try:
            proc.stdin.write(json.dumps(spec) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline() or "{}")
        except (OSError, ValueError):
            reply = {}
        if "result" not in reply:
            errors.seek(0)
            why = reply.get("error", "the measuring process stopped")
            raise P.ProbeError(f"timing {spec['model']} failed ({why}):\n{errors.read()[-2000:]}")
        return reply["result"]

    def _template(self, mode: str, extra_env: dict[str, str] | None):
        if mode not in self.templates:
            import tempfile

            errors = tempfile.TemporaryFile("w+")
            proc = subprocess.Popen(
                [sys.executable, "-m", "components.probes.timing_worker", "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env=_worker_env(extra_env),
                cwd=str(Path.cwd()),
            )
            self.templates[mode] = (proc, errors)
        return self.templates[mode]

    def close(self) -> None:
        for proc, errors in self.templates.values():
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            errors.close()
        self.templates = {}


def _half_width(sd: float, n: int) -> float:
    """95% half-width of a mean of ``n`` repeats with standard deviation ``sd`` (Student t)."""
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1) * sd / n**0.5)


def _check(models: dict, overrides: dict, lengths: list[int]) -> None:
    """Refuse overrides for labels that name no model, and lengths that are not positive."""
    unknown = set(overrides) - set(models)
    if unknown:
        raise P.ProbeError(f"overrides for {sorted(unknown)} name no model; models are {sorted(models)}")
    if not lengths or min(lengths) < 1:
        raise P.ProbeError(f"lengths must be positive sequence lengths, got {lengths}")


def _log_setup(ctx: Context, dtype: str, threads: int) -> None:
    """Record where the times were measured: device, dtype, threads, torch and the CPU."""
    ctx.log_params(
        {
            "device": ctx.device,
            "dtype": dtype,
            "threads": threads,
            "torch": torch.__version__,
            "cpu": platform.processor() or platform.machine(),
        }
    )


def _shape(name: str, overrides: dict[str, Any], lengths: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the model's overrides (position tables long enough) and its structure."""
    ov = dict(overrides)
    fields = accepted_fields(name)
    if fields and "max_len" in fields:  # learned / sinusoidal tables must cover the longest T
        ov.setdefault("max_len", max(lengths))
    return ov, structure(build_model(name, ov))


def _measure(spec: dict, device: str, measurers: _Measurers) -> dict:
    """Time in one worker process; off CUDA, measure memory in another (exact malloc accounting)."""
    result = measurers.run({**spec, "mode": "time"})
    if not device.startswith("cuda"):
        memory = measurers.run({**spec, "mode": "memory"}, EXACT_MALLOC_ENV)
        for r, m in zip(result["rows"], memory["rows"]):
            r["peak_bytes"] = m["peak_bytes"]
        result["memory_method"] = memory["memory_method"]
    return result


def _record(ctx: Context, summary: dict, label: str, name: str, shape: dict, result: dict, repeats: int) -> list[dict]:
    """Turn one model's measurements into table rows, summary entries and per-T metrics."""
    rows = []
    for r in result["rows"]:
        T = r["T"]
        per_layer, path = sequential_steps(shape["family"], T, shape["layers"])
        row = {
            "model": label,
            "variant": name,
            "T": T,
            "seconds": r["seconds"],
            "times_s": r.get("times_s") or [],  # every repeat, in order: the exponent is fitted to each
            "memory_mb": r["peak_bytes"] / 2**20,
            "seq_steps": path,
            "seq_steps_per_layer": per_layer,
            "flops_per_layer": flops_per_layer(shape["family"], T, shape["width"], shape["kernel"]),
        }
        rows.append(row)
        for k in ("seconds", "memory_mb", "seq_steps", "seq_steps_per_layer", "flops_per_layer"):
            summary[P.key("time_s" if k == "seconds" else k, label, f"T_{T}")] = row[k]
        if r.get("sd_s") is not None:  # 95% half-width of a time from its repeats (Student t)
            summary[P.key("time_s_ci", label, f"T_{T}")] = _half_width(r["sd_s"], repeats)
            summary[P.key("time_s_df", label, f"T_{T}")] = repeats - 1  # its t degrees of freedom
        ctx.log_metrics({P.key("time_s", label): row["seconds"], P.key("memory_mb", label): row["memory_mb"]}, T)
    return rows


def _fit(summary: dict, label: str, rows: list[dict], fit_min: int) -> None:
    """Fit one model's log-log time and memory exponents on T >= fit_min, each with its 95% half-width
    and t degrees of freedom: time from the repeats' own fits, memory (exact) from the residuals."""
    fit = [r for r in rows if r["T"] >= fit_min]
    Ts = [r["T"] for r in fit]
    k, half = P.loglog_fit(Ts, [r["memory_mb"] for r in fit])
    summary |= {P.key("memory_exp", label): k, P.key("memory_exp_ci", label): half}
    summary[P.key("memory_exp_df", label)] = len(fit) - 2
    k, half, df = _repeated_fit(Ts, [r.get("times_s") or [] for r in fit])
    if not math.isfinite(k):  # one repeat: the best times' fit, judged by its residuals
        (k, half), df = P.loglog_fit(Ts, [r["seconds"] for r in fit]), len(fit) - 2
    summary |= {P.key("time_exp", label): k, P.key("time_exp_ci", label): half, P.key("time_exp_df", label): df}


def _repeated_fit(Ts: list[int], times: list[list[float]]) -> tuple[float, float, int]:
    """``(k, half, df)``: the mean of the exponents fitted to each repeat's sweep over T, with the t
    half-width of their spread (repeats - 1 df): the run-to-run timing noise, which more repeats
    narrow; NaN where fewer than two repeats or two lengths were timed."""
    from scipy import stats

    r = min((len(t) for t in times), default=0)
    if r < 2 or len(Ts) < 2:
        return math.nan, math.nan, 0
    ks = np.array([P.loglog_fit(Ts, [t[i] for t in times])[0] for i in range(r)])
    return float(ks.mean()), float(stats.t.ppf(0.975, r - 1) * stats.sem(ks)), r - 1


def _write_table(ctx: Context, rows: list[dict]) -> str:
    """Write every model's rows as ``timing.csv``."""
    import pandas as pd

    table = ctx.path("timing.csv")
    frame = pd.DataFrame(rows)
    frame["times_s"] = [" ".join(f"{t:.6g}" for t in ts) for ts in frame["times_s"]]
    frame.to_csv(table, index=False)
    ctx.log_artifact(table)
    return str(table)


def _plot(curves: dict[str, list[dict]], summary: dict, device: str, threads: int):
    """Draw time and memory against T on log-log axes, each model labelled with its exponent."""
    plt = P.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colour = colours(curves)  # each architecture's colour in every figure
    for label, rs in curves.items():
        Ts = [r["T"] for r in rs]
        k_time, k_memory = summary[P.key("time_exp", label)], summary[P.key("memory_exp", label)]
        axes[0].loglog(Ts, [r["seconds"] for r in rs], "o-", color=colour[label], label=f"{label} (k={k_time})")
        mem = [max(r["memory_mb"], 1e-3) for r in rs]
        axes[1].loglog(Ts, mem, "o-", color=colour[label], label=f"{label} (k={k_memory})")
    axes[0].set(
        xlabel="sequence length T",
        ylabel="fwd+bwd seconds (best of repeats)",
        title=f"time ({device}, {threads} thr)",
    )
    axes[1].set(xlabel="sequence length T", ylabel="peak memory MiB", title=summary["memory_method"])
    for ax in axes:
        ax.legend(fontsize=8)
    return fig


@component(
    "probe.timing",
    outputs=["summary", "plot", "table"],
    bottleneck="B4",
    resources={"gpu": 1},
    logged_before=[
        "seq_steps_per_layer",
        "time_s",
        "time_s_ci",
        "time_exp",
        "time_exp_ci",
        "memory_mb",
        "memory_exp",
        "memory_exp_ci",
    ],
    summary=[
        "threads",
        "batch",
        "repeats",
        "memory_method",
        "time_s/{models}/T_{lengths}",
        "time_s_ci/{models}/T_{lengths}",  # from the repeats: a half-width and its t degrees of freedom
        "time_s_df/{models}/T_{lengths}",
        "memory_mb/{models}/T_{lengths}",
        "seq_steps/{models}/T_{lengths}",
        "seq_steps_per_layer/{models}/T_{lengths}",
        "flops_per_layer/{models}/T_{lengths}",
        "time_exp/{models}",
        "time_exp_ci/{models}",
        "time_exp_df/{models}",
        "memory_exp/{models}",
        "memory_exp_ci/{models}",
        "memory_exp_df/{models}",
    ],
)
def timing(
    ctx: Context,
    *,
    models: dict[str, ModelName],
    overrides: dict[str, dict[str, Any]] | None = None,
    lengths: Sizes = [32, 64, 128, 256, 512],  # noqa: B006
    batch: Size = 8,
    warmup: Count = 2,
    repeats: Size = 5,
    threads: Size = 1,  # torch threads in the measuring process (recorded)
    dtype: Literal["float32", "bfloat16", "float64"] = "float32",
    fit_min: Count = 0,  # fit exponents on T >= fit_min (0: all lengths)
    seed: Count = 0,
) -> dict:
    """Time fwd+bwd and measure peak memory per model over sequence lengths; fit log-log exponents.

    Args:
        models: label -> variant name, e.g. ``{"rnn": "rnn-small", "attn_naive":
            "transformer-encoder-small"}``; ``overrides`` per label (``{"attn_naive": {"naive": true}}``).
        lengths: sequence lengths T; each model is timed in its own process, and on CPU its
            memory measured in another (resident high-water mark per T, see timing_worker).

    Returns:
        ``summary`` with ``time_s/<label>/T_<T>``, ``memory_mb/...``, ``seq_steps/...``,
        ``seq_steps_per_layer/...``, ``flops_per_layer/...``, ``time_exp/<label>``,
        ``memory_exp/<label>`` (with ``time_exp_ci``/``memory_exp_ci``: the 95% half-width; the time
        exponent is the mean of the fits to each repeat's sweep, its half-width from their spread;
        the memory exponent (measured exactly, once) is one fit, its half-width from the residuals;
        ``time_s_ci/<label>/T_<T>``: a time's 95% half-width from its repeats; ``..._df`` beside each
        ``..._ci``: its t degrees of freedom, so a verdict's p-value is read on t, not a normal),
        ``threads``; ``plot`` (log-log) and ``table`` (CSV).
    """
    overrides = overrides or {}
    _check(models, overrides, lengths)
    summary: dict[str, Any] = {"threads": threads, "batch": batch, "repeats": repeats}
    _log_setup(ctx, dtype, threads)
    common = {"lengths": lengths, "batch": batch, "warmup": warmup, "repeats": repeats, "threads": threads}
    common |= {"dtype": dtype, "device": ctx.device, "seed": seed}
    rows, curves = [], {}
    measurers = _Measurers(ctx.device)
    with ctx.progress(total=len(models), description="timing") as bar:
        try:
            for label, name in models.items():
                bar.update(description=f"timing {label}")
                ov, shape = _shape(name, overrides.get(label, {}), lengths)
                result = _measure({"model": name, "overrides": ov, **common}, ctx.device, measurers)
                summary["memory_method"] = result["memory_method"]
                curves[label] = _record(ctx, summary, label, name, shape, result, repeats)
                _fit(summary, label, curves[label], fit_min)
                rows += curves[label]
                bar.advance()
        finally:
            measurers.close()
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    table = _write_table(ctx, rows)
    fig = _plot(curves, summary, ctx.device, threads)
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "timing.png"), "table": table}
