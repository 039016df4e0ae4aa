"""What a component codes against, as docs/contracts.md lists it: the context's methods (with their
parameters) and the parameter types, each table held equal to the code."""

import inspect
import json
import re
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from components import Context, component
from components.bounds import Size
from tests.support.doc_tables import table

METHODS = table("### The context (`ctx`)")
TYPES = table("### Parameter types")


def _signature(text: str) -> tuple[str, list[str]]:
    """``log_metric(key, value, step=None) -> None`` -> ("log_metric", ["key", "value", "step"])."""
    name, args = re.fullmatch(r"(\w+)\((.*?)\)(?: -> .*)?", text).groups()
    return name, [a.split("=")[0].strip() for a in args.split(",") if a.strip()]


def test_the_doc_lists_every_method_of_the_context():
    doc = {_signature(row["method"])[0] for row in METHODS}
    code = {name for name, member in inspect.getmembers(Context) if not name.startswith("_") and callable(member)}
    assert doc == code, f"only in the doc: {sorted(doc - code)}; only in Context: {sorted(code - doc)}"


@pytest.mark.parametrize("row", METHODS, ids=lambda row: _signature(row["method"])[0])
def test_the_doc_names_each_methods_parameters(row):
    name, args = _signature(row["method"])
    assert args == list(inspect.signature(getattr(Context, name)).parameters)[1:]  # after self


@pytest.mark.parametrize("row", TYPES, ids=lambda row: row["annotation"])
def test_each_parameter_type_is_read_as_check_and_run_read_it(row, tmp_path):
    """The annotation registers; the example passes ``bottlenecks check``'s strict JSON validation;
    the component receives it; a ``Path`` counts in the cache key."""
    from flows.plan._fingerprint import _holds_path

    annotation = eval(
        row["annotation"], {"Annotated": Annotated, "Literal": Literal, "Field": Field, "Path": Path, "Size": Size}
    )
    received = []

    def fn(ctx, *, value=None) -> dict:
        received.append(value)
        return {}

    fn.__annotations__ = {"value": annotation, "return": dict}
    comp = component(f"contracttest.type_{len(TYPES)}_{TYPES.index(row)}")(fn).component
    value = json.loads(row["example"])
    comp.params_model.model_validate_json(json.dumps({"value": value}), strict=True)  # as `check` does
    comp.params_model.model_json_schema()  # as `bottlenecks schema` does
    comp(Context(tmp_path), value=value)
    assert received == [Path(value) if annotation is Path else value]
    is_path = _holds_path(comp.params_model.model_fields["value"].annotation)
    assert is_path == ("pathlib.Path" in row["what the component receives"])


@pytest.mark.parametrize("row", TYPES, ids=lambda row: row["annotation"])
def test_check_names_each_type_as_the_doc_says(row):
    """An error names a type in a pipeline author's words (``a list of integers``), not Python's."""
    from components.bounds import in_words

    annotation = eval(
        row["annotation"], {"Annotated": Annotated, "Literal": Literal, "Field": Field, "Path": Path, "Size": Size}
    )
    assert in_words(annotation) == row["named in messages as"]


def test_the_doc_says_path_is_a_parameter_type():
    assert "Path" in {row["annotation"] for row in TYPES}
