"""Which way is better for a metric: a documented rule over its name, and the user's ``--higher`` /
``--lower`` globs before it.

The rule reads the parts of a metric's name within its run (``test/acc`` of ``train[arch=lstm]/test/acc``;
``probe/timing/time_s/lstm``), lower case, from the last part back; the first part a pattern matches decides:

- lower is better: ``*loss*``, ``*time*``, ``*seconds*``, ``*memory*``, ``*error*``, ``*perplexity*``;
- higher is better: ``*acc*``, ``*bleu*``, ``*recall*``, and ``claims/holds`` (the count of holding claims);
- not judged either way: interval and test figures (``*_ci*``, ``*_sd*``, ``p``, ``lo``, ``hi``);
- anything else is unknown: a change beyond the noise is shown as a change, never as better or worse.

A user's glob (matched against the whole metric name, the last one given wins) overrides the rule.
Claims (``claim/<id>``) are judged by their verdict order instead (holds > inconclusive > fails).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

HIGHER, LOWER = "higher", "lower"
LOWER_RULE = ("*loss*", "*time*", "*seconds*", "*memory*", "*error*", "*perplexity*")
HIGHER_RULE = ("*acc*", "*bleu*", "*recall*")
NEITHER_RULE = ("*_ci*", "*_sd*", "p", "lo", "hi")


@dataclass
class Directions:
    """The user's globs (``(glob, HIGHER or LOWER)`` in the order given) over the documented rule."""

    given: list[tuple[str, str]] = field(default_factory=list)

    def of(self, metric: str, key: str | None = None) -> str | None:
        """``HIGHER``, ``LOWER``, or None when better is not known for ``metric`` (a column of the table;
        ``key``: its name within its run, which the rule reads; the column's own name when not given)."""
        for pattern, way in reversed(self.given):
            if fnmatch.fnmatchcase(metric, pattern):
                return way
        return rule(key or metric)


def rule(key: str) -> str | None:
    """The documented rule alone (see the module's docstring)."""
    name = key.lower()
    if name == "claims/holds" or name.endswith("/claims/holds"):
        return HIGHER
    for part in reversed(name.split("/")):
        for patterns, way in ((NEITHER_RULE, None), (LOWER_RULE, LOWER), (HIGHER_RULE, HIGHER)):
            if any(fnmatch.fnmatchcase(part, p) for p in patterns):
                return way
    return None


def directions(higher: list[str] | None = None, lower: list[str] | None = None) -> Directions:
    """The user's ``--higher GLOB`` and ``--lower GLOB`` options (a lower glob wins a tie with a higher one)."""
    return Directions([(g, HIGHER) for g in higher or []] + [(g, LOWER) for g in lower or []])


def better(way: str | None, moved: float) -> str | None:
    """``better`` or ``worse`` for a change of sign ``moved`` on a metric whose better is ``way``."""
    if way is None or moved == 0:
        return None
    up_is_good = way == HIGHER
    return "better" if (moved > 0) == up_is_good else "worse"
