"""What history's parts pass around: its error, the options a user sets (thresholds, directions) and a flag."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

# kinds that make `history` exit 1: a metric or claim worse beyond its noise, a failed or dead newest run
REGRESSIONS = ("regression", "failed", "killed")
# kinds that name a change of the newest run (all but these are changes for ``--notify-on change``)
KINDS = ("improvement", "regression", "change", "environment", "pipeline", "failed", "killed")


class HistoryError(Exception):
    """The history cannot be read (no such pipeline, bad option)."""


@dataclass
class Thresholds:
    """Relative change that counts for a metric with one value a run (no seeds to measure the noise by):
    a default and per-metric glob overrides."""

    default: float = 0.25
    per_metric: list[tuple[str, float]] = field(default_factory=list)

    def of(self, metric: str) -> float:
        for pattern, value in reversed(self.per_metric):  # the last matching override wins
            if fnmatch.fnmatchcase(metric, pattern):
                return value
        return self.default


def parse_thresholds(values: list[str] | None) -> Thresholds:
    """Read ``0.1`` (the default) and ``GLOB=0.5`` (for matching metrics) options."""
    out = Thresholds()
    for raw in values or []:
        pattern, _, number = raw.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            raise HistoryError(
                f"--threshold {raw!r}: expected a number like 0.2 (20% off the median) "
                "or METRIC_GLOB=NUMBER like 'train*/loss=0.5'"
            ) from None
        if value < 0 or math.isnan(value):
            raise HistoryError(f"--threshold {raw!r}: the relative change must be >= 0")
        if pattern:
            out.per_metric.append((pattern, value))
        else:
            out.default = value
    return out


@dataclass
class Flag:
    """One finding about the newest run: a metric or claim that moved, or its status."""

    metric: str
    kind: str  # one of KINDS
    newest: float | None
    baseline: float | None
    message: str
    direction: str | None = None  # "better", "worse" or None (unknown, or not a metric)

    @property
    def is_regression(self) -> bool:
        return self.kind in REGRESSIONS

    def as_dict(self) -> dict:
        """JSON-safe fields for a notification."""
        number = lambda v: None if v is None or not math.isfinite(v) else float(v)  # noqa: E731
        return {
            "metric": self.metric,
            "kind": self.kind,
            "direction": self.direction,
            "newest": number(self.newest),
            "baseline": number(self.baseline),
            "message": self.message,
        }
