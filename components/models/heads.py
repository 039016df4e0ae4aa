"""Task heads for the sequence task shapes (Karpathy's many-to-one / many-to-many / one-to-many)."""

from __future__ import annotations

from torch import Tensor, nn

HEADS = {"many_to_one", "many_to_many", "one_to_many"}


class ManyToOne(nn.Module):
    """Classify or regress from one summary vector (B, D) -> (B, C)."""

    def __init__(self, dim: int, num_classes: int, dropout: float = 0.0):
        super().__init__()
        self.drop, self.out = nn.Dropout(dropout), nn.Linear(dim, num_classes)

    def forward(self, summary: Tensor) -> Tensor:
        return self.out(self.drop(summary))


class ManyToMany(nn.Module):
    """Tag every position (B, T, D) -> (B, T, C)."""

    def __init__(self, dim: int, num_classes: int, dropout: float = 0.0):
        super().__init__()
        self.drop, self.out = nn.Dropout(dropout), nn.Linear(dim, num_classes)

    def forward(self, states: Tensor) -> Tensor:
        return self.out(self.drop(states))
