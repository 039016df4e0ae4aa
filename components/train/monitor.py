"""What the loop watches without waiting for the device: divergence, and the sums it logs."""

from __future__ import annotations

import math
import time

import torch


class Divergence:
    """Find the first step whose loss is NaN/Inf (or above ``max_loss``).

    CPU kernels run synchronously, so reading the loss costs nothing there; on a GPU the first bad
    step is kept on the device and read every ``every`` steps, so a divergence is found at most
    ``every - 1`` steps late.
    """

    def __init__(self, device: str, max_loss: float | None, every: int):
        self.device, self.max_loss, self.every = device, max_loss, every
        self.first_bad = torch.zeros((), dtype=torch.long, device=device)

    def check(self, loss: torch.Tensor, step: int) -> tuple[int, float] | None:
        """Return (the diverged step, its loss or NaN when it was an earlier step), or None."""
        if self.device == "cpu":  # the loss is already computed: one read, and the check in Python
            value = float(loss)
            if not math.isfinite(value) or (self.max_loss is not None and value > self.max_loss):
                return step + 1, value
            return None
        bad = ~torch.isfinite(loss) if self.max_loss is None else ~torch.isfinite(loss) | (loss > self.max_loss)
        self.first_bad = torch.where((self.first_bad == 0) & bad, step + 1, self.first_bad)
        if (step + 1) % self.every == 0 and int(self.first_bad):
            at = int(self.first_bad)
            return at, float(loss) if at == step + 1 else float("nan")
        return None


class Window:
    """Sums of loss, correct and counted targets since the last log, kept on the device."""

    def __init__(self, device: str):
        self.device = device
        self.reset()

    def reset(self) -> None:
        zero = lambda: torch.zeros((), device=self.device)  # noqa: E731
        self.loss, self.correct, self.count, self.tokens, self.t0 = zero(), zero(), zero(), 0, time.perf_counter()

    def add(self, loss, correct, count, tokens: int) -> None:
        self.loss += loss
        self.correct += correct
        self.count += count
        self.tokens += tokens

    def read(self, steps: int) -> dict[str, float]:
        """Return the window's means (one device read) and start a new window."""
        loss, correct, count = torch.stack([self.loss, self.correct.float(), self.count.float()]).tolist()
        now = time.perf_counter()
        out = {
            "train/loss": loss / steps,
            "train/acc": correct / max(count, 1),
            "train/tokens_per_s": self.tokens / max(now - self.t0, 1e-9),
        }
        self.reset()
        return out
