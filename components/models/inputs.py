"""Turn a batch of token ids (B, T) or real-valued steps (B, T, F) into vectors (B, T, D)."""

from __future__ import annotations

from torch import Tensor, nn

from components.models.registry import ModelError


class SequenceInput(nn.Module):
    """Embed token ids, or pass/project real-valued inputs; check the input's shape and dtype.

    ``input_dim > 0`` selects real-valued inputs (B, T, input_dim) whatever ``vocab_size`` says, so
    overriding only ``input_dim`` (as data with float inputs does) switches a token model over.
    """

    def __init__(self, vocab_size: int, input_dim: int, dim: int, pad_id: int = 0, project: bool = False):
        super().__init__()
        self.tokens = input_dim <= 0
        if self.tokens and vocab_size <= 0:
            raise ModelError("set vocab_size > 0 for token inputs or input_dim > 0 for real-valued inputs")
        self.vocab_size, self.input_dim = vocab_size, input_dim
        if self.tokens:
            self.embed = nn.Embedding(vocab_size, dim, padding_idx=pad_id if 0 <= pad_id < vocab_size else None)
            self.dim = dim
        elif project:
            self.embed, self.dim = nn.Linear(input_dim, dim), dim
        else:
            self.embed, self.dim = nn.Identity(), input_dim

    def forward(self, x: Tensor) -> Tensor:
        if self.tokens:
            if x.dim() != 2 or x.dtype.is_floating_point:
                raise ModelError(
                    f"expected token ids of shape (B, T) and integer dtype, got {tuple(x.shape)} {x.dtype}"
                )
            if x.numel() and (int(x.max()) >= self.vocab_size or int(x.min()) < 0):
                raise ModelError(f"token id {int(x.max())} out of range for vocab_size {self.vocab_size}")
            return self.embed(x)
        if x.dim() != 3 or x.shape[-1] != self.input_dim:
            raise ModelError(f"expected real-valued input (B, T, {self.input_dim}), got {tuple(x.shape)}")
        return self.embed(x.float())
