"""Gradient of the last step's output with respect to each earlier input (for probe.gradient_decay)."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from components.probes.common import ProbeError


def _first_embedding(model: nn.Module) -> nn.Embedding | None:
    return next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)


def input_gradients(model: nn.Module, x: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """Return ||d <v, h_T> / d e_t|| per example and step, shape (B, T).

    ``h_T`` is the top layer's last state (``model.hidden_states``), ``v`` a fixed random unit
    vector, ``e_t`` the embedded input at step t: for h_t = W h_{t-1} + U e_t the norm is
    ||U^T (W^T)^(T-t) v||, so its decay with distance T - t measures the per-step factor.
    """
    if not hasattr(model, "hidden_states"):
        raise ProbeError(
            f"{type(model).__name__} has no hidden_states(x, lengths): the gradient probe needs a "
            "sequence model (rnn, lstm, gru, transformer encoder)"
        )
    params = inspect.signature(model.hidden_states).parameters
    B, T = x.shape[:2]
    hook = None
    if "taps" in params and hasattr(model, "input"):
        with torch.no_grad():
            dim = model.input(x).shape[-1]
        taps = torch.zeros(B, T, dim, dtype=next(model.parameters()).dtype, requires_grad=True)
        states = model.hidden_states(x, None, taps=taps)
    elif x.dtype.is_floating_point:
        taps = x.detach().clone().requires_grad_(True)
        states = model.hidden_states(taps)
    else:
        emb = _first_embedding(model)
        if emb is None:
            raise ProbeError(f"{type(model).__name__}: token inputs but no nn.Embedding and no 'taps' argument")
        holder = {}

        def add_taps(_m, _inp, out):  # (B, T, E): differentiate against a zero tensor added here
            holder["taps"] = torch.zeros_like(out, requires_grad=True)
            return out + holder["taps"]

        hook = emb.register_forward_hook(add_taps)
        try:
            states = model.hidden_states(x)
        finally:
            hook.remove()
        taps = holder["taps"]
    if states.dim() != 3 or states.shape[:2] != (B, T):
        raise ProbeError(f"hidden_states returned {tuple(states.shape)}, expected ({B}, {T}, H)")
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(states.shape[-1], generator=g, dtype=torch.float64).to(states.dtype)
    v = v / v.norm()
    (grad,) = torch.autograd.grad((states[:, -1] @ v).sum(), taps)
    return grad.detach().flatten(2).norm(dim=-1)  # (B, T)
