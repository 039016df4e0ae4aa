"""Property-based fuzzing of check in process, fast enough for the fast loop: a shipped pipeline with
random edits (those of ``benchmarks/fuzz_check.py``), or unchanged with random ``--set`` texts, is
accepted or refused with located errors in the user's words, never another exception, never a hang.

The cases are derandomized (the same every run); ``benchmarks/fuzz_check.py`` draws thousands.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.language.errors import PipelineInvalid
from flows.plan.build import build
from tests.support.benchmarks import load

FUZZ = load("fuzz_check")
REPO = Path(__file__).resolve().parents[2]
SHIPPED = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "pipelines").glob("*.yaml"))}
SMALL = sorted(SHIPPED, key=lambda name: len(SHIPPED[name]))[:8]  # the large ones cost most and add little
LIMIT_S = 20  # a check past this hangs: the largest shipped pipeline checks in under a second
FAST = settings(
    max_examples=20,
    deadline=None,  # the machine is shared: LIMIT_S bounds a case instead
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Hung(Exception):
    """A check ran past ``LIMIT_S``."""


@contextmanager
def limited(seconds: int):
    def stop(signum, frame):
        raise Hung(f"check ran past {seconds} s")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def checked(tmp: Path, data: bytes, sets: list[str]) -> list[str]:
    """Check ``data`` with ``sets``: [] when accepted, else the errors, each asserted located and in
    the user's words."""
    path = tmp / "pipeline.yaml"
    path.write_bytes(data)
    try:
        with limited(LIMIT_S):
            build(path, sets=sets)
    except PipelineInvalid as e:
        for err in e.errors:
            assert err.file in (str(path), "--set"), str(err)
            assert err.line >= 1 and err.col >= 1, str(err)
            assert not FUZZ.INTERNAL.search(err.message), str(err)
        return [str(err) for err in e.errors]
    return []


@FAST
@given(
    name=st.sampled_from(SMALL),
    edits=st.lists(st.sampled_from(FUZZ.MUTATIONS), min_size=1, max_size=3),
    rng=st.randoms(use_true_random=False),
)
def test_an_edited_shipped_pipeline_is_accepted_or_refused_with_located_errors(tmp_path_factory, name, edits, rng):
    text: str | bytes = SHIPPED[name]
    for edit in edits:
        text = edit(text if isinstance(text, str) else text.decode("utf-8", "replace"), rng)
    checked(tmp_path_factory.mktemp("f"), text if isinstance(text, bytes) else text.encode(), [])


KEYS = st.sampled_from(FUZZ.SET_KEYS) | st.text(alphabet="abcdefghijklmnopqrstuvwxyz._=0123456789", max_size=12)
VALUES = st.sampled_from(FUZZ.VALUES) | st.text(max_size=12)
SETS = st.lists(
    st.builds(lambda k, eq, v: f"{k}{eq}{v}", KEYS, st.sampled_from(["=", "==", "", " = "]), VALUES),
    min_size=1,
    max_size=3,
)


@FAST
@given(name=st.sampled_from(SMALL), sets=SETS)
def test_random_set_texts_are_accepted_or_refused_with_located_errors(tmp_path_factory, name, sets):
    checked(tmp_path_factory.mktemp("s"), SHIPPED[name].encode(), sets)


def test_the_fuzzer_refuses_what_it_should(tmp_path):
    """The property holds for the right reason: a bad --set and a bound out of range are refused."""
    text = SHIPPED["b2_gradients.yaml"].encode()
    assert checked(tmp_path, text, []) == []
    assert checked(tmp_path, text, ["seeds=[[["])[0].startswith("--set:1:")
    assert any("steps must be at least 0; got -1" in e for e in checked(tmp_path, text, ["rnn.steps=-1"]))
