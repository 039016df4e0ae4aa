"""Vision Transformer (Dosovitskiy 2021): patches -> tokens, class token, learned 1D positions, pre-LN."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from components.models.image_size import hw
from components.models.registry import ModelError
from components.models.transformer_layers import Encoder


@dataclass
class ViTConfig:
    """Sizes of a ViT; both sides of ``image_size`` (int or [H, W]) must be multiples of ``patch``."""

    image_size: int | tuple[int, int] = 28
    patch: int = 7
    channels: int = 1
    num_classes: int = 10
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    num_layers: int = 4
    dropout: float = 0.0
    pos_init_std: float = 0.02  # as in the ViT reference code
    head_hidden: int = 0  # 0: linear head (fine-tuning); > 0: MLP head with one tanh layer (pre-training)
    naive: bool = False

    def __post_init__(self):
        self.image_size = self.image_size if isinstance(self.image_size, int) else hw(self.image_size)
        if any(side % self.patch for side in hw(self.image_size)):
            raise ModelError(f"image_size {self.image_size} is not a multiple of patch {self.patch}")
        if self.d_model % self.n_heads:
            raise ModelError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


class ViT(nn.Module):
    """Classify images (B, C, H, W) from the class token after a pre-LN Transformer encoder."""

    family = "vit"

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B2", "B3", "B4"}
        H, W = hw(cfg.image_size)
        self.grid = (H // cfg.patch, W // cfg.patch)
        n_patches = self.grid[0] * self.grid[1]
        d = cfg.d_model
        # a stride-p convolution is the linear map of each flattened p x p patch (eq. 1)
        self.patch_embed = nn.Conv2d(cfg.channels, d, cfg.patch, stride=cfg.patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embedding = nn.Parameter(torch.randn(1, 1 + n_patches, d) * cfg.pos_init_std)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(
            cfg.num_layers, d, cfg.n_heads, cfg.d_ff, cfg.dropout, norm_first=True, naive=cfg.naive, activation="gelu"
        )
        if cfg.head_hidden:
            self.head = nn.Sequential(
                nn.Linear(d, cfg.head_hidden), nn.Tanh(), nn.Linear(cfg.head_hidden, cfg.num_classes)
            )
        else:
            self.head = nn.Linear(d, cfg.num_classes)

    def tokens(self, images: Tensor) -> Tensor:
        """Return encoded tokens (B, 1 + num_patches, d_model); index 0 is the class token."""
        cfg = self.config
        expected = (cfg.channels, *hw(cfg.image_size))
        if images.dim() != 4 or tuple(images.shape[1:]) != expected:
            raise ModelError(f"ViT expects images (B, {', '.join(map(str, expected))}), got {tuple(images.shape)}")
        x = self.patch_embed(images).flatten(2).transpose(1, 2)  # (B, N, d), row-major patches
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
        return self.encoder(self.drop(x + self.pos_embedding))

    def forward(self, images: Tensor) -> Tensor:
        """Return logits (B, num_classes)."""
        return self.head(self.tokens(images)[:, 0])
