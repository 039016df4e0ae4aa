"""Property-based fuzzing of `bottlenecks check`: whatever the file says, the command accepts it
(exit 0) or refuses it with `FILE:LINE:COL: message` lines and exit status 2 -- no traceback, no
hang, no line of an error that is not located.

Two sources of cases:

* ``mutated``: a shipped pipeline with a few edits a person (or a bad merge) makes: lines deleted,
  duplicated, swapped or re-indented, the file cut short, a token replaced by a junk value, a key
  misspelt, random characters inserted;
* ``generated``: a pipeline built from the shape of the JSON Schema (``pipeline_schema()``): its
  top-level keys, step keys, each component's parameters, settings names, with values of random
  types (and the references ``${...}`` the language knows).

The default run tries a fixed, small number of cases, derandomized, so it is reproducible and
cannot flake. A long run for nightly use::

    BOTTLENECKS_FUZZ_EXAMPLES=5000 .venv/bin/pytest -q -p no:cacheprovider tests/language/test_fuzz.py

splits the examples between the two sources, draws them at random (``--hypothesis-seed=N``
repeats a run) and, with ``BOTTLENECKS_FUZZ_FAILURES=DIR``, writes every failing case there as a
YAML file. A case that found a bug belongs in ``fuzz_corpus/`` once fixed: every file there is
replayed on every run (a ``# expect: TEXT`` comment line pins text the output must contain).
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from components.registry import registry
from components.report.vocabulary import CLAIM_KEYS, EVERY_CHECK_KEY, KINDS
from flows.cli import app
from flows.language.schema import pipeline_schema

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

REPO = Path(__file__).resolve().parents[2]
SHIPPED = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "pipelines").glob("*.yaml"))}
CORPUS = Path(__file__).parent / "fuzz_corpus"
C = "tests.support.engine_components"

LONG = int(os.environ.get("BOTTLENECKS_FUZZ_EXAMPLES", "0") or 0)
# the default run: 100 cases; a long one splits BOTTLENECKS_FUZZ_EXAMPLES 3:2 between the two sources
MUTATED_EXAMPLES, GENERATED_EXAMPLES = (max(1, LONG - LONG * 2 // 5), max(1, LONG * 2 // 5)) if LONG else (60, 40)
FAILURES = os.environ.get("BOTTLENECKS_FUZZ_FAILURES")
HANG_SECONDS = 30  # a check that takes longer hangs: the shipped pipelines check in well under a second
FUZZ = settings(
    max_examples=MUTATED_EXAMPLES,
    deadline=None,  # the machine is shared: time is bounded by HANG_SECONDS instead
    derandomize=not LONG,  # the default run: the same cases every time
    database=None,  # no example database: the cases that failed are kept in fuzz_corpus/
    print_blob=bool(LONG),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)


# -- the check and what it must print --------------------------------------------------------------
class CheckHung(Exception):
    """`bottlenecks check` ran past ``HANG_SECONDS``."""


@contextmanager
def bounded(seconds: int):
    """Raise ``CheckHung`` inside the check if it runs longer than ``seconds`` (main thread only)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hung(signum, frame):
        raise CheckHung(f"check still running after {seconds}s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_text(runner: CliRunner, path: Path, text: str):
    """Write ``text`` to ``path``, run `bottlenecks check` on it; return (result, seconds)."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    started = time.perf_counter()
    with bounded(HANG_SECONDS):
        result = runner.invoke(app, ["check", str(path)])
    return result, time.perf_counter() - started


# what a message for a pipeline author never holds: pydantic's framing, an internal class, Python's
# null and booleans (YAML writes null, true, false), an object's address
LIBRARY_WORDS = re.compile(
    r"Value error,|Input should|validation error|\[type=|errors\.pydantic|Assertion failed,"
    r"|YList|YMap|YScalar|NoneType|<class|object at 0x"
    r"|\b(got|is|key|axis|name|param) (None|True|False)\b|\((None|True|False)\)"  # Python's null, booleans
)
QUOTED = re.compile(r"'[^']*'")  # text the file wrote, quoted in the message: None there is the user's word


def problems(result, path: Path) -> list[str]:
    """What is wrong with the way `check` answered (empty: accepted, or refused as it should be)."""
    wrong = []
    if isinstance(result.exception, CheckHung):
        return [str(result.exception)]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        wrong.append(f"crashed with {type(result.exception).__name__}: {result.exception}")
    if "Traceback" in result.output:
        wrong.append("a traceback in the output")
    if result.exit_code == 0:
        if not result.stdout.startswith(f"ok {path}: "):
            wrong.append(f"exit 0 without the ok line: {result.stdout!r}")
        if result.stderr.strip():
            wrong.append(f"exit 0 with errors: {result.stderr!r}")
    elif result.exit_code == 2:
        lines = result.stderr.splitlines()
        located = re.compile(rf"^{re.escape(str(path))}:\d+:\d+: ")
        if not lines or lines[-1] != "1 of 1 file(s) invalid":
            wrong.append(f"no summary line: {lines[-1:]!r}")
        unlocated = [line for line in lines[:-1] if not located.match(line)]
        if unlocated or len(lines) < 2:
            wrong.append(f"error lines not FILE:LINE:COL: {unlocated[:3] or lines!r}")
        foreign = [line for line in lines[:-1] if LIBRARY_WORDS.search(QUOTED.sub("''", line))]
        if foreign:
            wrong.append(f"a message in a library's words or a Python repr: {foreign[:3]!r}")
    else:
        wrong.append(f"exit status {result.exit_code}")
    return wrong


def keep_failure(text: str) -> None:
    """With BOTTLENECKS_FUZZ_FAILURES set, keep the failing case there (for the corpus)."""
    if FAILURES:
        folder = Path(FAILURES)
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        (folder / f"case-{digest}.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")


def assert_checked_cleanly(runner: CliRunner, path: Path, text: str) -> None:
    note(f"--- the file ---\n{text}\n--- end ---")
    result, seconds = check_text(runner, path, text)
    event(f"exit status {result.exit_code}")  # --hypothesis-show-statistics: how many were accepted
    wrong = problems(result, path)
    if not wrong and seconds >= HANG_SECONDS:  # the alarm may not interrupt a long call into C
        wrong.append(f"check took {seconds:.1f}s")
    if wrong:
        keep_failure(text)
    assert not wrong, "; ".join(wrong) + f"\nstdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    """The file every case is written to (one per module: Hypothesis reuses it across examples)."""
    return tmp_path_factory.mktemp("fuzz") / "p.yaml"


# -- (a) mutations of the shipped pipelines --------------------------------------------------------
JUNK = [
    "",
    "~",
    "null",
    "{}",
    "[]",
    "[[]]",
    "[{}]",
    "{a: {b: {c: [1, 2]}}}",
    "[1, [2, [3, [4]]]]",
    "yes",
    "no",
    "off",
    "-1",
    "0",
    "-0.0",
    "1e999",
    "-1e-999",
    ".nan",
    "-.inf",
    "0x7fffffffffffffffff",
    "0o777777777777777777777777",
    "99999999999999999999999",
    "1_000",
    "2024-13-45",
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "!!binary aGVsbG8=",
    "!!python/object/apply:os.system ['true']",
    "!custom x",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "&a [1]",
    "*a",
    "*nope",
    "{<<: *nope}",
    "<<: 1",
    "'${params.nope}'",
    "${params.nope}",
    "${matrix.nope}",
    '"${a.b.c}"',
    "${",
    "}",
    "${}",
    "'${{x}}'",
    "'[red]x[/red]'",
    "'[/]'",
    "':100:'",
    "':smile:'",
    '"\\u0000"',
    '"\\x07"',
    '"a\\nb"',
    '"\\t"',
    "'",
    '"',
    "|",
    ">",
    "|-\n  x",
    "- x",
    "? x",
    ": x",
    "#",
    "%YAML 1.1",
    "---",
    "...",
    "@x",
    "`x`",
    "x: y: z",
    "{check: {a: 1}}",
    "[check, {a: b}]",
    "{id: {a: 1}}",
    "é ü 漢字 🙂",
    "\u202e",
    "\ufeff",
    "a" * 300,
    "[" * 70,
    "{" * 70,
    "[" + "1, " * 2000 + "1]",
]
TOKEN = re.compile(r"[^\s:{}\[\],#'\"]+")
KEY = re.compile(r"^(\s*(?:-\s+)?)([A-Za-z_][\w.-]*)(\s*:)")
random_text = st.text(max_size=6)


def _index(draw, lines: list[str]) -> int:
    return draw(st.integers(0, max(len(lines) - 1, 0)))


def _delete(draw, lines):
    if lines:
        del lines[_index(draw, lines)]
    return lines


def _duplicate(draw, lines):
    if lines:
        i = _index(draw, lines)
        lines.insert(draw(st.integers(0, len(lines))), lines[i])
    return lines


def _swap(draw, lines):
    if len(lines) > 1:
        i, j = _index(draw, lines), _index(draw, lines)
        lines[i], lines[j] = lines[j], lines[i]
    return lines


def _reindent(draw, lines):
    if lines:
        i = _index(draw, lines)
        body = lines[i].lstrip(" ")
        indent = len(lines[i]) - len(body)
        lines[i] = " " * max(0, indent + draw(st.integers(-6, 6))) + body
    return lines


def _truncate(draw, lines):
    text = "".join(lines)
    return _lines(text[: draw(st.integers(0, len(text)))])


def _replace_token(draw, lines):
    if not lines:
        return lines
    i = _index(draw, lines)
    tokens = list(TOKEN.finditer(lines[i]))
    if tokens:
        m = draw(st.sampled_from(tokens))
        junk = draw(st.one_of(st.sampled_from(JUNK), random_text))
        lines[i] = lines[i][: m.start()] + junk + lines[i][m.end() :]
    return lines


def _misspell_key(draw, lines):
    keyed = [i for i, line in enumerate(lines) if KEY.match(line)]
    if not keyed:
        return lines
    i = draw(st.sampled_from(keyed))
    m = KEY.match(lines[i])
    key = m.group(2)
    at = draw(st.integers(0, len(key) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "case", "char"]))
    if how == "drop":
        key = key[:at] + key[at + 1 :]
    elif how == "double":
        key = key[:at] + key[at] + key[at:]
    elif how == "swap" and len(key) > 1:
        at = min(at, len(key) - 2)
        key = key[:at] + key[at + 1] + key[at] + key[at + 2 :]
    elif how == "case":
        key = key.swapcase()
    else:
        key = key[:at] + draw(st.characters()) + key[at + 1 :]
    lines[i] = m.group(1) + key + lines[i][m.end(2) :]
    return lines


def _insert_chars(draw, lines):
    text = "".join(lines)
    at = draw(st.integers(0, len(text)))
    return _lines(text[:at] + draw(st.text(min_size=1, max_size=4)) + text[at:])


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


MUTATIONS = {
    f.__name__.lstrip("_"): f
    for f in (_delete, _duplicate, _swap, _reindent, _truncate, _replace_token, _misspell_key, _insert_chars)
}


@st.composite
def mutated(draw) -> tuple[str, list[str], str]:
    name = draw(st.sampled_from(sorted(SHIPPED)))
    lines = _lines(SHIPPED[name])
    done = []
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(sorted(MUTATIONS)))
        lines = MUTATIONS[how](draw, lines)
        done.append(how)
    return name, done, "".join(lines)


@FUZZ
@given(case=mutated())
def test_a_mutated_shipped_pipeline_is_accepted_or_refused_with_located_errors(case, runner, target):
    name, done, text = case
    note(f"{name} after {', '.join(done)}")
    assert_checked_cleanly(runner, target, text)


# -- (b) pipelines generated from the JSON Schema's shape ------------------------------------------
SCHEMA = pipeline_schema()
TOP_KEYS = list(SCHEMA["properties"])
STEP_SCHEMA = SCHEMA["properties"]["steps"]["additionalProperties"]
STEP_KEYS = list(STEP_SCHEMA["properties"])
SETTINGS = SCHEMA["properties"]["settings"]["properties"]
PROFILE_KEYS = list(SCHEMA["properties"]["profiles"]["additionalProperties"]["properties"])
PROFILE_STEP_KEYS = list(
    SCHEMA["properties"]["profiles"]["additionalProperties"]["properties"]["steps"]["additionalProperties"][
        "properties"
    ]
)
SCHEDULE_KEYS = list(SCHEMA["properties"]["schedule"]["properties"])
PARAMS = {
    cond["if"]["properties"]["uses"]["const"]: list(cond["then"]["properties"]["with"]["properties"])
    for cond in STEP_SCHEMA["allOf"]
}
OUTPUTS = {name: list(comp.outputs) + ["run_id"] for name, comp in registry().items()}
COMPONENTS = sorted(PARAMS) + [f"{C}:numbers", f"{C}:total", "nope.nothing", "data.digitz"]
STEP_IDS = ["a", "b", "train", "data", "card", "bad id", "x-1"]
PARAM_NAMES = ["n", "steps", "seeds", "arch", "x"]
AXES = ["seed", "arch", "T", "lag"]
PROFILE_NAMES = ["quick", "full", "standard"]


def _refs() -> st.SearchStrategy[str]:
    outputs = sorted({o for outs in OUTPUTS.values() for o in outs})
    return st.one_of(
        st.builds("${{params.{}}}".format, st.sampled_from(PARAM_NAMES)),
        st.builds("${{matrix.{}}}".format, st.sampled_from(AXES)),
        st.builds("${{{}.{}}}".format, st.sampled_from(STEP_IDS), st.sampled_from(outputs)),
        st.sampled_from(
            [
                "${a}",
                "${a.b.c}",
                "${ params.n }",
                "x ${params.n} y",
                "${a.summary} and ${b.summary}",
                "source[arch=rnn].key",
                "bleu[*].bleu/x/longest",
                "a.b",
            ]
        ),
    )


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.integers(-3, 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    _refs(),
    st.sampled_from(
        [
            "[red]x[/red]",
            ":100:",
            "auto",
            "none",
            "cpu",
            "cuda",
            "gpu",
            "higher",
            "lower",
            "below",
            "equals",
            "beats",
            "0 2 * * *",
            "UTC",
            "tcp://h:8786",
            "1e-4",
            "\n",
            "a\nb",
            "\x00",
        ]
    ),
)
KEYS = st.one_of(
    st.text(max_size=8),
    st.sampled_from(PARAM_NAMES + AXES + STEP_KEYS + ["check", "id", "claim"]),
    st.integers(-2, 2),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


def _mapping(keys: list[str], value_for, junk_keys: bool = True) -> st.SearchStrategy[dict]:
    @st.composite
    def build(draw):
        chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
        if junk_keys and draw(st.integers(0, 9)) == 0:
            chosen.append(draw(KEYS))
        return {k: draw(value_for(k)) for k in chosen}

    return build()


def _setting(name) -> st.SearchStrategy:
    prop = SETTINGS.get(name, {})
    typed = {"integer": st.integers(-2, 64), "number": st.floats(-1, 1e6), "string": st.text(max_size=8)}
    options = [VALUES]
    if "enum" in prop:
        options.append(st.sampled_from(prop["enum"]))
    if prop.get("type") in typed:
        options.append(typed[prop["type"]])
    if name == "devices":
        options.append(st.lists(st.integers(-1, 3), max_size=3))
    if name == "cluster":
        options.append(st.fixed_dictionaries({"address": st.sampled_from(["tcp://h:8786", "h", ""])}))
    return st.one_of(options)


SETTINGS_VALUES = st.one_of(_mapping(list(SETTINGS), _setting), VALUES)


def _with(uses) -> st.SearchStrategy:
    names = (PARAMS.get(uses) if isinstance(uses, str) else None) or ["n", "offset", "values"]
    return st.one_of(_mapping(names, lambda _: st.one_of(VALUES, _refs(), _expect())), VALUES)


def _expect() -> st.SearchStrategy:
    """``expect:`` entries of report.scorecard, the deepest validation of a step parameter."""
    check_keys = list(EVERY_CHECK_KEY)
    claim_keys = sorted(CLAIM_KEYS)
    check = _mapping(
        check_keys,
        lambda k: st.one_of(VALUES, st.sampled_from(sorted(KINDS))) if k == "check" else st.one_of(VALUES, _refs()),
    )
    claim = _mapping(
        claim_keys + check_keys,
        lambda k: (
            st.lists(check, max_size=3)
            if k == "checks"
            else st.one_of(VALUES, check)
            if k == "check"
            else st.one_of(VALUES, _refs())
        ),
    )
    return st.lists(claim, max_size=3)


@st.composite
def _step(draw):
    uses = draw(st.one_of(st.sampled_from(COMPONENTS), VALUES))
    chosen = draw(st.lists(st.sampled_from(STEP_KEYS), unique=True))
    step = {"uses": uses} if draw(st.integers(0, 9)) else {}
    for key in chosen:
        if key == "uses":
            continue
        if key == "with":
            step[key] = draw(_with(uses))
        elif key == "matrix":
            step[key] = draw(
                st.one_of(
                    st.dictionaries(
                        st.sampled_from(AXES), st.one_of(st.lists(SCALARS, max_size=4), _refs(), VALUES), max_size=3
                    ),
                    VALUES,
                )
            )
        elif key == "needs":
            step[key] = draw(st.one_of(st.sampled_from(STEP_IDS), st.lists(st.sampled_from(STEP_IDS)), VALUES))
        elif key == "resources":
            step[key] = draw(
                st.one_of(st.fixed_dictionaries({"gpu": st.one_of(st.sampled_from([0, 1, 2]), VALUES)}), VALUES)
            )
        else:
            step[key] = draw(VALUES)
    return step


def _profile_step() -> st.SearchStrategy:
    return _mapping(
        PROFILE_STEP_KEYS,
        lambda k: _with("train.model") if k == "with" else st.sampled_from(COMPONENTS) if k == "uses" else VALUES,
    )


def _profile() -> st.SearchStrategy:
    return st.one_of(
        _mapping(
            PROFILE_KEYS,
            lambda k: {
                "params": st.dictionaries(st.sampled_from(PARAM_NAMES), VALUES, max_size=3),
                "settings": SETTINGS_VALUES,
                "steps": st.dictionaries(st.sampled_from(STEP_IDS), _profile_step(), max_size=2),
            }.get(k, VALUES),
        ),
        VALUES,
    )


def _top(key) -> st.SearchStrategy:
    return {
        "name": st.one_of(st.text(max_size=12), VALUES),
        "params": st.one_of(st.dictionaries(st.sampled_from(PARAM_NAMES), VALUES, max_size=4), VALUES),
        "settings": SETTINGS_VALUES,
        "default_profile": st.one_of(st.sampled_from(PROFILE_NAMES), VALUES),
        "profiles": st.one_of(st.dictionaries(st.sampled_from(PROFILE_NAMES), _profile(), max_size=2), VALUES),
        "schedule": st.one_of(
            _mapping(
                SCHEDULE_KEYS,
                lambda k: st.one_of(st.sampled_from(["0 2 * * *", "bad cron", "UTC", "Mars/Base", "quick"]), VALUES),
            ),
            VALUES,
        ),
        "steps": st.one_of(st.dictionaries(st.one_of(st.sampled_from(STEP_IDS), KEYS), _step(), max_size=4), VALUES),
    }.get(key, VALUES)


@st.composite
def generated(draw) -> str:
    doc = draw(_mapping(TOP_KEYS, _top))
    if draw(st.integers(0, 3)):  # mostly a file with the two required keys, to get past the first check
        doc.setdefault("name", "fuzz")
        doc.setdefault("steps", {"a": {"uses": f"{C}:numbers"}})
    style = draw(st.sampled_from([None, False, True]))
    return yaml.safe_dump(
        doc,
        default_flow_style=style,
        allow_unicode=draw(st.booleans()),
        sort_keys=False,
        width=draw(st.sampled_from([80, 10_000])),
    )


@settings(FUZZ, max_examples=GENERATED_EXAMPLES)
@given(text=generated())
def test_a_pipeline_of_the_schemas_shape_is_accepted_or_refused_with_located_errors(text, runner, target):
    assert_checked_cleanly(runner, target, text)


# -- the corpus: every case that once failed -------------------------------------------------------
CORPUS_FILES = sorted(CORPUS.glob("*.yaml"))


@pytest.mark.parametrize("case", CORPUS_FILES, ids=[p.stem for p in CORPUS_FILES])
def test_a_corpus_case_is_checked_cleanly(case, runner, tmp_path):
    text = case.read_bytes().decode("utf-8", "surrogatepass")
    path = tmp_path / "p.yaml"
    result, seconds = check_text(runner, path, text)
    wrong = problems(result, path)
    assert not wrong, "; ".join(wrong) + f"\nstderr: {result.stderr[-2000:]}"
    for expected in re.findall(r"^# expect: (.*)$", text, flags=re.M):
        assert expected in result.output, f"{expected!r} not in {result.output!r}"
    assert seconds < HANG_SECONDS


def test_the_corpus_is_not_empty():
    assert len(CORPUS_FILES) >= 1, f"no regression cases in {CORPUS}"
