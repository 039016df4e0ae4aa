"""Malformed expect:/architectures: entries are authoring errors with a clear, specific message."""

import pytest

from components.report.rows import validate_architectures
from components.report.vocabulary import ScorecardError, validate_expectations

OK = {"id": 1, "claim": "c", "check": "below", "value": "a.b", "than": 1}


def test_inline_check_and_checks_list_normalise_to_a_list():
    [inline, listed] = validate_expectations(
        [OK, {"id": "2b", "claim": "c", "checks": [{"check": "beats", "a": "x.y", "b": "x.z"}]}]
    )
    assert inline["id"] == "1" and inline["checks"][0]["check"] == "below"
    assert listed["checks"][0]["better"] == "higher" and listed["checks"][0]["margin"] == 0.0


@pytest.mark.parametrize(
    "entry, message",
    [
        ({**OK, "check": "beat"}, r"expect\[0\] \(claim 1\): unknown check 'beat' \(did you mean 'beats'\?\)"),
        ({**OK, "thann": 2}, r"unknown key 'thann' \(did you mean 'than'\?\)"),
        ({"id": 1, "claim": "c", "check": "below", "value": "a.b"}, r"check 'below' needs 'than'"),
        ({"claim": "c", "check": "below"}, r"missing 'id'"),
        ({"id": 1, "check": "below", "value": "a", "than": 1}, r"missing 'claim:'"),
        ({"id": "a b", "claim": "c", "check": "finite", "value": "a.b"}, r"id may use letters"),
        ({"id": 1, "claim": "c"}, r"no check: add 'check: <kind>'"),
        ({**OK, "device": "tpu"}, r"device 'tpu' is not one of"),
        ({**OK, "min_seeds": 0}, r"min_seeds must be a positive integer"),
        ({**OK, "checks": [{"check": "finite", "value": "a.b"}]}, r"not both"),
        ({"id": 1, "claim": "c", "checks": []}, r"non-empty list"),
        (
            {"id": 1, "claim": "c", "checks": [{"check": "close", "a": "x.y", "b": "x.z", "rel": -1}]},
            r"checks\[0\]: 'rel' must be a non-negative number",
        ),
        ({"id": 1, "claim": "c", "check": "between", "value": "a.b"}, r"'between' needs 'low', 'high' or both"),
        ({"id": 1, "claim": "c", "check": "between", "value": "a.b", "low": 2, "high": 1}, r"low 2 is above high 1"),
        (
            {"id": 1, "claim": "c", "check": "beats", "a": "x.a", "b": "x.b", "better": "more"},
            r"'better' is 'higher' or 'lower'",
        ),
        ({"id": 1, "claim": "c", "check": "increasing", "values": ["a.b"]}, r"at least 2 values"),
        ({"id": 1, "claim": "c", "check": "increasing", "values": ["a.b", "a.c"], "minus": ["a.d"]}, r"pair up"),
        ({"id": 1, "claim": "c", "check": "exponent_between", "low": 1}, r"either 'value'.*or 'x' and 'y'"),
        (
            {"id": 1, "claim": "c", "check": "exponent_between", "x": [1, 2], "y": ["a.b"], "low": 1},
            r"one measurement per entry of 'x'",
        ),
        (
            {"id": 1, "claim": "c", "check": "exponent_between", "x": [0, 2], "y": ["a.b", "a.c"], "low": 1},
            r"'x' must be a list of at least 2 positive numbers",
        ),
        ({"id": 1, "claim": "c", "check": "below", "value": ["a"], "than": 1}, r"'value' must be a reference"),
        (
            {"id": 1, "claim": "c", "check": "below", "value": "lag[arch=rnn.acc", "than": 1},
            r"'value' must be a reference like 'step.key'",
        ),
        ({"id": 1, "claim": "c", "check": "below", "value": "acc", "than": 1}, r"'value' must be a reference"),
        ({**OK, "plots": "curve"}, r"plots must be a list of plot names"),
        ("below", r"an expectation is a mapping"),
    ],
)
def test_bad_entries_name_the_entry_and_the_fix(entry, message):
    with pytest.raises(ScorecardError, match=message):
        validate_expectations([entry])


def test_yaml_exponent_strings_read_as_numbers_and_settings_mappings_as_text():
    # YAML 1.1 (yaml.safe_load) reads 1e-4 as the string "1e-4".
    [c] = validate_expectations(
        [
            {
                "id": 13,
                "claim": "c",
                "check": "below",
                "value": "perm.diff",
                "than": "1e-4",
                "settings": {"dtype": "float32", "T": 16},
            }
        ]
    )
    assert c["checks"][0]["than"] == 1e-4 and c["settings"] == "dtype=float32, T=16"
    [c] = validate_expectations(
        [{"id": 1, "claim": "c", "check": "close", "a": "x.a", "b": "x.b", "tolerance": "1e-3"}]
    )
    assert c["checks"][0]["tolerance"] == 1e-3


def test_duplicate_ids_and_a_non_list_are_errors():
    with pytest.raises(ScorecardError, match=r"expect\[1\]: claim id '1' already used by expect\[0\]"):
        validate_expectations([OK, OK])
    with pytest.raises(ScorecardError, match="must be a list"):
        validate_expectations({"1": OK})


def test_architecture_cells_are_references_or_checks():
    cells = validate_architectures(
        {
            "lstm": {
                "B2": "lag[arch=lstm].acc",
                "B4": {"value": "t.steps", "label": "steps"},
                "B3": {"check": "at_least", "value": "b.x", "than": 0.9},
            }
        }
    )
    assert cells["lstm"]["B2"] == {"value": "lag[arch=lstm].acc", "label": None, "check": None}
    assert cells["lstm"]["B3"]["check"]["check"] == "at_least"
    beats = validate_architectures({"gru": {"B2": {"check": "beats", "a": "x.y", "b": "x.z", "label": "vs rnn"}}})
    assert beats["gru"]["B2"]["value"] == "x.y" and beats["gru"]["B2"]["label"] == "vs rnn"


@pytest.mark.parametrize(
    "arch, message",
    [
        ({"lstm": {"B5": "a.b"}}, r"architectures.lstm: unknown column 'B5'.*columns are B1, B2, B3, B4"),
        ({"lstm": "a.b"}, r"architectures.lstm: map B1-B4"),
        ({"lstm": {"B1": {"vlue": "a.b"}}}, r"unknown key 'vlue' \(did you mean 'value'\?\)"),
        ({"lstm": {"B1": 3}}, r"a cell is a reference"),
    ],
)
def test_bad_architecture_cells(arch, message):
    with pytest.raises(ScorecardError, match=message):
        validate_architectures(arch)


def test_an_error_carries_the_path_to_the_key_it_names_not_one_parsed_from_its_words():
    from components.report.vocabulary import ScorecardError, validate_expectations

    entry = {"id": 1, "claim": "c", "checks": [{"check": "finite", "value": "a.b"}, {"check": "beats", "a": "x.a"}]}
    with pytest.raises(ScorecardError) as missing:  # a missing key: the check entry itself
        validate_expectations([entry])
    assert missing.value.loc == ("expect", 0, "checks", 1)
    assert str(missing.value).startswith("expect[0] (claim 1) checks[1]: check 'beats' needs 'b'")
    entry["checks"][1] |= {"b": "x.b", "better": "up"}  # a wrong value: the key that holds it
    with pytest.raises(ScorecardError) as wrong:
        validate_expectations([entry])
    assert wrong.value.loc == ("expect", 0, "checks", 1, "better")
    # words in a message that look like a key ("missing", "low") are never taken for one
    with pytest.raises(ScorecardError) as low:
        validate_expectations([{"id": 1, "claim": "c", "check": "between", "value": "a.b", "low": 2, "high": 1}])
    assert low.value.loc == ("expect", 0, "low") and "low 2 is above high 1" in str(low.value)
