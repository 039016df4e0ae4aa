"""A missing or wrong parameter is named with its type as a person writes it: a validated type
(a model name is ``Annotated[str, AfterValidator(...)]``) reads as its plain type, with no
validator's repr or memory address in the message."""

import typing

import pytest

from flows.language.errors import PipelineInvalid
from flows.plan._params import type_name
from flows.plan.build import build


def test_a_missing_model_map_is_named_as_a_dict_of_strings(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: t\nsteps:\n  tm: {uses: probe.timing, with: {}}\n")
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    message = str(e.value)
    assert "missing required parameter 'models' (dict[str, str]) for probe.timing" in message
    assert "Annotated" not in message and "0x" not in message


def test_plain_names_of_validated_and_ordinary_types():
    checked = typing.Annotated[str, "a validator"]
    assert type_name(checked) == "str"
    assert type_name(list[checked]) == "list[str]"
    assert type_name(dict[str, checked] | list[dict[str, checked]]) == "dict[str, str] | list[dict[str, str]]"
    assert type_name(typing.Optional[checked]) == "str | null"
    assert type_name(list[int]) == "list[int]"  # unvalidated types print as before
    assert type_name(int) == "int"
