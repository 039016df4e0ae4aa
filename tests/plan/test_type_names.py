"""A missing or wrong parameter is named with its type as a person writes it: a validated type
(a model name is ``Annotated[str, AfterValidator(...)]``) reads as its plain type, with no
validator's repr or memory address in the message."""

import typing
from pathlib import Path

import pytest
from pydantic import Field

from flows.language.errors import PipelineInvalid
from flows.plan._params import type_name
from flows.plan.build import build


def _refusal(tmp_path, step: str) -> str:
    """The message ``build`` refuses a one-step pipeline with."""
    path = tmp_path / "p.yaml"
    path.write_text(f"name: t\nsteps:\n  {step}\n")
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    return str(e.value)


def test_a_missing_model_map_is_named_as_a_dict_of_strings(tmp_path):
    message = _refusal(tmp_path, "tm: {uses: probe.timing, with: {}}")
    assert "missing required parameter 'models' (a mapping of strings to strings) for probe.timing" in message
    assert "Annotated" not in message and "0x" not in message


def test_types_are_named_in_a_pipeline_authors_words():
    """The issue's example: a WMT file map was named ``dict[str, list[list[str]]]``."""
    checked = typing.Annotated[str, "a validator"]
    assert type_name(dict[str, list[list[str]]]) == "a mapping of strings to lists of lists of strings"
    assert type_name(checked) == "a string"
    assert type_name(list[checked]) == "a list of strings"
    assert type_name(dict[str, checked] | list[dict[str, checked]]) == (
        "a mapping of strings to strings or a list of mappings of strings to strings"
    )
    assert type_name(typing.Optional[checked]) == "a string or null"
    assert type_name(list[typing.Annotated[int, Field(ge=1)]]) == "a list of integers >= 1"
    assert type_name(typing.Annotated[float, Field(gt=0, lt=1)]) == "a number in (0, 1)"
    assert type_name(typing.Literal["sum", "mean"]) == "one of 'sum', 'mean'"
    assert type_name(Path) == "a file path"
    assert type_name(bool) == "true or false"
    assert type_name(int) == "an integer"


def test_the_wmt_file_map_error_reads_in_yaml_words(tmp_path):
    message = _refusal(tmp_path, "d: {uses: data.wmt, with: {files: {test: null}}}")
    assert (
        "parameter 'files.test' of data.wmt expects a mapping of strings to lists of lists of strings,"
        " got nothing (null)"
    ) in message


def test_enums_abstract_collections_and_fixed_tuples_read_as_yaml_writes_them():
    import enum
    from collections.abc import Mapping, Sequence

    class Mode(str, enum.Enum):
        FAST = "fast"
        SLOW = "slow"

    assert type_name(Mode) == "one of 'fast', 'slow'"  # a YAML author writes the values, not a type
    assert type_name(list[Mode]) == "a list of values among 'fast', 'slow'"
    assert type_name(list[typing.Literal[1, 2]]) == "a list of values among 1, 2"
    assert type_name(Sequence[int]) == "a list of integers"
    assert type_name(Mapping[str, float]) == "a mapping of strings to numbers"
    assert type_name(tuple[int]) == "a list of 1 (an integer)"
    assert type_name(tuple[int, ...]) == "a list of integers"
