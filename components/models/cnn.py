"""Small convolutional image classifier: the baseline a tiny ViT is compared with on small data."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from components.models.image_size import hw
from components.models.registry import ModelError


@dataclass
class CNNConfig:
    """Conv blocks of ``widths`` channels (3x3 conv, ReLU, 2x2 max-pool), global average pool, linear."""

    image_size: int | tuple[int, int] = 28
    channels: int = 1
    num_classes: int = 10
    widths: tuple[int, ...] = (32, 64)
    dropout: float = 0.0

    def __post_init__(self):
        self.widths = tuple(self.widths)  # YAML gives lists
        if not self.widths or min(self.widths) < 1:
            raise ModelError(f"widths must be a non-empty list of positive channel counts, got {list(self.widths)}")
        self.image_size = self.image_size if isinstance(self.image_size, int) else hw(self.image_size)
        if min(hw(self.image_size)) < 2 ** len(self.widths):
            raise ModelError(
                f"{len(self.widths)} pooling blocks need image_size >= {2 ** len(self.widths)}, got {self.image_size}"
            )


def conv_features(channels: int, widths) -> nn.Sequential:
    """Stack of conv-ReLU-pool blocks: (B, C, H, W) -> (B, widths[-1], H / 2^k, W / 2^k)."""
    layers, c = [], channels
    for w in widths:
        layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        c = w
    return nn.Sequential(*layers)


class CNN(nn.Module):
    """Classify images (B, C, H, W)."""

    family = "cnn"

    def __init__(self, cfg: CNNConfig):
        super().__init__()
        self.config, self.removes = cfg, set()
        self.features = conv_features(cfg.channels, cfg.widths)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(cfg.dropout), nn.Linear(cfg.widths[-1], cfg.num_classes)
        )

    def forward(self, images: Tensor) -> Tensor:
        """Return logits (B, num_classes)."""
        if images.dim() != 4 or images.shape[1] != self.config.channels:
            raise ModelError(f"CNN expects images (B, {self.config.channels}, H, W), got {tuple(images.shape)}")
        return self.head(self.features(images))
