"""Reference docs describe; a log records. README, docs/*.md other than results.md and performance.md,
and the pipelines state what a thing does and how to run it: a measured time, a machine's load or
a run's wall clock there goes stale with the next change, so it lives, dated, in docs/results.md or
docs/performance.md. Read from the files; text inside backticks (a printed example) is left alone."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOGS = {"results.md", "performance.md"}
REFERENCE = sorted(
    [REPO / "README.md", *(p for p in (REPO / "docs").glob("*.md") if p.name not in LOGS)]
    + list((REPO / "pipelines").glob("*.yaml"))
)
MEASURED = [
    re.compile(r"\btook (about )?\d"),  # "the flow took 2 min 25 s"
    re.compile(r"\b\d+ ?min \d+ ?s\b"),  # "7 min 40 s"
    re.compile(r"\b\d+m\d+s\b"),  # "8m06s"
    re.compile(r"\bload (average )?\d"),  # "at load 14-16"
    re.compile(r"\b\d+(\.\d+)? ?s (wall|of wall|on 2|on one)\b"),  # "1.65 s on 2 cores"
]
CODE = re.compile(r"`[^`]*`")  # an inline code span, which may run over a line break


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: str(p.relative_to(REPO)))
def test_a_reference_doc_holds_no_measured_time(path):
    text = CODE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"))
    found = []
    for number, prose in enumerate(text.splitlines(), 1):
        found += [f"{path.name}:{number}: {m.group(0)!r}" for rx in MEASURED for m in rx.finditer(prose)]
    assert not found, "measured figures belong in docs/results.md or docs/performance.md: " + "; ".join(found)


def test_the_check_catches_a_measured_time():
    line = "the quick profile took 7 min 40 s on 2 cores at load 3"
    assert sum(bool(rx.search(line)) for rx in MEASURED) == 4  # took, min-s, s on 2, load
