"""Multi-layer, optionally bidirectional recurrent layer: PyTorch's fused kernel or our cell loop.

One set of weights (named as in ``nn.LSTM``: ``core.weight_ih_l0``, ``core.bias_hh_l1_reverse``...)
serves both paths, so ``impl="loop"`` gives per-step states of exactly the production model.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from components.models.cells import STEPS
from components.models.masks import length_mask, reverse_padded
from components.models.registry import ModelError, check_choice

FUSED = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
HAS_CELL_STATE = {"lstm", "lstm1997"}


class _Weights(nn.Module):
    """Parameter holder with nn.LSTM's names, for cells PyTorch has no fused kernel for."""

    def __init__(self, gates: int, input_size: int, hidden_size: int, num_layers: int, directions: int):
        super().__init__()
        for layer in range(num_layers):
            size_in = input_size if layer == 0 else hidden_size * directions
            for d in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                self.register_parameter("weight_ih" + sfx, nn.Parameter(torch.empty(gates * hidden_size, size_in)))
                self.register_parameter("weight_hh" + sfx, nn.Parameter(torch.empty(gates * hidden_size, hidden_size)))
                self.register_parameter("bias_ih" + sfx, nn.Parameter(torch.empty(gates * hidden_size)))
                self.register_parameter("bias_hh" + sfx, nn.Parameter(torch.empty(gates * hidden_size)))
        bound = 1 / math.sqrt(hidden_size)  # PyTorch's default recurrent init
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)


class Recurrent(nn.Module):
    """Run a stack of recurrent layers over (B, T, I) inputs; returns outputs and final states.

    ``gate_bias`` sets the bias of the LSTM forget gate or the GRU update gate (the ``b_ih`` half;
    ``b_hh`` half zero) so the total equals it; ``None`` keeps PyTorch's random init.
    ``impl``: ``"fused"`` (nn.RNN/LSTM/GRU), ``"loop"`` (our cells), ``"auto"`` (fused when it exists).
    """

    def __init__(
        self,
        cell: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        gate_bias: float | None = None,
        impl: str = "auto",
    ):
        super().__init__()
        check_choice("cell", cell, STEPS)
        check_choice("impl", impl, {"auto", "fused", "loop"})
        if impl == "fused" and cell not in FUSED:
            raise ModelError(f"cell {cell!r} has no fused PyTorch kernel; use impl='loop' or 'auto'")
        self.cell, self.hidden_size, self.num_layers = cell, hidden_size, num_layers
        self.directions = 2 if bidirectional else 1
        self.dropout = dropout
        self.impl = impl if impl != "auto" else ("fused" if cell in FUSED else "loop")
        if cell in FUSED:
            self.core = FUSED[cell](
                input_size,
                hidden_size,
                num_layers,
                batch_first=True,
                bidirectional=bidirectional,
                dropout=dropout if num_layers > 1 else 0.0,
            )
        else:
            self.core = _Weights(STEPS[cell][1], input_size, hidden_size, num_layers, self.directions)
        block = STEPS[cell][2]
        if gate_bias is not None and block is not None:
            with torch.no_grad():
                for name, p in self.core.named_parameters():
                    if name.startswith("bias_"):
                        chunk = p[block * hidden_size : (block + 1) * hidden_size]
                        chunk.fill_(gate_bias if name.startswith("bias_ih") else 0.0)

    @property
    def output_size(self) -> int:
        return self.hidden_size * self.directions

    def weights(self, layer: int, direction: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Return (w_ih, w_hh, b_ih, b_hh) of one layer and direction."""
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        return tuple(getattr(self.core, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def forward(self, x: Tensor, lengths: Tensor | None = None, state=None, impl: str | None = None):
        """Return outputs (B, T, D*H) (zeros at padding) and final states as in nn.LSTM.

        ``state``/final state: ``h`` (L*D, B, H) for RNN/GRU, ``(h, c)`` for the LSTMs.
        """
        impl = impl or self.impl
        if impl == "fused" and self.cell not in FUSED:
            raise ModelError(f"cell {self.cell!r} has no fused PyTorch kernel; use impl='loop'")
        return self._fused(x, lengths, state) if impl == "fused" else self._loop(x, lengths, state)

    def _fused(self, x, lengths, state):
        if lengths is None:
            return self.core(x, state)
        T = x.shape[1]
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.core(packed, state)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
        return out, final

    def _loop(self, x, lengths, state):
        B, T, _ = x.shape
        step = STEPS[self.cell][0]
        LD, H = self.num_layers * self.directions, self.hidden_size
        zeros = x.new_zeros(LD, B, H)
        if state is None:
            h0, c0 = zeros, zeros
        elif self.cell in HAS_CELL_STATE:
            h0, c0 = state
        else:
            h0, c0 = state, zeros
        mask = length_mask(lengths, T, x.device)
        mask = mask.unsqueeze(-1) if mask is not None else None  # (B, T, 1)
        hs, cs, layer_in = [], [], x
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.directions):
                w_ih, w_hh, b_ih, b_hh = self.weights(layer, d)
                seq = layer_in if d == 0 else reverse_padded(layer_in, lengths)
                gi = nn.functional.linear(seq, w_ih, b_ih)  # (B, T, G*H) in one matmul
                k = layer * self.directions + d
                h, c, steps = h0[k], c0[k], []
                # unbind, not gi[:, t]: the backward of T slices would write T full-size gradients
                for t, gi_t in enumerate(gi.unbind(1)):
                    h_new, c_new = step(gi_t, (h, c), w_hh, b_hh)
                    if mask is not None:  # freeze the state past each sequence's end
                        m = mask[:, t]
                        h_new, c_new = torch.where(m, h_new, h), torch.where(m, c_new, c)
                        steps.append(h_new * m)
                    else:
                        steps.append(h_new)
                    h, c = h_new, c_new
                out = torch.stack(steps, 1)  # (B, T, H)
                outs.append(out if d == 0 else reverse_padded(out, lengths))
                hs.append(h)
                cs.append(c)
            layer_in = torch.cat(outs, -1)
            if layer < self.num_layers - 1 and self.dropout and self.training:
                layer_in = nn.functional.dropout(layer_in, self.dropout, True)
        h_n, c_n = torch.stack(hs), torch.stack(cs)
        return layer_in, ((h_n, c_n) if self.cell in HAS_CELL_STATE else h_n)


def last_layer_state(final, cell: str, num_layers: int, directions: int) -> Tensor:
    """Return the top layer's final hidden state (B, D*H) from nn-style final states."""
    h = final[0] if cell in HAS_CELL_STATE else final
    h = h.view(num_layers, directions, *h.shape[1:])[-1]  # (D, B, H)
    return torch.cat(list(h), -1)
