"""Recurrent cell equations as free functions, with PyTorch's weight layout so weights can be shared.

Weights follow ``nn.RNN``/``nn.LSTM``/``nn.GRU``: ``w_ih (G*H, I)``, ``w_hh (G*H, H)``, ``b_ih``,
``b_hh (G*H,)`` with gate blocks stacked in PyTorch's order. Each step takes the input projection
``gi = x W_ih^T + b_ih`` precomputed for the whole sequence (one matmul instead of T).
"""

from __future__ import annotations

import torch
from torch import Tensor

State = tuple[Tensor, Tensor]  # (h, c); c is unused (zeros) by cells without a cell state


def rnn_step(gi: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    """Elman step: h' = tanh(W_ih x + b_ih + W_hh h + b_hh)."""
    h, c = state
    return torch.tanh(gi + h @ w_hh.T + b_hh), c


def lstm_step(gi: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    """LSTM with forget gate (Gers 2000): c' = f*c + i*g, h' = o*tanh(c'); gates i, f, g, o."""
    h, c = state
    i, f, g, o = (gi + h @ w_hh.T + b_hh).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def lstm1997_step(gi: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    """1997 LSTM: constant error carousel c' = c + i*g (no forget gate), h' = o*tanh(c'); gates i, g, o."""
    h, c = state
    i, g, o = (gi + h @ w_hh.T + b_hh).chunk(3, dim=-1)
    c = c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def gru_step(gi: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    """GRU (Cho 2014, PyTorch form): h' = (1-z)*n + z*h, n = tanh(i_n + r*(W_hn h + b_hn)); gates r, z, n."""
    h, c = state
    gh = h @ w_hh.T + b_hh
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, c


# cell name -> (step function, number of gate blocks G, index of the block a bias option applies to)
CELLS = {
    "rnn": (rnn_step, 1, None),
    "lstm": (lstm_step, 4, 1),  # forget gate f is block 1 of (i, f, g, o)
    "lstm1997": (lstm1997_step, 3, None),
    "gru": (gru_step, 3, 1),  # update gate z is block 1 of (r, z, n)
}
