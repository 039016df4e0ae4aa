"""A report step's ``expect:`` entries hold values of any YAML type where a check name, a reference,
a number or text belongs: `bottlenecks check` refuses each as one `FILE:LINE:COL: message` line,
exit status 2, never a traceback (``check: {equals: 1}`` used to end in ``unhashable type: 'dict'``)."""

import re
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from components.report import vocabulary
from components.report.rows import validate_architectures
from components.report.vocabulary import EVERY_CHECK_KEY, ScorecardError, validate_expectations
from flows.cli import app
from tests.conftest import REPO

KINDS = (
    "below, above, at_most, at_least, between, equals, close, beats, flat, cliff, increasing, decreasing, "
    "exponent_between, finite"
)
HEAD = "step 'card': parameter 'expect' of report.scorecard: "
SHIPPED_HEAD = HEAD.replace("step 'card'", "step 'scorecard'")


def card(entry: str) -> str:
    """A pipeline whose one step is a scorecard with one ``expect:`` entry (its lines indented 10)."""
    return (
        "name: t\nsteps:\n  card:\n    uses: report.scorecard\n    with:\n      measurements: {}\n"
        "      expect:\n        - " + textwrap.indent(textwrap.dedent(entry), " " * 10).lstrip()
    )


@pytest.fixture
def cli():
    return CliRunner()


def check(cli, tmp_path, text: str):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return path, result


def test_a_mapping_as_check_name_is_one_located_error(cli, tmp_path, home):
    path, result = check(
        cli,
        tmp_path,
        card("""\
        id: 1
        claim: c
        check: {below: 1}
        value: a.b
        than: 1
        """),
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [  # at the value of check:, line 10
        f"{path}:10:18: {HEAD}expect[0] (claim 1): 'check:' names a kind of check (one of {KINDS}), got a mapping "
        "{below: 1}",
        "1 of 1 file(s) invalid",
    ]


def test_the_shipped_scorecard_with_a_mapping_as_check_name(cli, tmp_path, home):
    """The reported case: the first check of four_bottlenecks.yaml's scorecard given a mapping."""
    text = (REPO / "pipelines" / "four_bottlenecks.yaml").read_text()
    first = "{check: equals, value: params.params_spread, to: 0}"
    assert first in text
    path, result = check(cli, tmp_path, text.replace(first, "{check: {equals: 1}, value: params.params_spread, to: 0}"))
    assert result.exit_code == 2
    lines = text.replace(first, "{check: {equals: 1}, value: params.params_spread, to: 0}").splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "{check: {equals: 1}" in t)  # the check itself
    column = lines[line - 1].index("{equals: 1}") + 1
    [error, summary] = result.stderr.splitlines()
    assert error == (
        f"{path}:{line}:{column}: {SHIPPED_HEAD}expect[0] (claim 1) checks[0]: 'check:' names a kind of "
        f"check (one of {KINDS}), got a mapping {{equals: 1}}"
    )
    assert summary == "1 of 1 file(s) invalid"


# every field the vocabulary looks up, given a mapping and a list: (entry, what the message says)
FIELDS = {
    "check as a list": (
        "id: 1\nclaim: c\ncheck: [below]\nvalue: a.b\nthan: 1\n",
        f"expect[0] (claim 1): 'check:' names a kind of check (one of {KINDS}), got a list [below]",
    ),
    "check as a number": (
        "id: 1\nclaim: c\ncheck: 3\nvalue: a.b\nthan: 1\n",
        f"expect[0] (claim 1): 'check:' names a kind of check (one of {KINDS}), got an integer 3",
    ),
    "checks entry's check as a mapping": (
        "id: 1\nclaim: c\nchecks:\n  - {check: {a: 1}, value: a.b}\n",
        f"expect[0] (claim 1) checks[0]: 'check:' names a kind of check (one of {KINDS}), got a mapping {{a: 1}}",
    ),
    "id as a mapping": (
        "id: {a: 1}\nclaim: c\ncheck: finite\nvalue: a.b\n",
        "expect[0]: id may use letters, digits, '_', '.', '-' only (it names a metric), got a mapping {a: 1}",
    ),
    "id over two lines": (
        'id: "a\\nb"\nclaim: c\ncheck: finite\nvalue: a.b\n',
        "expect[0]: id may use letters, digits, '_', '.', '-' only (it names a metric), got 'a\\nb'",
    ),
    "claim as a list": (
        "id: 1\nclaim: [c]\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): 'claim' must be the sentence the checks test, got a list [c]",
    ),
    "device as a mapping": (
        "id: 1\nclaim: c\ndevice: {gpu: 1}\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): device {gpu: 1} is not one of cpu, gpu, cuda, mps",
    ),
    "device as a list": (
        "id: 1\nclaim: c\ndevice: [gpu]\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): device [gpu] is not one of cpu, gpu, cuda, mps",
    ),
    "min_seeds as a mapping": (
        "id: 1\nclaim: c\nmin_seeds: {a: 1}\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): min_seeds must be a positive integer, got {a: 1}",
    ),
    "plots as a mapping": (
        "id: 1\nclaim: c\nplots: {a: 1}\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): plots must be a list of plot names, got {a: 1}",
    ),
    "over as a mapping": (
        "id: 1\nclaim: c\nover: {a: 1}\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): 'over' must be text, got a mapping {a: 1}",
    ),
    "a check's over as a list": (
        "id: 1\nclaim: c\nchecks:\n  - {check: finite, value: a.b, over: [seed]}\n",
        "expect[0] (claim 1) checks[0]: 'over' must be text, got a list [seed]",
    ),
    "bottleneck as a list": (
        "id: 1\nclaim: c\nbottleneck: [B1]\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): 'bottleneck' must be text, got a list [B1]",
    ),
    "expected as a mapping": (
        "id: 1\nclaim: c\nexpected: {a: 1}\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): 'expected' must be text, got a mapping {a: 1}",
    ),
    "note as a list": (
        "id: 1\nclaim: c\nnote: [x]\ncheck: finite\nvalue: a.b\n",
        "expect[0] (claim 1): 'note' must be text, got a list [x]",
    ),
    "value as a mapping": (
        "id: 1\nclaim: c\ncheck: finite\nvalue: {a: b}\n",
        "expect[0] (claim 1): 'value' must be a reference like 'step.key' or 'step[axis=value].key', "
        "or a number; got {a: b}",
    ),
    "values holding a mapping": (
        "id: 1\nclaim: c\ncheck: increasing\nvalues: [a.b, {a: b}]\n",
        "expect[0] (claim 1): 'values' must be a non-empty list of references ('step.key', "
        "'step[axis=value].key') or numbers",
    ),
    "tolerance as a list": (
        "id: 1\nclaim: c\ncheck: close\na: x.a\nb: x.b\ntolerance: [1]\n",
        "expect[0] (claim 1): 'tolerance' must be a non-negative number, got [1]",
    ),
    "better as a mapping": (
        "id: 1\nclaim: c\ncheck: beats\na: x.a\nb: x.b\nbetter: {a: 1}\n",
        "expect[0] (claim 1): 'better' is 'higher' or 'lower', got {a: 1}",
    ),
    "x as a mapping": (
        "id: 1\nclaim: c\ncheck: exponent_between\nx: {a: 1}\ny: [a.b, a.c]\nlow: 1\n",
        "expect[0] (claim 1): 'x' must be a list of at least 2 positive numbers (e.g. T)",
    ),
    "low as a mapping": (
        "id: 1\nclaim: c\ncheck: between\nvalue: a.b\nlow: {a: 1}\n",
        "expect[0] (claim 1): 'low' must be a number, got {a: 1}",
    ),
    "a long value is cut": (
        "id: 1\nclaim: c\ncheck: finite\nvalue: {" + ", ".join(f"k{i}: {i}" for i in range(200)) + "}\n",
        "expect[0] (claim 1): 'value' must be a reference like 'step.key' or "
        "'step[axis=value].key', or a number; got {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7, ...",
    ),
}


@pytest.mark.parametrize("case", sorted(FIELDS))
def test_any_value_in_any_field_is_one_located_error(case, cli, tmp_path, home):
    """Located at the field it names (the line that writes it), not at the list that holds the entry."""
    entry, message = FIELDS[case]
    path, result = check(cli, tmp_path, card(entry))
    assert result.exit_code == 2, result.output
    [error, summary] = result.stderr.splitlines()
    assert re.sub(r":\d+:\d+: ", ": ", error, count=1).startswith(f"{path}: {HEAD}{message}"), error
    line = int(error[len(str(path)) + 1 :].split(":")[0])
    field = re.match(r"'?([a-z_]+)", message.split(": ", 1)[1]).group(1)
    written = [i for i, text in enumerate(card(entry).splitlines(), 1) if re.search(rf"\b{field}:", text)]
    assert line == (written[0] if written else 8), (error, written)  # else the entry itself, at line 8
    assert summary == "1 of 1 file(s) invalid"


def test_an_architecture_cell_check_given_a_mapping(cli, tmp_path, home):
    text = (
        card("id: 1\nclaim: c\ncheck: finite\nvalue: a.b\n") + "      architectures:\n"
        "        rnn: {B1: {check: {finite: 1}, value: a.b}}\n"
    )
    path, result = check(cli, tmp_path, text)
    assert result.exit_code == 2
    [error, _] = result.stderr.splitlines()
    assert re.match(
        rf"^{re.escape(str(path))}:13:27: step 'card': parameter 'architectures' of report.scorecard: "
        r"architectures.rnn.B1: 'check:' names a kind of check",
        error,
    ), error


# -- the vocabulary alone: any value anywhere is accepted or a ScorecardError -----------------------
ANY = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=8),
        st.sampled_from(
            [
                "a.b",
                "x[arch=rnn].y",
                "below",
                "beats",
                "between",
                "increasing",
                "exponent_between",
                "higher",
                "gpu",
                "1e-4",
                "a\nb",
            ]
        ),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
CHECK_KEYS = list(EVERY_CHECK_KEY)
# what an entry may carry besides its id and claim (its checks are drawn apart)
CLAIM_KEYS = ["id", "claim"] + sorted(set(vocabulary.CLAIM_KEYS) - {"id", "claim", "checks"})


def entries():
    check = st.dictionaries(st.sampled_from(CHECK_KEYS), ANY, max_size=6)
    claim = st.fixed_dictionaries(
        {"id": st.one_of(st.just(1), ANY), "claim": st.one_of(st.just("c"), ANY)},
        optional={
            "checks": st.one_of(st.lists(check, max_size=2), ANY),
            **{k: ANY for k in CLAIM_KEYS[2:] + CHECK_KEYS},
        },
    )
    return st.lists(claim, min_size=1, max_size=2)


@settings(
    max_examples=150, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@pytest.mark.slow
@given(expect=entries())
def test_the_vocabulary_raises_only_scorecard_errors(expect):
    try:
        validate_expectations(expect)
    except ScorecardError as e:
        assert "\n" not in str(e), str(e)  # one line: it becomes one FILE:LINE:COL: line


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(
    architectures=st.dictionaries(
        st.sampled_from(["rnn", "{arch}"]),
        st.one_of(
            st.dictionaries(
                st.sampled_from(["B1", "B2", "B5"]),
                st.one_of(
                    ANY, st.dictionaries(st.sampled_from(["check", "value", "label", "min_seeds", "a", "than"]), ANY)
                ),
            ),
            ANY,
        ),
    )
)
def test_architecture_cells_raise_only_scorecard_errors(architectures):
    try:
        validate_architectures(architectures)
    except ScorecardError:
        pass
