"""probe.gradient_decay (B2): gradient norm against distance, and the fitted per-step factor rho."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from components import Context, component
from components.bounds import Count, Size
from components.probes import common as P
from components.probes.gradients import input_gradients


def decay_curve(model, x: torch.Tensor, seed: int, dtype: torch.dtype) -> np.ndarray:
    """Return the mean gradient norm at distance d = 0..T-1 from the last step."""
    model = model.to(dtype)
    x = x.to(dtype) if x.dtype.is_floating_point else x
    norms = input_gradients(model, x, seed).double().mean(0)  # (T,)
    return norms.flip(0).numpy()  # index d = T - 1 - t


def fit_rho(curve: np.ndarray, fit_max: int = 0) -> float:
    """exp(slope) of log norm against distance, over distances 1..fit_max (0: all)."""
    d = np.arange(len(curve))
    stop = len(curve) if fit_max <= 0 else min(fit_max + 1, len(curve))
    return float(np.exp(P.loglinear_slope(d[1:stop], curve[1:stop])))


@component(
    "probe.gradient_decay",
    outputs=["summary", "plot"],
    bottleneck="B2",
    logged_before=["grad_norm", "grad", "rho", "rho_init"],
    group_by={"architecture": "model"},
    summary=["rho", "rho_init", "length", "grad/d_*"],  # distances 1, 5, 10, 20, 50, 100, length - 1 below length
)
def gradient_decay(
    ctx: Context,
    *,
    model: str,
    overrides: dict[str, Any] | None = None,
    length: Size = 100,
    batch: Size = 32,
    fit_max: Count = 0,  # fit distances 1..fit_max; 0 fits all (distance 0 is skipped: no recurrence)
    dtype: Literal["float32", "float64"] = "float64",  # float64 keeps 0.5^100 away from underflow
    seed: Count = 0,
) -> dict:
    """Measure how the gradient of the last step shrinks with distance; fit rho per step.

    Args:
        model: a checkpoint (measured after training, and its architecture at init as
            ``rho_init``) or a variant name (measured at initialisation).
        length: sequence length T; inputs are random tokens (or N(0,1) features).

    Returns:
        ``summary``: ``rho``, ``rho_init``, ``grad/d_<k>`` norms relative to distance 0;
        ``plot``: log norm against distance with the fitted lines.
    """
    net, info = P.resolve(model, overrides, seed)
    x = P.random_inputs(net, batch, length, seed)
    dt = torch.float64 if dtype == "float64" else torch.float32
    curves = {"init": decay_curve(P.fresh_copy(info, seed) if P.is_checkpoint(model) else net, x, seed, dt)}
    if P.is_checkpoint(model):
        curves["trained"] = decay_curve(net, x, seed, dt)
    rhos = {k: fit_rho(c, fit_max) for k, c in curves.items()}
    main = curves.get("trained", curves["init"])
    summary: dict[str, Any] = {"rho": rhos.get("trained", rhos["init"]), "rho_init": rhos["init"], "length": length}
    for d in sorted({1, 5, 10, 20, 50, 100, length - 1}):
        if 0 < d < length and main[0] > 0:
            summary[f"grad/d_{d}"] = main[d] / main[0]
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    for name, c in curves.items():
        for d in range(len(c)):
            ctx.log_metric(f"grad_norm/{name}", float(c[d]), d)
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    d = np.arange(length)
    for name, c in curves.items():
        ax.semilogy(d, c, label=f"{name} (rho={rhos[name]:.3f})")
        ax.semilogy(d[1:], c[1] * rhos[name] ** (d[1:] - 1), "--", color="gray", lw=0.8)
    ax.set(xlabel="distance from the last step (T - t)", ylabel="||dL/de_t||", title=f"gradient decay: {info['model']}")
    ax.legend()
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "gradient_decay.png")}
