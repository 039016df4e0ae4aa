"""Recurrent cell equations as free functions, with PyTorch's weight layout so weights can be shared.

Weights follow ``nn.RNN``/``nn.LSTM``/``nn.GRU``: ``w_ih (G*H, I)``, ``w_hh (G*H, H)``, ``b_ih``,
``b_hh (G*H,)`` with gate blocks stacked in PyTorch's order. Each step takes the input projection
``gi = x W_ih^T + b_ih`` precomputed for the whole sequence (one matmul instead of T).

Two GRUs: PyTorch's (``gru``, cuDNN's form) resets the recurrent term after the matmul,
``tanh(W x + r * (U h))``; Bahdanau 2015's (``gru_bahdanau``, appendix A.1.1, Cho 2014's reset placement)
resets the state before it, ``tanh(W x + U (r * h))``, which costs a second matmul a step.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

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
    """GRU in PyTorch's form: h' = (1-z)*n + z*h, n = tanh(i_n + r*(W_hn h + b_hn)); gates r, z, n."""
    h, c = state
    gh = h @ w_hh.T + b_hh
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, c


def gru_bahdanau_step(gi: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    """Bahdanau 2015 A.1.1 GRU: h' = (1-z)*h + z*h~, h~ = tanh(W x + U (r*h)); gates r, z, h~.

    z_i = sigma(W_z x + U_z h) weighs the new candidate h~ and 1 - z the previous state, as the paper
    writes it (PyTorch's z weighs the previous state instead). The biases the paper omits from its
    equations sit where PyTorch puts them: b_ih in ``gi``, b_hh after each U.
    """
    h, c = state
    H = h.shape[-1]
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z = (h @ w_hh[: 2 * H].T + b_hh[: 2 * H]).chunk(2, dim=-1)  # U_r h, U_z h in one matmul
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + (r * h) @ w_hh[2 * H :].T + b_hh[2 * H :])  # U (r o h): reset before the matmul
    return (1 - z) * h + z * n, c


class BahdanauGRUCell(nn.Module):
    """``nn.GRUCell``'s interface and parameter names with ``gru_bahdanau_step``'s equations."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size))  # W_r, W_z, W stacked
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size))  # U_r, U_z, U
        self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size))
        bound = 1 / math.sqrt(hidden_size)  # nn.GRUCell's default; init: paper replaces it
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        """One step: x (B, I), h (B, H) -> h' (B, H)."""
        gi = nn.functional.linear(x, self.weight_ih, self.bias_ih)
        return gru_bahdanau_step(gi, (h, h), self.weight_hh, self.bias_hh)[0]


# cell name -> (step function, number of gate blocks G, index of the block a bias option applies to)
CELLS = {
    "rnn": (rnn_step, 1, None),
    "lstm": (lstm_step, 4, 1),  # forget gate f is block 1 of (i, f, g, o)
    "lstm1997": (lstm1997_step, 3, None),
    "gru": (gru_step, 3, 1),  # update gate z is block 1 of (r, z, n)
}
STEPS = CELLS | {"gru_bahdanau": (gru_bahdanau_step, 3, None)}  # the cells a Recurrent layer can loop over
