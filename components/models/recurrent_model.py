"""Recurrent sequence models: embedding -> Recurrent stack -> task head (family ``rnn``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from components.models.cells import CELLS
from components.models.heads import HEADS, ManyToMany, ManyToOne
from components.models.inputs import SequenceInput
from components.models.masks import check_lengths
from components.models.recurrent import Recurrent, last_layer_state
from components.models.registry import ModelError, check_choice

# B1 is removed by any recurrence (one state, any length); B2 by the additive cell state of the gated cells
REMOVES = {"rnn": {"B1"}, "lstm": {"B1", "B2"}, "lstm1997": {"B1", "B2"}, "gru": {"B1", "B2"}}


@dataclass
class RecurrentConfig:
    """Sizes and options of a recurrent sequence model."""

    cell: str = "lstm"  # rnn | lstm | lstm1997 | gru
    head: str = "many_to_one"  # many_to_one | many_to_many | one_to_many
    vocab_size: int = 16  # token inputs (used when input_dim == 0)
    input_dim: int = 0  # > 0: real-valued inputs (B, T, input_dim) instead of tokens
    embed_dim: int = 32
    hidden_size: int = 64
    num_layers: int = 1
    bidirectional: bool = False
    dropout: float = 0.0
    num_classes: int = 8
    forget_bias: float = 1.0  # LSTM forget-gate bias (Gers 2000; Jozefowicz 2015 recommend 1)
    update_bias: float | None = None  # GRU update-gate bias; None keeps PyTorch's init
    impl: str = "auto"  # auto | fused | loop
    out_len: int = 10  # one_to_many: steps generated from the vector
    pad_id: int = 0

    def __post_init__(self):
        check_choice("cell", self.cell, CELLS)
        check_choice("head", self.head, HEADS)
        if self.hidden_size < 1 or self.num_layers < 1 or self.num_classes < 1:
            raise ModelError(
                f"hidden_size, num_layers and num_classes must be >= 1, got "
                f"{self.hidden_size}, {self.num_layers}, {self.num_classes}"
            )
        if self.head == "one_to_many" and self.bidirectional:
            raise ModelError("a one_to_many generator runs forward in time; set bidirectional=False")

    @property
    def gate_bias(self) -> float | None:
        return {"lstm": self.forget_bias, "gru": self.update_bias}.get(self.cell)


def _recurrent(cfg: RecurrentConfig, input_size: int) -> Recurrent:
    return Recurrent(
        cfg.cell, input_size, cfg.hidden_size, cfg.num_layers, cfg.bidirectional, cfg.dropout, cfg.gate_bias, cfg.impl
    )


class RecurrentModel(nn.Module):
    """Many-to-one (final state) or many-to-many (every state) recurrent model."""

    family = "rnn"

    def __init__(self, cfg: RecurrentConfig):
        super().__init__()
        self.config, self.removes = cfg, set(REMOVES[cfg.cell])
        self.input = SequenceInput(cfg.vocab_size, cfg.input_dim, cfg.embed_dim, cfg.pad_id)
        self.rnn = _recurrent(cfg, self.input.dim)
        head = ManyToOne if cfg.head == "many_to_one" else ManyToMany
        self.head = head(self.rnn.output_size, cfg.num_classes, cfg.dropout)

    def _run(self, x, lengths, taps, impl=None):
        e = self.input(x)  # (B, T, E)
        lengths = check_lengths(lengths, e.shape[0], e.shape[1], "RecurrentModel")
        if taps is not None:  # zero tensor the caller differentiates against: dL/dtaps[:, t] = dL/de_t
            e = e + taps
        return self.rnn(e, lengths, impl=impl)

    def forward(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return logits (B, C) for many_to_one, (B, T, C) for many_to_many."""
        out, final = self._run(x, lengths, taps)
        if self.config.head == "many_to_one":
            return self.head(last_layer_state(final, self.config.cell, self.config.num_layers, self.rnn.directions))
        return self.head(out)

    def hidden_states(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return the top layer's per-step states (B, T, D*H) from the explicit cell loop."""
        return self._run(x, lengths, taps, impl="loop")[0]


class OneToMany(nn.Module):
    """Generate a sequence of ``out_len`` outputs from one vector: x (B, F) floats or (B,) ids -> (B, T, C)."""

    family = "rnn"

    def __init__(self, cfg: RecurrentConfig):
        super().__init__()
        self.config, self.removes = cfg, set(REMOVES[cfg.cell])
        if cfg.input_dim <= 0:
            self.embed, dim = nn.Embedding(cfg.vocab_size, cfg.embed_dim), cfg.embed_dim
        else:
            self.embed, dim = nn.Identity(), cfg.input_dim
        self.init = nn.Linear(dim, cfg.hidden_size * cfg.num_layers)  # vector -> initial state of every layer
        self.rnn = _recurrent(cfg, dim)
        self.head = ManyToMany(cfg.hidden_size, cfg.num_classes, cfg.dropout)

    def _states(self, x, lengths, impl=None):
        cfg = self.config
        if cfg.input_dim <= 0 and (x.dim() != 1 or x.dtype.is_floating_point):
            raise ModelError(f"one_to_many with vocab_size expects ids of shape (B,), got {tuple(x.shape)} {x.dtype}")
        if cfg.input_dim > 0 and (x.dim() != 2 or x.shape[1] != cfg.input_dim):
            raise ModelError(f"one_to_many expects vectors (B, {cfg.input_dim}), got {tuple(x.shape)}")
        v = self.embed(x if cfg.input_dim <= 0 else x.float())  # (B, E)
        T = cfg.out_len if lengths is None else int(torch.as_tensor(lengths).max())
        lengths = check_lengths(lengths, v.shape[0], T, "OneToMany")
        h0 = torch.tanh(self.init(v)).view(v.shape[0], cfg.num_layers, -1).transpose(0, 1).contiguous()
        state = (h0, torch.zeros_like(h0)) if cfg.cell in ("lstm", "lstm1997") else h0
        inputs = v.unsqueeze(1).expand(-1, T, -1)  # the vector at every step
        return self.rnn(inputs, lengths, state, impl=impl)[0]

    def forward(self, x: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Return logits (B, T, C); ``lengths`` optionally sets per-example output lengths."""
        return self.head(self._states(x, lengths))

    def hidden_states(self, x: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Return per-step states (B, T, H) from the explicit cell loop."""
        return self._states(x, lengths, impl="loop")


def build_recurrent(cfg: RecurrentConfig) -> nn.Module:
    """Build the recurrent model for ``cfg.head``."""
    return OneToMany(cfg) if cfg.head == "one_to_many" else RecurrentModel(cfg)


build_recurrent.family = "rnn"
