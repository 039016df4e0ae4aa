"""Tiny models and data folders in the documented formats, shared by the train and probe tests."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn


class TinyRNN(nn.Module):
    """Embedding, one tanh RNN layer, a many-to-one head (the contract's sequence interface)."""

    family = "rnn"

    def __init__(
        self, vocab_size: int = 8, num_classes: int = 8, hidden: int = 16, pad_id: int = 0, dropout: float = 0.0
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.RNN(hidden, hidden, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, num_classes)

    def hidden_states(self, x, lengths=None):
        return self.rnn(self.embedding(x))[0]  # (B, T, H)

    def forward(self, x, lengths=None):
        h = self.drop(self.hidden_states(x, lengths))
        idx = (lengths - 1) if lengths is not None else torch.full((x.size(0),), x.size(1) - 1)
        return self.head(h[torch.arange(x.size(0)), idx])  # (B, C)


def tiny_rnn(
    vocab_size: int = 8, num_classes: int = 8, hidden: int = 16, pad_id: int = 0, dropout: float = 0.0
) -> TinyRNN:
    """Factory used as ``model: test_train_standins:tiny_rnn``."""
    return TinyRNN(vocab_size, num_classes, hidden, pad_id, dropout)


RECORDED_DTYPES: list[torch.dtype] = []  # the head's output dtype, one entry per forward


class DtypeRecordingRNN(TinyRNN):
    """TinyRNN that records the dtype its head computes in (bfloat16 under bf16 autocast)."""

    def forward(self, x, lengths=None):
        out = super().forward(x, lengths)
        RECORDED_DTYPES.append(out.dtype)
        return out


def dtype_recording_rnn(
    vocab_size: int = 8, num_classes: int = 8, hidden: int = 16, pad_id: int = 0, dropout: float = 0.0
) -> DtypeRecordingRNN:
    """Factory used as ``model: test_train_standins:dtype_recording_rnn``."""
    return DtypeRecordingRNN(vocab_size, num_classes, hidden, pad_id, dropout)


def write_sequence_data(
    path: Path, n: int = 256, seq_len: int = 6, vocab: int = 8, seed: int = 0, target: str = "last"
) -> Path:
    """Write a classify task: the label is the last (or first) token of the sequence."""
    path.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    counts = {}
    for split, size in (("train", n), ("valid", n // 4), ("test", n // 4)):
        x = torch.randint(1, vocab, (size, seq_len), generator=g)
        y = x[:, -1] if target == "last" else x[:, 0]
        torch.save({"x": x, "y": y.clone(), "lengths": torch.full((size,), seq_len)}, path / f"{split}.pt")
        counts[f"n_{split}"] = size
    meta = {
        "kind": "sequence",
        "task": "recall",
        "target": "classify",
        "vocab_size": vocab,
        "input_dim": 0,
        "num_classes": vocab,
        "pad_id": 0,
        "seq_len": seq_len,
        "chance": 1 / (vocab - 1),
        **counts,
    }
    (path / "meta.json").write_text(json.dumps(meta))
    return path


class LinearRNN(nn.Module):
    """h_t = decay * h_{t-1} + U e_t: the gradient to step t is exactly decay^(T-t) times U^T v."""

    family = "rnn"

    def __init__(self, vocab_size: int, hidden: int, decay: float):
        super().__init__()
        self.config = type("Config", (), {"vocab_size": vocab_size, "pad_id": 0})()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.W = nn.Parameter(decay * torch.eye(hidden))

    def hidden_states(self, x, lengths=None):
        e = self.embedding(x)  # (B, T, H)
        h, out = torch.zeros_like(e[:, 0]), []
        for t in range(e.shape[1]):
            h = h @ self.W.T + self.U(e[:, t])
            out.append(h)
        return torch.stack(out, 1)

    def forward(self, x, lengths=None):
        return self.hidden_states(x)[:, -1]


def linear_rnn(vocab_size: int = 10, hidden: int = 8, decay: float = 0.9) -> LinearRNN:
    """Factory used as ``model: test_train_standins:linear_rnn``."""
    return LinearRNN(vocab_size, hidden, decay)


class GridPositions(nn.Module):
    """A ViT stand-in whose position embeddings encode (row, col) smoothly, or scrambled."""

    def __init__(self, side: int, scrambled: bool):
        super().__init__()
        self.grid = (side, side)
        rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
        angle = torch.stack([rows.flatten(), cols.flatten()], -1).float() * (3.14159 / side)  # (N, 2)
        emb = torch.cat([angle.cos(), angle.sin()], -1)  # nearby patches -> similar vectors
        if scrambled:
            emb = emb[torch.randperm(len(emb), generator=torch.Generator().manual_seed(0))]
        self.pos_embedding = nn.Parameter(torch.cat([torch.zeros(1, 4), emb])[None])  # (1, 1 + N, 4)


def grid_positions(side: int = 6, scrambled: bool = False) -> GridPositions:
    """Factory used as ``model: test_train_standins:grid_positions``."""
    return GridPositions(side, scrambled)
